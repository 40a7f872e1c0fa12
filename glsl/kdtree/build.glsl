// The GPU SAH kd-tree builder's data (src/accel/kdtree/build.rs mirrors every struct here) and
// the steps its kernels share.
//
// The build (Zhou et al. 2008 §3, with Chang et al. 2013's atomics) keeps:
// - triangle records {clipped box, triangle id}, in two arrays that alternate by large level;
//   a node of n records reserves 2n in the next array, n per child, so the classifying kernel
//   can append to each child with one atomic per workgroup. Both arrays lie in the entries'
//   buffer after the first `large_entry_capacity` entries: the large stage's entries stay
//   below them, and the small stage, which runs once they are dead, writes its entries over
//   them;
// - per large level, the node list and the chunk list (runs of at most CHUNK records of one
//   node), alternating by level, and the two children of each node (slots 2i, 2i+1);
// - small roots' records and the list of small roots (each root's subtree is built by one
//   workgroup, whose invocations keep their records' split candidates' masks in registers);
// - tree entries: every node of the tree, in creation order, with its parent and children,
//   turned into preorder KdNodes at the end;
// - counters: a status block (entries, leaf triangles and small records allocated, overflow
//   bits), the small roots' count and dispatch grid, and per large level the node and chunk
//   counts with the folded indirect dispatch grids of the level's kernels, which the
//   producers grow as they append (grow_grid), so no pass turns counts into dispatch sizes
//   and a grid never exceeds the device's per-dimension limit.
// A list that would overflow sets a bit in `overflow`; the node that wanted the space becomes
// a leaf where it can, so the tree stays usable, and the host grows the arena and rebuilds.
#ifndef CANOPY_KDBUILD
#define CANOPY_KDBUILD
#include "common/prelude.glsl"
#include "common/geometry.glsl"
#include "kdtree/format.glsl"
#include "common/dispatch.glsl"

const uint CHUNK = 256;           // records per chunk (Zhou's N)
const uint MAX_SMALL = 64;        // records a small root holds at most (its masks' width)
const uint MAX_DEPTH = 64;        // the largest depth limit (MAX_DEPTH in src/accel/kdtree/mod.rs)
const uint CANDIDATES = 6;        // split candidates per small-root record: its box faces
const uint RIGHT_SIDE = 0x80000000u; // in an entry's parent link: it is its parent's right child
const uint NOT_SPLIT = 3u;        // a large node's split_axis when it was not split

const uint LEVEL_COUNTER_BYTES = 128u;       // sizeof(LevelCounters)
// Byte offsets in LevelCounters and SmallRootCounters.
const uint LEVEL_NODE_COUNT = 0u;
const uint LEVEL_CHUNK_COUNT = 4u;
const uint LEVEL_RECORDS = 8u;
const uint LEVEL_CHUNK_GRID = 16u;
const uint SMALL_ROOT_GRID = 4u;

const uint OVERFLOW_RECORDS = 1u;
const uint OVERFLOW_ENTRIES = 2u;
const uint OVERFLOW_LEAF_TRIANGLES = 4u;
const uint OVERFLOW_SMALL_RECORDS = 8u;
const uint OVERFLOW_SMALL_NODES = 16u;

struct Record {
    vec3 lo;
    vec3 hi;
    uint triangle;
};
layout(buffer_reference, scalar, buffer_reference_align = 4) coherent buffer Records { Record v[]; };

