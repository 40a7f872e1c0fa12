#version 460
// k-nearest-neighbour queries through a point kd-tree (seed 000 §5.2, Alg. 6), one invocation
// per query. From a starting radius r0, NITER range searches each count the points within the
// current radius in a histogram of NHIST distance bins (in shared memory, one row per
// invocation) and narrow the radius to the bin holding the k-th nearest; a final range
// search gathers the points within that radius into a list of the k nearest, sorted by
// squared distance and then index, so the answer is exact and deterministic. The first
// histogram's total is the count of points within r0: a radius that holds fewer than k (a
// starting guess too small) doubles until it holds them or reaches max_radius. A range query
// (NITER 0, max_radius its radius, k the most points it returns) is the gathering search
// alone. Range searches walk the tree depth first with a stack, skipping nodes whose box lies
// beyond the radius. With no query list (queries_address 0) the queries are the tree's own
// points in leaf order, answered at their indices.
//
// Writes per query: the k (or fewer) nearest indices and squared distances (MISS and INF
// past the last), the final radius, and how many points lie within it. Without a list to
// write (ids_address 0) the final search only counts, to confirm the narrowed radius holds k:
// the radius alone is wanted (glsl/pointkd/radius_*.comp's node queries). With a counters
// address it adds the work done (range searches, nodes and points tested), one atomic per
// subgroup.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "pointkd/search.glsl"

layout(constant_id = 2) const uint K_MAX = 64;
const uint NHIST = 32;
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
    uint niter;
    uint pad;
} pc;

shared uint histogram[WORKGROUP_SIZE][NHIST];

// The work counted (src/accel/pointkd/knn.rs KnnCounters).
struct KnnCounters {
    uint64_t queries;
    uint64_t range_searches;
    uint64_t nodes_tested;
    uint64_t points_tested;
};
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer KnnCountersBuffer { KnnCounters c; };
// The k nearest so far, in (squared distance, index) order.
float best_d2[K_MAX];
uint best_id[K_MAX];

// What a range search does with each point it finds besides counting it.
const uint COUNT = 0;     // nothing
const uint HISTOGRAM = 1; // count it in this invocation's histogram row by (d - rmin) / (r - rmin)
const uint GATHER = 2;    // keep the nearest `limit` in best_d2/best_id (how many: `kept`)

// The current search's mode and its histogram's range, or its list's length and bound.
uint mode = COUNT;
float histogram_min = 0.0;
float histogram_scale = 0.0;
uint kept = 0;
uint limit = 0;

void visit_point(vec4 entry, float d2) {
    if (mode == HISTOGRAM) {
        float at = (sqrt(d2) - histogram_min) * histogram_scale;
        histogram[gl_LocalInvocationIndex][min(uint(max(at, 0.0)), NHIST - 1)] += 1;
    }
    if (mode != GATHER) {
        return;
    }
    uint id = floatBitsToUint(entry.w);
    if (kept == limit && (d2 > best_d2[limit - 1] || (d2 == best_d2[limit - 1] && id > best_id[limit - 1]))) {
        return;
    }
    uint at = kept < limit ? kept : limit - 1;
    while (at > 0 && (best_d2[at - 1] > d2 || (best_d2[at - 1] == d2 && best_id[at - 1] > id))) {
        best_d2[at] = best_d2[at - 1];
        best_id[at] = best_id[at - 1];
        at -= 1;
    }
    best_d2[at] = d2;
    best_id[at] = id;
    kept = min(kept + 1, limit);
}

// The points within r of q, each handled as `search_mode` says; returns how many there are.
uint search(vec3 q, float r, uint search_mode) {
    mode = search_mode;
    kept = 0;
    return range_search(pc.nodes_address, pc.entries_address, q, r * r);
}

// Fills this invocation's histogram row with the points within r of q, binned over [rmin, r);
// returns how many there are.
uint histogram_pass(vec3 q, float rmin, float r) {
    for (uint b = 0; b < NHIST; ++b) {
        histogram[gl_LocalInvocationIndex][b] = 0;
    }
    histogram_min = rmin;
    histogram_scale = float(NHIST) / max(r - rmin, 1e-30);
    return search(q, r, HISTOGRAM);
}

