#version 460
// Boxes of every node, bottom-up (Karras 2012 §4): invocation k starts at leaf k, copies its
// triangle in leaf order for traversal, and walks up the parent links writing the box of the
// child it comes from into the parent's slot (the side read from the parent's child references
// sits in the cache line of the boxes and the parent link, which measured faster than a
// separate array of links carrying the side). At each parent an atomic counter lets the first
// arrival stop and the second continue with the union of both children, so every internal
// node is processed exactly once, after both of its children.
#include "../common/prelude.glsl"
#include "bvh/format.glsl"
#include "../common/geometry.glsl"
#include "../common/workgroup_any.glsl"

// Whether the whole workgroup loops until its last invocation has stopped climbing. Set on
// devices that end an invocation reaching a memory barrier in divergent control flow
// (lavapipe); elsewhere each invocation loops on its own.
layout(constant_id = 2) const bool UNIFORM_CLIMB = false;

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address;       // vec3 per vertex
    uint64_t triangles_address;       // uvec3 per triangle
    uint64_t leaf_primitives_address; // u32 per leaf: triangle id in Morton order
    uint64_t nodes_address;           // BvhNode per internal node: boxes written here
    uint64_t leaf_parents_address;    // u32 per leaf
    uint64_t counters_address;        // u32 per internal node, zero on entry
    uint64_t leaf_triangles_address;  // out: LeafTriangle per leaf
    uint64_t count_address;
    uint host_count;
} pc;

// Copies leaf k's triangle in leaf order and returns its box.
void copy_leaf(uint k, out vec3 lo, out vec3 hi) {
    uint triangle = U32s(pc.leaf_primitives_address).v[k];
    uvec3 t = UVec3s(pc.triangles_address).v[triangle];
    Vec3s positions = Vec3s(pc.positions_address);
    vec3 a = positions.v[t.x];
    vec3 b = positions.v[t.y];
    vec3 c = positions.v[t.z];
    LeafTriangles(pc.leaf_triangles_address).v[k] =
        LeafTriangle(vec4(a, uintBitsToFloat(triangle)), vec4(b, 0.0), vec4(c, 0.0));
    lo = min(a, min(b, c));
    hi = max(a, max(b, c));
}

void main() {
    uint k = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    bool climbing = k < element_count(pc.count_address, pc.host_count);
    uint child = LEAF_BIT | k;
    uint node = NO_PARENT;
    vec3 lo;
    vec3 hi;
    if (climbing) {
        node = U32s(pc.leaf_parents_address).v[k];
        copy_leaf(k, lo, hi);
    }
    CoherentBvhNodes nodes = CoherentBvhNodes(pc.nodes_address);
    for (;;) {
        if (UNIFORM_CLIMB) {
            if (!workgroup_any(climbing)) {
                break;
            }
        } else if (!climbing) {
            break;
        }
        if (climbing) {
            if (nodes.v[node].left == child) {
                nodes.v[node].left_lo = lo;
                nodes.v[node].left_hi = hi;
            } else {
                nodes.v[node].right_lo = lo;
                nodes.v[node].right_hi = hi;
            }
        }
        memoryBarrierBuffer();
        if (climbing) {
            // The first child to arrive stops; the second has both boxes.
            climbing = atomicAdd(U32s(pc.counters_address).v[node], 1u) != 0u;
        }
        memoryBarrierBuffer();
        if (climbing) {
            lo = min(nodes.v[node].left_lo, nodes.v[node].right_lo);
            hi = max(nodes.v[node].left_hi, nodes.v[node].right_hi);
            child = node;
            node = nodes.v[node].parent;
            climbing = node != NO_PARENT;
        }
    }
}
