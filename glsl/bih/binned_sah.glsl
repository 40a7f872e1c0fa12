// The binned SAH of the BIH builders (the large-node stage's split kernel and the small-node
// stage), in one place: the bins in shared memory, the pricing of every split candidate by
// the children's regions, and the choice between a split, a clip node and a leaf. The CPU
// reference is src/accel/bih/cpu.rs (best_binned_split, best_clip, build_bih), whose
// arithmetic this repeats.
//
// A node's primitives fall into BINS bins per axis over the box of their centroids,
// floor((c - lo) * (BINS / extent)) clamped to the last bin. Per bin and axis the kernels
// gather the count and the smallest and largest coordinate of the boxes on that axis
// (bin_span, as order-preserving uints so that atomics compare floats). A candidate (BINS - 1
// per axis) costs Ct + Ci * (A_L * n_L + A_R * n_R) / A, each area a region's: the node's region
// ending at the left side's largest coordinate, or starting at the right side's smallest.
// A clip node on the axis where narrowing the region to the primitives' box costs least,
// Ct + Ci * n * A_clipped / A, wins when cheaper than the best split and than a leaf (Ci * n).
#ifndef CANOPY_BIH_BINNED_SAH
#define CANOPY_BIH_BINNED_SAH
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"

layout(constant_id = 2) const uint BINS = 32;
const uint CANDIDATES = 3u * (BINS - 1u);

shared uint bin_count[3u * BINS];
shared uint bin_span[3u * BINS * 2u]; // per bin: its boxes' lo and hi on the axis, ordered uints
shared float candidate_cost[CANDIDATES];
shared uint best_cost_key;  // the cheapest candidate's cost, as an ordered uint
shared uint best_candidate; // the lowest candidate of that cost

// The large-node stage keeps each large task's bins in device memory, in three buffers of
// order-preserving uints so that each starts as one fill: per task slot and bin (3 * BINS
// bins, axis-major) the count, four lows (the boxes' smallest coordinate on the bin's axis,
// then the centroids' smallest x, y, z) and four highs (the largest).
const uint BIN_LANES = 4u;

uint global_bin(uint slot, uint bin) {
    return slot * 3u * BINS + bin;
}

const uint LEAF = 0u;
const uint SPLIT = 1u;
const uint CLIP = 2u;

// What a node becomes: LEAF, SPLIT or CLIP; for a split, its axis, the bins on the left, the
// primitives on the left and the two planes; for a clip node, its axis and planes.
struct Decision {
    uint kind;
    uint axis;
    uint left_bins;
    uint left_count;
    vec2 planes;
};

float area(vec3 lo, vec3 hi) {
    vec3 d = max(hi - lo, vec3(0.0));
    return 2.0 * (d.x * d.y + d.y * d.z + d.z * d.x);
}

// The area of the region lo..hi with its sides on `axis` moved to a and b.
float area_with_sides(vec3 lo, vec3 hi, uint axis, float a, float b) {
    lo[axis] = a;
    hi[axis] = b;
    return area(lo, hi);
}

uint ordered(float f) {
    return float_to_ordered(floatBitsToUint(f));
}

float unordered(uint u) {
    return uintBitsToFloat(ordered_to_float(u));
}

// The box of triangle `primitive`. Its centre is the centroid every kernel bins and
// partitions by, so all of them take it from here and agree exactly.
Aabb triangle_box(uint64_t positions_address, uint64_t triangles_address, uint primitive) {
    uvec3 tri = UVec3s(triangles_address).v[primitive];
    Vec3s positions = Vec3s(positions_address);
    vec3 a = positions.v[tri.x];
    vec3 b = positions.v[tri.y];
    vec3 c = positions.v[tri.z];
    return Aabb(min(min(a, b), c), 0u, max(max(a, b), c), 0u);
}

uint bin_of(float c, float lo, float scale) {
    return min(uint(max((c - lo) * scale, 0.0)), BINS - 1u);
}

// Whether the centroids spread along `axis` (else no plane separates them there).
bool splittable(float extent) {
    return extent > 0.0 && !isinf(extent);
}

// Forgets the best candidate (every invocation; a barrier must follow before pricing).
void reset_best_candidate() {
    if (gl_LocalInvocationIndex == 0u) {
        best_cost_key = 0xffffffffu;
        best_candidate = 0xffffffffu;
    }
}

// Empties the bins and the best candidate (every invocation; a barrier must follow before
// they are filled).
void clear_bins() {
    reset_best_candidate();
    for (uint i = gl_LocalInvocationIndex; i < 3u * BINS; i += WORKGROUP_SIZE) {
        bin_count[i] = 0u;
    }
    for (uint i = gl_LocalInvocationIndex; i < 3u * BINS * 2u; i += WORKGROUP_SIZE) {
        bin_span[i] = i % 2u == 0u ? 0xffffffffu : 0u;
    }
}

