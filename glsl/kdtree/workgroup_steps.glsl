// Workgroup steps shared by the node kernels of the kd-tree build (large_split, large_route,
// small_subtrees): making a leaf from a node's records or from a small node's member mask, and
// making a small root (its records copied out of the level arrays; small_subtrees makes its
// split candidates). Each is called by the whole workgroup in uniform control flow;
// invocation 0 reserves space and the others learn the result through shared memory.
#ifndef CANOPY_KDBUILD_STEPS
#define CANOPY_KDBUILD_STEPS
#include "kdtree/build.glsl"

shared uint shared_reserved[2];

// Invocation 0's `value`, seen by the whole workgroup.
uint broadcast(uint value) {
    if (gl_LocalInvocationIndex == 0) {
        shared_reserved[0] = value;
    }
    barrier();
    uint result = shared_reserved[0];
    barrier();
    return result;
}

// Whether this workgroup, working on one chunk of large node `node`, is the last of the
// node's chunks to finish round `round` (0: their boxes, 1: their classification): each chunk
// counts itself once its writes are done, and the one completing the round goes on with the
// node's own step (the split, the routing of its children).
bool last_chunk_of(LargeNodes nodes, uint node, uint round) {
    memoryBarrierBuffer();
    barrier();
    uint last = 0u;
    if (gl_LocalInvocationIndex == 0) {
        uint chunks = (nodes.v[node].count + CHUNK - 1u) / CHUNK;
        uint done = atomicAdd(nodes.v[node].chunks_done, 1u) + 1u;
        last = done == (round + 1u) * chunks ? 1u : 0u;
    }
    last = broadcast(last);
    memoryBarrierBuffer();
    return last != 0u;
}

uint64_t bit_below(uint i) {
    return i == 0u ? 0ul : (~0ul >> (64u - i));
}

uint popcount64(uint64_t x) {
    uvec2 words = unpack32(x);
    return bitCount(words.x) + bitCount(words.y);
}

// Reserves `count` leaf triangle slots for entry `entry`, seen by the whole workgroup; when they
// do not fit, the entry becomes an empty leaf and NO_PARENT is returned.
uint reserve_leaf(BuildRefs b, uint entry, uint count) {
    uint base = NO_PARENT;
    if (gl_LocalInvocationIndex == 0) {
        base = reserve(b, status_field(b, 1), count, b.leaf_capacity, OVERFLOW_LEAF_TRIANGLES);
        if (base == NO_PARENT) {
            write_leaf_entry(b, entry, 0, 0);
        }
    }
    return broadcast(base);
}

// Entry `entry` becomes a leaf holding `count` records from `first` in `records`.
void leaf_from_records(BuildRefs b, uint entry, Records records, uint first, uint count) {
    uint base = reserve_leaf(b, entry, count);
    if (base == NO_PARENT) {
        return;
    }
    U32s leaves = U32s(b.leaf_triangles);
    for (uint i = gl_LocalInvocationIndex; i < count; i += WORKGROUP_SIZE) {
        leaves.v[base + i] = records.v[first + i].triangle;
    }
    if (gl_LocalInvocationIndex == 0) {
        write_leaf_entry(b, entry, base, count);
    }
}

// Entry `entry` becomes a leaf holding the records of a small root (from `root_first` in the
// small records) whose bit is set in `members`.
void leaf_from_members(BuildRefs b, uint entry, uint root_first, uint root_count, uint64_t members) {
    uint count = popcount64(members);
    uint base = reserve_leaf(b, entry, count);
    if (base == NO_PARENT) {
        return;
    }
    uint i = gl_LocalInvocationIndex;
    if (i < root_count && ((members >> i) & 1ul) != 0ul) {
        uint slot = popcount64(members & bit_below(i));
        U32s(b.leaf_triangles).v[base + slot] = Records(b.small_records).v[root_first + i].triangle;
    }
    if (gl_LocalInvocationIndex == 0) {
        write_leaf_entry(b, entry, base, count);
    }
}

// Entry `entry`, a node of `count` <= MAX_SMALL records (from `first` in `records`) over the
// cell [lo, hi], becomes a small root: its records are copied to the small records, and it
// joins the small roots (whose workgroups in small_subtrees make its split candidates).
void small_root(BuildRefs b, uint entry, vec3 lo, vec3 hi, Records records, uint first,
                uint count, uint depth) {
    uint root_first = NO_PARENT;
    uint node = NO_PARENT;
    if (gl_LocalInvocationIndex == 0) {
        root_first = reserve(b, status_field(b, 2), count, b.small_record_capacity,
                             OVERFLOW_SMALL_RECORDS);
        if (root_first != NO_PARENT) {
            node = reserve_dispatched(b, b.small_root_counters,
                                      b.small_root_counters + SMALL_ROOT_GRID, 1,
                                      b.small_root_capacity, OVERFLOW_SMALL_NODES);
        }
        shared_reserved[1] = node;
    }
    root_first = broadcast(root_first);
    node = shared_reserved[1];
    if (root_first == NO_PARENT || node == NO_PARENT) {
        leaf_from_records(b, entry, records, first, count);
        return;
    }
    uint t = gl_LocalInvocationIndex;
    if (t < count) {
        Records(b.small_records).v[root_first + t] = records.v[first + t];
    }
    if (t == 0) {
        uint64_t all = count == 64u ? ~0ul : (1ul << count) - 1ul;
        SmallNodes(b.small_roots).v[node] =
            SmallNode(lo, root_first, hi, count, all, entry, depth);
    }
    barrier();
}

#endif
