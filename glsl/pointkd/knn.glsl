// Shared by the k-nearest kernels (knn.comp: Alg. 6's histogram passes and a gathering range
// search; knn_nearest.comp: one walk, the nearer child first): their push constants (one
// struct, src/accel/pointkd/knn.rs KnnPush), the list of the k nearest so far, the query and
// its starting radius, and the writing of the answers and of the work counters.
#ifndef CANOPY_POINTKD_KNN
#define CANOPY_POINTKD_KNN
#include "../common/geometry.glsl"
#include "pointkd/format.glsl"

layout(constant_id = 2) const uint K_MAX = 64;
const uint MISS = 0xffffffffu;

layout(push_constant, scalar) uniform Push {
    uint64_t nodes_address;     // PointKdNode, the root first
    uint64_t header_address;    // PointKdHeader
    uint64_t entries_address;   // vec4 per leaf entry: position, index bits
    uint64_t queries_address;   // vec3 per query, or 0: every point of the tree
    uint64_t radii_address;     // float r0 per query (by point index for the tree's points),
                                // or 0: `radius` for all
    uint64_t ids_address;       // out: k indices per query
    uint64_t distances_address; // out: k squared distances per query
    uint64_t found_address;     // out: uvec2 per query: points within the final radius, its bits
    uint64_t count_address;
    uint64_t counters_address;  // KnnCounters, or 0
    uint host_count;
    uint k;
    float radius;               // r0 when radii_address is 0 (0: the tree's R)
    float max_radius;           // range bound (INF for plain KNN)
    uint niter;                 // histogram passes (knn.comp)
    uint pad;
} pc;

// The work counted (src/accel/pointkd/knn.rs KnnCounters).
struct KnnCounters {
    uint64_t queries;
    uint64_t range_searches;
    uint64_t nodes_tested;
    uint64_t points_tested;
};
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer KnnCountersBuffer { KnnCounters c; };

// The k nearest so far: `kept` of at most `limit`, a max-heap in (squared distance, index)
// order, so that its root is the farthest, the one a nearer point displaces once the heap is
// full (a heap: an insertion moves log k entries where a sorted list moves k / 2).
// write_answers sorts it nearest first.
float best_d2[K_MAX];
uint best_id[K_MAX];
uint kept = 0;
uint limit = 0;

// Whether (d2, id) comes after entry `at` in (squared distance, index) order.
bool after_entry(float d2, uint id, uint at) {
    return d2 > best_d2[at] || (d2 == best_d2[at] && id > best_id[at]);
}

// Whether a point at d2 with index id enters the list: there is room, or it comes before the
// farthest entry (the root).
bool list_takes(float d2, uint id) {
    return kept < limit || !after_entry(d2, id, 0);
}

// Fills the hole at `at` of the heap's first `size` entries with (d2, id): the farther child
// moves up while it comes after (d2, id) (entries are distinct points: never equal).
void sift_down(uint at, uint size, float d2, uint id) {
    while (2 * at + 1 < size) {
        uint child = 2 * at + 1;
        if (child + 1 < size && after_entry(best_d2[child + 1], best_id[child + 1], child)) {
            child += 1;
        }
        if (after_entry(d2, id, child)) {
            break;
        }
        best_d2[at] = best_d2[child];
        best_id[at] = best_id[child];
        at = child;
    }
    best_d2[at] = d2;
    best_id[at] = id;
}

// Inserts a point the list takes: into the free slot, moving up past nearer parents, or in
// place of the farthest (the root) of a full heap.
void list_insert(float d2, uint id) {
    if (kept == limit) {
        sift_down(0, limit, d2, id);
        return;
    }
    uint at = kept;
    kept += 1;
    while (at > 0 && after_entry(d2, id, (at - 1) / 2)) {
        uint parent = (at - 1) / 2;
        best_d2[at] = best_d2[parent];
        best_id[at] = best_id[parent];
        at = parent;
    }
    best_d2[at] = d2;
    best_id[at] = id;
}

// Sorts the heap nearest first (heapsort: the farthest left moves to the end of the heap).
void list_sort() {
    for (uint size = kept; size > 1; --size) {
        float d2 = best_d2[size - 1];
        uint id = best_id[size - 1];
        best_d2[size - 1] = best_d2[0];
        best_id[size - 1] = best_id[0];
        sift_down(0, size - 1, d2, id);
    }
}

// Query i's position and the slot its answers go to: every point of the tree in leaf order
// (neighbouring invocations walk neighbouring paths), answered at its own index; or the given
// queries in their order.
void knn_query(uint i, out vec3 q, out uint slot) {
    if (pc.queries_address == 0ul) {
        vec4 entry = PointEntries(pc.entries_address).v[i];
        q = entry.xyz;
        slot = floatBitsToUint(entry.w);
    } else {
        q = Vec3s(pc.queries_address).v[i];
        slot = i;
    }
}

// The query's starting radius: its own, the pushed one, or the tree's R; within
// [1e-30, max_radius].
float starting_radius(PointKdHeader header, uint slot) {
    float r = pc.radius > 0.0 ? pc.radius : header.query_radius;
    if (pc.radii_address != 0ul) {
        r = F32s(pc.radii_address).v[slot];
    }
    return min(max(r, 1e-30), pc.max_radius);
}

// Writes the list (when there is one to write: ids_address set), sorted nearest first, MISS
// and INF past its `kept` entries, and what the query found: `inside` points within radius r.
void write_answers(uint slot, uint inside, float r) {
    if (pc.ids_address != 0ul) {
        list_sort();
        uint base = slot * pc.k;
        for (uint j = 0; j < pc.k; ++j) {
            bool have = j < kept;
            U32s(pc.ids_address).v[base + j] = have ? best_id[j] : MISS;
            F32s(pc.distances_address).v[base + j] = have ? best_d2[j] : INF;
        }
    }
    U32s(pc.found_address).v[2 * slot] = inside;
    U32s(pc.found_address).v[2 * slot + 1] = floatBitsToUint(r);
}

// Adds this invocation's work to the counters (when given), one atomic per subgroup. A
// subgroup's sums fit 32 bits: a walk tests each point at most once, and a query makes a few.
void add_work(uint walks, uint nodes, uint points) {
    if (pc.counters_address == 0ul) {
        return;
    }
    uint subgroup_walks = subgroupAdd(walks);
    uint subgroup_nodes = subgroupAdd(nodes);
    uint subgroup_points = subgroupAdd(points);
    uint subgroup_queries = subgroupAdd(1u);
    if (subgroupElect()) {
        KnnCountersBuffer counters = KnnCountersBuffer(pc.counters_address);
        atomicAdd(counters.c.queries, uint64_t(subgroup_queries));
        atomicAdd(counters.c.range_searches, uint64_t(subgroup_walks));
        atomicAdd(counters.c.nodes_tested, uint64_t(subgroup_nodes));
        atomicAdd(counters.c.points_tested, uint64_t(subgroup_points));
    }
}

#endif
