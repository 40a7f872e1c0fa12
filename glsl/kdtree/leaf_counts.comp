#version 460
// Output stage, bottom-up pass (Zhou et al. 2008 Alg. 5): the number of leaves under each
// child of every tree entry, from which preorder addresses follow (a subtree of l leaves has
// 2l - 1 nodes). Invocation k starts at entry k if it is a leaf and climbs the parent links,
// writing its subtree's leaf count into the parent's slot for its side; an atomic counter at
// each parent lets the first child to arrive stop and the second continue with the sum, so
// each entry is visited once, after both of its children.
#include "../common/prelude.glsl"
#include "kdtree/build.glsl"
#include "../common/workgroup_any.glsl"

// Whether the whole workgroup loops until its last invocation has stopped climbing (devices
// that end an invocation reaching a memory barrier in divergent control flow, as in
// glsl/bvh/bottom_up_boxes.comp).
layout(constant_id = 2) const bool UNIFORM_CLIMB = false;

layout(push_constant, scalar) uniform Push {
    uint64_t refs_address;
} pc;

void main() {
    BuildRefs b = BuildRefsRef(pc.refs_address).v;
    uint k = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    uint count = min(Status(b.status).v.entries, b.entry_capacity);
    Entries entries = Entries(b.entries);
    bool climbing = k < count && (entries.v[k].word0 & 3u) == KD_LEAF;
    uint child = k;
    uint leaves = 1;
    for (;;) {
        if (UNIFORM_CLIMB) {
            if (!workgroup_any(climbing)) {
                break;
            }
        } else if (!climbing) {
            break;
        }
        uint link = NO_PARENT;
        if (climbing) {
            link = entries.v[child].parent;
            climbing = link != NO_PARENT;
        }
        uint parent = link & ~RIGHT_SIDE;
        if (climbing) {
            if ((link & RIGHT_SIDE) != 0u) {
                entries.v[parent].right_leaves = leaves;
            } else {
                entries.v[parent].left_leaves = leaves;
            }
        }
        memoryBarrierBuffer();
        if (climbing) {
            // The first child to arrive stops; the second has both counts.
            climbing = atomicAdd(entries.v[parent].arrivals, 1u) != 0u;
        }
        memoryBarrierBuffer();
        if (climbing) {
            leaves = entries.v[parent].left_leaves + entries.v[parent].right_leaves;
            child = parent;
        }
    }
}