// The planes of the split of `axis` with bins 0..left_bins on the left: the left side's
// largest coordinate and the right side's smallest; counts receives each side's primitives.
vec2 split_planes(uint axis, uint left_bins, out uvec2 counts) {
    counts = uvec2(0u);
    vec2 planes = vec2(-INF, INF);
    for (uint bin = 0; bin < BINS; ++bin) {
        uint n = bin_count[axis * BINS + bin];
        if (n == 0u) {
            continue;
        }
        uint at = (axis * BINS + bin) * 2u;
        if (bin < left_bins) {
            counts.x += n;
            planes.x = max(planes.x, unordered(bin_span[at + 1u]));
        } else {
            counts.y += n;
            planes.y = min(planes.y, unordered(bin_span[at]));
        }
    }
    return planes;
}

// Prices every candidate into candidate_cost with costs = (Ct, Ci) and keeps the cheapest
// cost in best_cost_key (every invocation, the bins complete; then a barrier,
// select_candidate() and another barrier before decide()). The work is spread over the
// workgroup, so no invocation loops over all candidates: lavapipe caps the loop iterations of
// one shader execution at 65535, and the small-node stage prices hundreds of nodes in one.
void price_candidates(bool may_split, vec3 extent, vec3 region_lo, vec3 region_hi, vec2 costs) {
    float region_area = max(area(region_lo, region_hi), 1.17549435e-38);
    for (uint j = gl_LocalInvocationIndex; j < CANDIDATES; j += WORKGROUP_SIZE) {
        uint a = j / (BINS - 1u);
        uint split = j % (BINS - 1u) + 1u;
        float cost = INF;
        if (may_split && splittable(extent[a])) {
            uvec2 counts;
            vec2 planes = split_planes(a, split, counts);
            uint n_left = counts.x;
            uint n_right = counts.y;
            float left_max = planes.x;
            float right_min = planes.y;
            if (n_left > 0u && n_right > 0u) {
                float left_area = area_with_sides(region_lo, region_hi, a, region_lo[a], left_max);
                float right_area = area_with_sides(region_lo, region_hi, a, right_min, region_hi[a]);
                cost = costs.x + costs.y
                    * (left_area * float(n_left) + right_area * float(n_right)) / region_area;
            }
        }
        candidate_cost[j] = cost;
        if (cost < INF) {
            atomicMin(best_cost_key, ordered(cost));
        }
    }
}

// The lowest candidate of the cheapest cost into best_candidate (every invocation, after
// price_candidates and a barrier): ties go to the lowest axis, then plane, as on the CPU.
void select_candidate() {
    for (uint j = gl_LocalInvocationIndex; j < CANDIDATES; j += WORKGROUP_SIZE) {
        if (candidate_cost[j] < INF && ordered(candidate_cost[j]) == best_cost_key) {
            atomicMin(best_candidate, j);
        }
    }
}

// The choice for a node of `count` primitives whose boxes span box_lo..box_hi within its
// region (one invocation, after select_candidate and a barrier): the cheapest candidate when
// it beats a leaf, a clip node (where may_clip) when it beats both, else a leaf.
Decision decide(uint count, bool may_clip, vec3 box_lo, vec3 box_hi, vec3 region_lo, vec3 region_hi, vec2 costs) {
    uint best = best_candidate;
    float best_cost = best == 0xffffffffu ? INF : candidate_cost[best];
    float leaf_cost = costs.y * float(count);
    bool split = best != 0xffffffffu && best_cost < leaf_cost;
    float to_beat = split ? best_cost : leaf_cost;
    float region_area = max(area(region_lo, region_hi), 1.17549435e-38);
    uint clip_axis = 3u;
    for (uint a = 0; a < 3u && may_clip; ++a) {
        if (box_lo[a] <= region_lo[a] && box_hi[a] >= region_hi[a]) {
            continue;
        }
        float cost = costs.x + costs.y * float(count)
            * area_with_sides(region_lo, region_hi, a, box_lo[a], box_hi[a]) / region_area;
        if (cost < to_beat) {
            to_beat = cost;
            clip_axis = a;
        }
    }
    if (clip_axis < 3u) {
        return Decision(CLIP, clip_axis, 0u, count, vec2(box_lo[clip_axis], box_hi[clip_axis]));
    }
    if (!split) {
        return Decision(LEAF, 0u, 0u, count, vec2(0.0));
    }
    uint a = best / (BINS - 1u);
    uint left_bins = best % (BINS - 1u) + 1u;
    uvec2 counts;
    vec2 planes = split_planes(a, left_bins, counts);
    return Decision(SPLIT, a, left_bins, counts.x, planes);
}

#endif
