#version 460
// k-nearest-neighbour queries through a point kd-tree (seed 000 §5.2, Alg. 6), one invocation
// per query. From a starting radius r0, NITER range searches each count the points within the
// current radius in a histogram of NHIST distance bins (in shared memory, one row per
// invocation) and narrow the radius to the bin holding the k-th nearest; a final range
// search gathers the points within that radius into a list of the k nearest, sorted by
// squared distance and then index, so the answer is exact and deterministic. A radius that
// holds fewer than k points (a starting guess too small) doubles until it holds them or
// reaches max_radius; a range query is this search with max_radius as its bound and k as the
// most points it returns. Range searches walk the tree depth first with a stack, skipping
// nodes whose box lies beyond the radius.
//
// Writes per query: the k (or fewer) nearest indices and squared distances (MISS and INF
// past the last), the final radius, and how many points lie within it.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "pointkd/format.glsl"

layout(constant_id = 2) const uint K_MAX = 64;
const uint NHIST = 32;
const uint STACK_SIZE = 64;
const uint MISS = 0xffffffffu;

layout(push_constant, scalar) uniform Push {
    uint64_t nodes_address;     // PointKdNode, the root first
    uint64_t entries_address;   // vec4 per leaf entry: position, index bits
    uint64_t queries_address;   // vec3 per query
    uint64_t radii_address;     // float r0 per query, or 0: `radius` for all
    uint64_t ids_address;       // out: k indices per query
    uint64_t distances_address; // out: k squared distances per query
    uint64_t found_address;     // out: uvec2 per query: points within the final radius, its bits
    uint64_t count_address;
    uint host_count;
    uint k;
    float radius;               // r0 when radii_address is 0
    float max_radius;           // range bound (INF for plain KNN)
    uint niter;
    uint point_count;
} pc;

shared uint histogram[WORKGROUP_SIZE][NHIST];

// The k nearest so far, in (squared distance, index) order.
float best_d2[K_MAX];
uint best_id[K_MAX];

// What a range search does with each point it finds besides counting it.
const uint COUNT = 0;     // nothing
const uint HISTOGRAM = 1; // count it in this invocation's histogram row by (d - rmin) / (r - rmin)
const uint GATHER = 2;    // keep the nearest `limit` in best_d2/best_id (how many: `kept`)

// Every point within squared distance r2 of q, found depth first with a stack, skipping nodes
// whose box lies beyond: returns how many there are, and does with each what `mode` says.
uint range_search(vec3 q, float r2, uint mode, float rmin, float r, uint limit, out uint kept) {
    PointKdNodes nodes = PointKdNodes(pc.nodes_address);
    PointEntries entries = PointEntries(pc.entries_address);
    uint stack[STACK_SIZE];
    uint top = 0;
    uint node = 0;
    uint count = 0;
    kept = 0;
    float scale = float(NHIST) / max(r - rmin, 1e-30);
    while (true) {
        PointKdNode n = nodes.v[node];
        if (box_distance2(q, n.lo, n.hi) < r2) {
            if ((n.word0 & 3u) == POINT_KD_LEAF) {
                uint end = n.word1 + (n.word0 >> 2);
                for (uint e = n.word1; e < end; ++e) {
                    vec4 entry = entries.v[e];
                    float d2 = distance2(entry.xyz, q);
                    if (d2 >= r2) {
                        continue;
                    }
                    count += 1;
                    if (mode == HISTOGRAM) {
                        float at = (sqrt(d2) - rmin) * scale;
                        histogram[gl_LocalInvocationIndex][min(uint(max(at, 0.0)), NHIST - 1)] += 1;
                    }
                    if (mode != GATHER) {
                        continue;
                    }
                    uint id = floatBitsToUint(entry.w);
                    if (kept == limit && (d2 > best_d2[limit - 1] || (d2 == best_d2[limit - 1] && id > best_id[limit - 1]))) {
                        continue;
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
            } else {
                stack[top++] = (n.word0 >> 2) + 1;
                node = n.word0 >> 2;
                continue;
            }
        }
        if (top == 0) {
            break;
        }
        node = stack[--top];
    }
    return count;
}

// Points within distance r of q.
uint range_count(vec3 q, float r) {
    uint unused;
    return range_search(q, r * r, COUNT, 0.0, r, 0, unused);
}

// Relative widening of a narrowed radius: the histogram bins distances through sqrt, the
// final search compares squared distances.
const float RADIUS_SLACK = 1e-5;

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= element_count(pc.count_address, pc.host_count)) {
        return;
    }
    vec3 q = Vec3s(pc.queries_address).v[i];
    uint limit = min(pc.k, K_MAX);
    uint wanted = min(limit, pc.point_count);
    float r = pc.radii_address != 0ul ? F32s(pc.radii_address).v[i] : pc.radius;
    r = min(max(r, 1e-30), pc.max_radius);
    // A radius holding `wanted` points, unless the bound stops it.
    uint within = pc.point_count > 0 ? range_count(q, r) : 0;
    while (within < wanted && r < pc.max_radius) {
        r = min(r * 2.0, pc.max_radius);
        within = range_count(q, r);
    }
    float holding = r;
    // Narrow [rmin, r) to the histogram bin holding the wanted-th nearest.
    float rmin = 0.0;
    for (uint iter = 0; iter < pc.niter && within >= wanted && wanted > 0; ++iter) {
        for (uint b = 0; b < NHIST; ++b) {
            histogram[gl_LocalInvocationIndex][b] = 0;
        }
        uint unused;
        range_search(q, r * r, HISTOGRAM, rmin, r, 0, unused);
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
    uint inside = 0;
    uint kept = 0;
    if (pc.point_count > 0) {
        inside = range_search(q, r * r, GATHER, 0.0, r, limit, kept);
    }
    if (kept < wanted) {
        // Rounding left the narrowed radius short: the radius that held them.
        r = holding;
        inside = range_search(q, r * r, GATHER, 0.0, r, limit, kept);
    }
    uint base = i * pc.k;
    for (uint j = 0; j < pc.k; ++j) {
        bool have = j < kept;
        U32s(pc.ids_address).v[base + j] = have ? best_id[j] : MISS;
        F32s(pc.distances_address).v[base + j] = have ? best_d2[j] : INF;
    }
    U32s(pc.found_address).v[2 * i] = inside;
    U32s(pc.found_address).v[2 * i + 1] = floatBitsToUint(r);
}
