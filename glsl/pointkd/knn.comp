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
#include "pointkd/knn.glsl"
#include "pointkd/search.glsl"

const uint NHIST = 32;

shared uint histogram[WORKGROUP_SIZE][NHIST];

// What a range search does with each point it finds besides counting it.
const uint COUNT = 0;     // nothing
const uint HISTOGRAM = 1; // count it in this invocation's histogram row by (d - rmin) / (r - rmin)
const uint GATHER = 2;    // keep the nearest `limit` in best_d2/best_id (how many: `kept`)

// The current search's mode and its histogram's range.
uint mode = COUNT;
float histogram_min = 0.0;
float histogram_scale = 0.0;

void visit_point(vec4 entry, float d2) {
    if (mode == HISTOGRAM) {
        float at = (sqrt(d2) - histogram_min) * histogram_scale;
        histogram[gl_LocalInvocationIndex][min(uint(max(at, 0.0)), NHIST - 1)] += 1;
    }
    if (mode != GATHER) {
        return;
    }
    uint id = floatBitsToUint(entry.w);
    if (list_takes(d2, id)) {
        list_insert(d2, id);
    }
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
    vec3 q;
    uint slot;
    knn_query(i, q, slot);
    PointKdHeader header = PointKdHeaders(pc.header_address).h;
    limit = min(pc.k, K_MAX);
    uint wanted = min(limit, header.point_count);
    float r = starting_radius(header, slot);
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
    write_answers(slot, inside, r);
    add_work(search_count_walks, search_count_nodes, search_count_points);
}