// Relative widening of a narrowed radius: the histogram bins distances through sqrt, the
// final search compares squared distances.
const float RADIUS_SLACK = 1e-5;

// Narrows [rmin, r) to the histogram bin holding the wanted-th nearest.
void narrow(uint wanted, inout float rmin, inout float r) {
    uint below = 0;
    uint bin = 0;
    while (bin < NHIST - 1 && below + histogram[gl_LocalInvocationIndex][bin] < wanted) {
        below += histogram[gl_LocalInvocationIndex][bin];
        bin += 1;
    }
    float width = (r - rmin) / float(NHIST);
    r = min((rmin + float(bin + 1) * width) * (1.0 + RADIUS_SLACK), r);
    rmin = rmin + float(bin) * width;
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= element_count(pc.count_address, pc.host_count)) {
        return;
    }
    // Every point of the tree in leaf order (neighbouring invocations walk neighbouring
    // paths), answered at its own index; or the given queries.
    vec3 q;
    uint slot = i;
    if (pc.queries_address == 0ul) {
        vec4 entry = PointEntries(pc.entries_address).v[i];
        q = entry.xyz;
        slot = floatBitsToUint(entry.w);
    } else {
        q = Vec3s(pc.queries_address).v[i];
    }
    PointKdHeader header = PointKdHeaders(pc.header_address).h;
    limit = min(pc.k, K_MAX);
    uint wanted = min(limit, header.point_count);
    float r = pc.radius > 0.0 ? pc.radius : header.query_radius;
    if (pc.radii_address != 0ul) {
        r = F32s(pc.radii_address).v[slot];
    }
    r = min(max(r, 1e-30), pc.max_radius);
    float holding = r;
    if (pc.niter > 0 && wanted > 0) {
        // The first histogram counts too: the radius doubles until it holds `wanted` points
        // (unless the bound stops it), then each histogram narrows it.
        uint within = histogram_pass(q, 0.0, r);
        while (within < wanted && r < pc.max_radius) {
            r = min(r * 2.0, pc.max_radius);
            within = histogram_pass(q, 0.0, r);
        }
        holding = r;
        if (within >= wanted) {
            float rmin = 0.0;
            narrow(wanted, rmin, r);
            for (uint iter = 1; iter < pc.niter; ++iter) {
                histogram_pass(q, rmin, r);
                narrow(wanted, rmin, r);
            }
        }
    }
    uint inside = 0;
    uint final_mode = pc.ids_address != 0ul ? GATHER : COUNT;
    if (header.point_count > 0) {
        inside = search(q, r, final_mode);
        kept = final_mode == GATHER ? kept : min(inside, wanted);
        if (kept < wanted && r < holding) {
            // Rounding left the narrowed radius short: the radius that held them.
            r = holding;
            inside = search(q, r, final_mode);
            kept = final_mode == GATHER ? kept : min(inside, wanted);
        }
    }
    if (pc.ids_address != 0ul) {
        uint base = slot * pc.k;
        for (uint j = 0; j < pc.k; ++j) {
            bool have = j < kept;
            U32s(pc.ids_address).v[base + j] = have ? best_id[j] : MISS;
            F32s(pc.distances_address).v[base + j] = have ? best_d2[j] : INF;
        }
    }
    U32s(pc.found_address).v[2 * slot] = inside;
    U32s(pc.found_address).v[2 * slot + 1] = floatBitsToUint(r);
    if (pc.counters_address != 0ul) {
        // A subgroup's sums fit 32 bits: a search tests each point at most once, and a query makes
        // a few searches.
        uint subgroup_searches = subgroupAdd(search_count_walks);
        uint subgroup_nodes = subgroupAdd(search_count_nodes);
        uint subgroup_points = subgroupAdd(search_count_points);
        uint subgroup_queries = subgroupAdd(1u);
        if (subgroupElect()) {
            KnnCountersBuffer counters = KnnCountersBuffer(pc.counters_address);
            atomicAdd(counters.c.queries, uint64_t(subgroup_queries));
            atomicAdd(counters.c.range_searches, uint64_t(subgroup_searches));
            atomicAdd(counters.c.nodes_tested, uint64_t(subgroup_nodes));
            atomicAdd(counters.c.points_tested, uint64_t(subgroup_points));
        }
    }
}
