#version 460
// Large-node stage, step 1 (Chang et al. 2013 §13.2.2): the box of each node's records, then
// the node's split. One workgroup per chunk reduces its records' boxes with subgroup min/max
// and shared memory, then one invocation merges the chunk's box into its node's with three
// atomicMin and three atomicMax on ordered-uint coordinates: no segmented reduction. The
// node's last chunk to finish splits the node (kdtree/split.glsl), so a level takes two
// dispatches (this and large_classify) instead of one per step.
#include "../common/prelude.glsl"
#include "kdtree/build.glsl"
#include "kdtree/split.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t refs_address;
    uint level;
} pc;

shared vec3 subgroup_lo[SUBGROUPS_PER_WORKGROUP];
shared vec3 subgroup_hi[SUBGROUPS_PER_WORKGROUP];

void main() {
    BuildRefs b = BuildRefsRef(pc.refs_address).v;
    uint parity = pc.level & 1u;
    uint chunk_index = flat_workgroup_id();
    if (chunk_index >= chunk_count(b, pc.level)) {
        return;
    }
    Chunk chunk = Chunks(b.chunks[parity]).v[chunk_index];
    LargeNodes nodes = LargeNodes(b.large_nodes[parity]);
    uint end = nodes.v[chunk.node].first + nodes.v[chunk.node].count;
    uint k = chunk.first + gl_LocalInvocationIndex;
    vec3 lo = vec3(INF);
    vec3 hi = vec3(-INF);
    if (k < end) {
        Record r = Records(b.records[parity]).v[k];
        lo = r.lo;
        hi = r.hi;
    }
    lo = subgroupMin(lo);
    hi = subgroupMax(hi);
    if (subgroupElect()) {
        subgroup_lo[gl_SubgroupID] = lo;
        subgroup_hi[gl_SubgroupID] = hi;
    }
    barrier();
    if (gl_LocalInvocationIndex == 0) {
        for (uint s = 1; s < gl_NumSubgroups; ++s) {
            lo = min(lo, subgroup_lo[s]);
            hi = max(hi, subgroup_hi[s]);
        }
        for (uint axis = 0; axis < 3; ++axis) {
            atomicMin(nodes.v[chunk.node].tight_lo[axis], float_to_ordered(floatBitsToUint(lo[axis])));
            atomicMax(nodes.v[chunk.node].tight_hi[axis], float_to_ordered(floatBitsToUint(hi[axis])));
        }
    }
    if (last_chunk_of(nodes, chunk.node, 0u)) {
        split_node(b, pc.level, chunk.node);
    }
}
