// Large-node stage, the routing of one split node's children (Zhou et al. 2008 Alg. 2, "small
// node filtering"), run by the workgroup of the node's last chunk to finish classifying
// (large_classify.comp), when the children's record counts are complete. An empty child
// becomes an empty leaf, a child of at most T records a small root, and any other joins the
// next level's node list with its chunks (the counters it adds to size the next level's
// dispatches). A split that separated nothing (both children hold every record, e.g.
// coincident triangles) counts as a stall; after `max_stalls` stalls in a row the children
// become leaves rather than duplicating their records further. Called by the whole workgroup
// in uniform control flow.
#ifndef CANOPY_KDTREE_ROUTE
#define CANOPY_KDTREE_ROUTE
#include "kdtree/build.glsl"
#include "kdtree/workgroup_steps.glsl"

void route_node(BuildRefs b, uint level, uint index) {
    uint parity = level & 1u;
    LargeNode node = CoherentLargeNodes(b.large_nodes[parity]).v[index];
    if (node.split_axis == NOT_SPLIT) {
        return;
    }
    CoherentLargeNodes children = CoherentLargeNodes(b.children);
    uint left_count = children.v[2u * index].count;
    uint right_count = children.v[2u * index + 1u].count;
    bool separated = left_count < node.count || right_count < node.count;
    uint stalls = separated ? 0u : node.stalls + 1u;
    Records records = Records(b.records[parity ^ 1u]);
    uint next_level = level + 1u;
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
                slot = reserve(b, next + LEVEL_NODE_COUNT, 1, b.large_node_capacity,
                               OVERFLOW_RECORDS);
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

#endif
