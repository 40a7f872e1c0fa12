#version 460
// Large-node stage, step 4 (Zhou et al. 2008 Alg. 2, "small node filtering"): one workgroup
// per split node of the level routes its two children, whose record counts large_classify has
// just completed. An empty child becomes an empty leaf, a child of at most T records a small
// root, and any other joins the next level's node list with its chunks (the counters it adds
// to size the next level's dispatches). A split that separated nothing (both children hold
// every record, e.g. coincident triangles) counts as a stall; after `max_stalls` stalls in a
// row the children become leaves rather than duplicating their records further.
#include "../common/prelude.glsl"
#include "kdtree/build.glsl"
#include "workgroup_steps.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t refs_address;
    uint level;
} pc;

void main() {
    BuildRefs b = BuildRefsRef(pc.refs_address).v;
    uint parity = pc.level & 1u;
    uint index = flat_workgroup_id();
    if (index >= large_node_count(b, pc.level)) {
        return;
    }
    LargeNode node = LargeNodes(b.large_nodes[parity]).v[index];
    if (node.split_axis == NOT_SPLIT) {
        return;
    }
    LargeNodes children = LargeNodes(b.children);
    uint left_count = children.v[2u * index].count;
    uint right_count = children.v[2u * index + 1u].count;
    bool separated = left_count < node.count || right_count < node.count;
    uint stalls = separated ? 0u : node.stalls + 1u;
    Records records = Records(b.records[parity ^ 1u]);
    uint next_level = pc.level + 1u;
    for (uint side = 0; side < 2; ++side) {
        LargeNode child = children.v[2u * index + side];
        if (child.count == 0u) {
            if (gl_LocalInvocationIndex == 0) {
                write_leaf_entry(b, child.entry, 0, 0);
            }
        } else if (child.count <= b.small_threshold) {
            small_root(b, child.entry, child.cell_lo, child.cell_hi, records, child.first,
                       child.count, child.depth);
        } else if (stalls >= b.max_stalls) {
            leaf_from_records(b, child.entry, records, child.first, child.count);
        } else {
            // The next level's lists are sized so that these cannot overflow (its nodes have
            // more than T records each in disjoint ranges of the record array).
            uint chunks = (child.count + CHUNK - 1u) / CHUNK;
            uint slot = NO_PARENT;
            uint chunk_first = NO_PARENT;
            if (gl_LocalInvocationIndex == 0) {
                uint64_t next = level_counter_address(b, next_level);
                slot = reserve_dispatched(b, next + LEVEL_NODE_COUNT, next + LEVEL_NODE_GRID, 1,
                                          b.large_node_capacity, OVERFLOW_RECORDS);
                chunk_first = reserve_dispatched(b, next + LEVEL_CHUNK_COUNT,
                                                 next + LEVEL_CHUNK_GRID, chunks,
                                                 b.chunk_capacity, OVERFLOW_RECORDS);
                shared_reserved[1] = chunk_first;
            }
            slot = broadcast(slot);
            chunk_first = shared_reserved[1];
            if (slot == NO_PARENT || chunk_first == NO_PARENT) {
                leaf_from_records(b, child.entry, records, child.first, child.count);
            } else {
                Chunks next_chunks = Chunks(b.chunks[parity ^ 1u]);
                for (uint c = gl_LocalInvocationIndex; c < chunks; c += WORKGROUP_SIZE) {
                    next_chunks.v[chunk_first + c] = Chunk(slot, child.first + c * CHUNK);
                }
                if (gl_LocalInvocationIndex == 0) {
                    child.stalls = stalls;
                    LargeNodes(b.large_nodes[parity ^ 1u]).v[slot] = child;
                }
            }
        }
    }
}
