#version 460
// Refit: the boxes of a built binary BVH made again over its triangles' new positions, the
// topology kept (the same triangles, moved). Two steps:
//   PARENTS  each internal node names itself as the parent of its leaf children and clears
//            its arrival count;
//   CLIMB    invocation k reads leaf k's triangle from the input again, copies it in leaf
//            order for traversal, writes its box into its parent's slot for it, and climbs:
//            at each node an atomic count lets the first child's invocation stop and the
//            second go on with the union of both boxes, written into the slot of the node's
//            parent. A node with one child (the tree of one triangle) is passed at once.
// The boxes are exact for the new positions, but the tree was ordered for the old ones: its
// SAH cost drifts as the triangles move apart from the order (src/accel/bvh/refit.rs).
// src/accel/bvh/refit.rs refit_on_cpu computes the same boxes.
#include "../common/prelude.glsl"
#include "bvh/format.glsl"
#include "../common/geometry.glsl"
#include "../common/workgroup_any.glsl"

layout(constant_id = 2) const uint STEP = 0;
// Whether the whole workgroup loops until its last invocation has stopped climbing (as in
// hploc.comp: devices that end an invocation reaching a memory barrier in divergent flow).
layout(constant_id = 3) const bool UNIFORM_CLIMB = false;
const uint PARENTS = 0;
const uint CLIMB = 1;

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address;       // vec3 per vertex (the new positions)
    uint64_t triangles_address;       // uvec3 per triangle
    uint64_t nodes_address;           // BvhNode per internal node: boxes rewritten
    uint64_t leaf_triangles_address;  // LeafTriangle per leaf: rewritten
    uint64_t leaf_primitives_address; // each leaf's triangle
    uint64_t leaf_parents_address;    // scratch: uint per leaf
    uint64_t arrivals_address;        // scratch: uint per internal node
    uint count;                       // triangles (leaves)
    uint pad;
} pc;

// Writes the box of `child` into its slot of `node`.
void write_child_box(uint node, uint child, vec3 lo, vec3 hi) {
    CoherentBvhNodes nodes = CoherentBvhNodes(pc.nodes_address);
    if (nodes.v[node].left == child) {
        nodes.v[node].left_lo = lo;
        nodes.v[node].left_hi = hi;
    } else {
        nodes.v[node].right_lo = lo;
        nodes.v[node].right_hi = hi;
    }
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (STEP == PARENTS) {
        uint internal = max(pc.count, 2u) - 1u;
        if (i >= internal) {
            return;
        }
        BvhNode node = BvhNodes(pc.nodes_address).v[i];
        if ((node.left & LEAF_BIT) != 0u) {
            U32s(pc.leaf_parents_address).v[node.left & ~LEAF_BIT] = i;
        }
        if (node.right != INVALID_CHILD && (node.right & LEAF_BIT) != 0u) {
            U32s(pc.leaf_parents_address).v[node.right & ~LEAF_BIT] = i;
        }
        U32s(pc.arrivals_address).v[i] = 0u;
        return;
    }
    bool climbing = i < pc.count;
    uint node = 0u;
    uint child = 0u;
    vec3 lo = vec3(0.0);
    vec3 hi = vec3(0.0);
    if (climbing) {
        uint triangle = U32s(pc.leaf_primitives_address).v[i];
        uvec3 t = UVec3s(pc.triangles_address).v[triangle];
        Vec3s positions = Vec3s(pc.positions_address);
        vec3 a = positions.v[t.x];
        vec3 b = positions.v[t.y];
        vec3 c = positions.v[t.z];
        LeafTriangles(pc.leaf_triangles_address).v[i] =
            LeafTriangle(vec4(a, uintBitsToFloat(triangle)), vec4(b, 0.0), vec4(c, 0.0));
        lo = min(a, min(b, c));
        hi = max(a, max(b, c));
        child = LEAF_BIT | i;
        node = U32s(pc.leaf_parents_address).v[i];
    }
    for (;;) {
        if (UNIFORM_CLIMB) {
            if (!workgroup_any(climbing)) {
                break;
            }
        } else if (!climbing) {
            break;
        }
        if (climbing) {
            write_child_box(node, child, lo, hi);
        }
        // The box is written before the arrival is announced...
        memoryBarrierBuffer();
        if (climbing) {
            bool alone = CoherentBvhNodes(pc.nodes_address).v[node].right == INVALID_CHILD;
            climbing = alone || atomicAdd(U32s(pc.arrivals_address).v[node], 1u) == 1u;
        }
        // ...and the sibling's read after its arrival was seen.
        memoryBarrierBuffer();
        if (climbing) {
            BvhNode here = CoherentBvhNodes(pc.nodes_address).v[node];
            bool alone = here.right == INVALID_CHILD;
            lo = alone ? here.left_lo : min(here.left_lo, here.right_lo);
            hi = alone ? here.left_hi : max(here.left_hi, here.right_hi);
            climbing = here.parent != NO_PARENT;
            child = node;
            node = here.parent;
        }
    }
}