struct LargeNode {
    vec3 cell_lo;    // the node's region of space
    uint first;      // its records in the level's record array
    vec3 cell_hi;
    uint count;      // records; for a child, the classifying kernel's atomic counter
    uvec3 tight_lo;  // the records' box, ordered-uint encoded (atomicMin)
    uint entry;      // its tree entry
    uvec3 tight_hi;  // (atomicMax)
    uint depth;
    uint split_axis; // set by the split: 0-2, or NOT_SPLIT
    float split;
    uint stalls;     // consecutive splits that separated nothing
    uint chunks_done; // its chunks past their box, then past their classification (atomic)
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer LargeNodes { LargeNode v[]; };
// The view of a node's last chunk (split.glsl, route.glsl), which reads what the node's other
// chunks wrote in the same dispatch: its box, its children's counts (and, coherent too, the
// children's records).
layout(buffer_reference, scalar, buffer_reference_align = 16) coherent buffer CoherentLargeNodes { LargeNode v[]; };

struct Chunk {
    uint node;  // index in the level's node list
    uint first; // first record
};
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer Chunks { Chunk v[]; };

struct SmallNode {
    vec3 cell_lo;
    uint root_first; // the small root's records
    vec3 cell_hi;
    uint root_count;
    uint64_t members; // bit i: the root's record i is in this node
    uint entry;
    uint depth;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer SmallNodes { SmallNode v[]; };

struct Entry {
    uint word0;  // KdNode word0 without the right child (leaf: complete)
    uint word1;  // KdNode word1
    uint parent; // parent entry | RIGHT_SIDE, or NO_PARENT
    uint leaves; // leaves under the left child, written bottom-up (leaf_counts.comp)
};
layout(buffer_reference, scalar, buffer_reference_align = 16) coherent buffer Entries { Entry v[]; };

struct BuildStatus {
    uint entries;
    uint leaf_triangles;
    uint small_records;
    uint overflow;
};

// Per large level: the counts its kernels guard with, and the folded dispatch grid (one
// workgroup per chunk) that the producers keep current with grow_grid.
struct LevelCounters {
    uint node_count;  // nodes in the level's list
    uint chunk_count; // chunks in the level's chunk list
    uint records;     // records reserved in the next level's array
    uint pad;
    uvec4 chunk_grid; // dispatch arguments over the chunks (x, y, z; w unused)
    // One 128-byte cache line per level: a level's kernels read its count while they append
    // to the next level's with atomics, and a shared line made those reads wait (at 174K
    // triangles on an H200 a stage took 1.13 ms with 16-byte levels, 0.97 ms with 128-byte
    // ones).
    uint line_pad[24];
};

// The small roots the large stage made, for the small stage's one dispatch.
struct SmallRootCounters {
    uint node_count; // small roots
    uvec3 node_grid; // dispatch arguments over them, one workgroup each
};

layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Status { BuildStatus v; };
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer LevelCounterArray { LevelCounters v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer SmallRootCountersRef { SmallRootCounters v; };

// Where everything lives, and the build's parameters: written once per arena, read by every
// kernel.
struct BuildRefs {
    uint64_t records[2];
    uint64_t large_nodes[2];
    uint64_t children;
    uint64_t chunks[2];
    uint64_t small_roots;
    uint64_t small_records;
    uint64_t entries;
    uint64_t leaf_triangles;
    uint64_t status;
    uint64_t levels;
    uint64_t small_root_counters;
    uint64_t tree_nodes;
    uint64_t tree_bounds;
    uint record_capacity;
    uint large_node_capacity;
    uint chunk_capacity;
    uint small_record_capacity;
    uint small_root_capacity;
    uint entry_capacity;
    uint large_entry_capacity; // the large stage's entries: the record arrays follow them
    uint leaf_capacity;
    uint max_depth;
    uint small_threshold;  // T: nodes of at most this many records go to the small stage
    uint max_stalls;
    float empty_cut;       // Ce
    float traversal_cost;  // Ct
    float intersection_cost; // Ci
    float empty_bonus;
    uint max_groups_per_dim; // the device's per-dimension workgroup limit (common/dispatch.glsl)
};
layout(buffer_reference, scalar, buffer_reference_align = 8) readonly buffer BuildRefsRef { BuildRefs v; };

void flag_overflow(BuildRefs b, uint bit) {
    atomicOr(Status(b.status).v.overflow, bit);
}

// Reserves `count` slots of a counter with capacity `capacity`; NO_PARENT when they do not fit
// (the overflow `bit` is then set, and the counter given back, so that a counter that is a
// dispatch size never exceeds its capacity once the kernel is done).
uint reserve(BuildRefs b, uint64_t counter_address, uint count, uint capacity, uint bit) {
    uint first = atomicAdd(U32s(counter_address).v[0], count);
    if (uint64_t(first) + uint64_t(count) > uint64_t(capacity)) {
        atomicAdd(U32s(counter_address).v[0], 0u - count);
        flag_overflow(b, bit);
        return NO_PARENT;
    }
    return first;
}

// Reserves `count` slots of a list whose consumer runs one workgroup per slot, and grows that
// consumer's folded dispatch grid at `grid_address` to cover them (common/dispatch.glsl).
uint reserve_dispatched(BuildRefs b, uint64_t counter_address, uint64_t grid_address, uint count,
                        uint capacity, uint bit) {
    uint first = reserve(b, counter_address, count, capacity, bit);
    if (first != NO_PARENT) {
        grow_grid(grid_address, first, first + count, b.max_groups_per_dim);
    }
    return first;
}

// The node and chunk counts of a level, for kernels dispatched over them to skip the groups
// past the end of a folded grid. (Within capacity: a failed reservation adds to a counter
// for a moment before giving its slots back.)
uint chunk_count(BuildRefs b, uint level) {
    return min(LevelCounterArray(b.levels).v[level].chunk_count, b.chunk_capacity);
}

uint small_root_count(BuildRefs b) {
    return min(SmallRootCountersRef(b.small_root_counters).v.node_count, b.small_root_capacity);
}

uint64_t level_counter_address(BuildRefs b, uint level) {
    return b.levels + uint64_t(LEVEL_COUNTER_BYTES) * level;
}

uint64_t status_field(BuildRefs b, uint word) {
    return b.status + 4ul * word;
}

void write_leaf_entry(BuildRefs b, uint entry, uint first, uint count) {
    Entries(b.entries).v[entry].word0 = KD_LEAF | (count << 2);
    Entries(b.entries).v[entry].word1 = first;
}

void write_internal_entry(BuildRefs b, uint entry, uint axis, float split) {
    Entries(b.entries).v[entry].word0 = axis;
    Entries(b.entries).v[entry].word1 = floatBitsToUint(split);
}

void link_child(BuildRefs b, uint child, uint parent, uint side) {
    Entries(b.entries).v[child].parent = parent | (side == 1u ? RIGHT_SIDE : 0u);
    Entries(b.entries).v[child].leaves = 0;
}

// The surface area of a box of extent `d` (zero extents allowed).
float box_area(vec3 d) {
    return 2.0 * (d.x * d.y + d.y * d.z + d.z * d.x);
}

// The SAH cost of splitting a cell of extent `d` on `axis` at `left_extent` from its low
// face, with n_left and n_right records on the sides (KdParams in src/accel/kdtree/mod.rs).
float split_cost(BuildRefs b, vec3 d, uint axis, float left_extent, uint n_left, uint n_right) {
    vec3 dl = d;
    vec3 dr = d;
    dl[axis] = left_extent;
    dr[axis] = d[axis] - left_extent;
    float area = box_area(d);
    float cost = b.traversal_cost + b.intersection_cost
        * (box_area(dl) * float(n_left) + box_area(dr) * float(n_right)) / area;
    bool empty_with_volume = (n_left == 0u && left_extent > 0.0)
        || (n_right == 0u && d[axis] - left_extent > 0.0);
    return empty_with_volume ? cost * b.empty_bonus : cost;
}

// Which children a box goes to for a plane: left when it starts before the plane (or lies in
// it), right when it ends after it.
bool goes_left(float lo, float hi, float plane) {
    return lo < plane || (lo == plane && hi == plane);
}
bool goes_right(float hi, float plane) {
    return hi > plane;
}

#endif
