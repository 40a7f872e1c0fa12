#version 460
// One round of the BIH build's GPU work queue: one workgroup per task of the round (a node and
// its run of primitive indices), after the binned-SAH builder of seed 004 and the CPU
// reference src/accel/bih/cpu.rs build_bih, whose arithmetic it repeats.
//
// 1. The node's primitives are read (round 0 reads the identity, later rounds the run the
//    parent wrote) and their boxes made from the triangles; the workgroup reduces the box of
//    their centroids and of the primitives themselves (subgroup min/max, then shared atomics
//    on order-preserving uints). The root writes the scene box, which is its region; every
//    other task carries its region (the scene box cut by its ancestors' planes).
// 2. A node of at most max_leaf primitives, or at the depth limit, is a leaf. Otherwise every
//    primitive falls into one of BINS bins per axis over the centroid bounds,
//    floor((c - lo) * (BINS / extent)) clamped to the last bin, and the bins' counts and
//    their boxes' smallest and largest coordinate on the axis are gathered with shared
//    atomics.
// 3. One invocation per candidate (BINS - 1 per axis) prices its split by the children's
//    regions (the node's region ending at the left side's largest coordinate on the axis, or
//    starting at the right side's smallest): Ct + Ci * (A_L * n_L + A_R * n_R) / A. The
//    cheapest (ties to the lowest axis, then plane) splits the node when both sides hold
//    primitives and it costs less than a leaf (Ci * n). A clip node (unless the parent is one)
//    on the axis where narrowing the region to the primitives' box costs least,
//    Ct + Ci * n * A_clipped / A, wins when cheaper than both. Else: a leaf.
// 4. A leaf copies its run into the leaf primitive list (at its own offset: runs never
//    overlap). A split reserves its two children with one atomic add on the node counter
//    (children are adjacent) and two tasks of the next round with one on that round's task
//    counter, writes the node (axis, left child, the left side's max and the right side's min
//    on the axis, from the bins), and partitions its run stably into the next round's index
//    buffer: the left side first, each side in the run's order (a workgroup scan per tile of
//    WORKGROUP_SIZE primitives). A clip node reserves one node and one task and copies its
//    run.
// Capacities are exact: a tree over n primitives has at most max_nodes(n) nodes
// (src/accel/bih/mod.rs) and a round at most n tasks, so nothing can overflow.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "../common/workgroup_scan.glsl"
#include "bih/format.glsl"

layout(constant_id = 2) const uint BINS = 32;

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address;       // vec3 per vertex
    uint64_t triangles_address;       // uvec3 per triangle
    uint64_t indices_in_address;      // u32 per primitive: the runs of this round's tasks
    uint64_t indices_out_address;     // out: the runs of the next round's tasks
    uint64_t leaf_primitives_address; // out: the leaves' runs
    uint64_t nodes_address;           // out: BihNode per node
    uint64_t tasks_in_address;        // BihTask per task of this round
    uint64_t tasks_out_address;       // out: BihTask per task of the next round
    uint64_t counters_address;        // u32: [0] nodes, [1 + r] tasks of round r
    uint64_t bounds_address;          // out: Aabb, the scene box (written by the root)
    uint round;                       // this round (the depth of its nodes)
    uint max_depth;                   // nodes at this depth are leaves
    uint max_leaf;                    // nodes of at most this many primitives are leaves
    float traversal_cost;             // Ct
    float intersection_cost;          // Ci
    uint clip_nodes;                  // 1 when clip nodes may be made
} pc;

struct BihTask {
    uint node;
    uint first;
    uint count;
    uint below_clip; // 1 when the parent is a clip node
    vec3 region_lo;
    vec3 region_hi;
};
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer BihTasks { BihTask v[]; };

const uint CANDIDATES = 3u * (BINS - 1u);

shared uint node_box[12]; // centroid lo, centroid hi, box lo, box hi: ordered uints
shared uint bin_count[3u * BINS];
shared uint bin_span[3u * BINS * 2u]; // per bin: its boxes' lo and hi on the axis, ordered uints
shared float candidate_cost[CANDIDATES];
const uint LEAF = 0u;
const uint SPLIT = 1u;
const uint CLIP = 2u;
shared uint decision[4]; // LEAF, SPLIT or CLIP; axis; left bins; left count

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

Aabb primitive_box(uint primitive) {
    uvec3 tri = UVec3s(pc.triangles_address).v[primitive];
    Vec3s positions = Vec3s(pc.positions_address);
    vec3 a = positions.v[tri.x];
    vec3 b = positions.v[tri.y];
    vec3 c = positions.v[tri.z];
    return Aabb(min(min(a, b), c), 0u, max(max(a, b), c), 0u);
}

uint primitive_at(uint position) {
    return pc.round == 0u ? position : U32s(pc.indices_in_address).v[position];
}

uint bin_of(float c, float lo, float scale) {
    return min(uint(max((c - lo) * scale, 0.0)), BINS - 1u);
}

void main() {
    uint task_index = flat_workgroup_id();
    if (task_index >= U32s(pc.counters_address).v[1u + pc.round]) {
        return;
    }
    BihTask task = BihTasks(pc.tasks_in_address).v[task_index];
    uint lid = gl_LocalInvocationIndex;

    // 1. The centroid bounds and the node's box.
    if (lid < 12u) {
        node_box[lid] = (lid / 3u) % 2u == 0u ? 0xffffffffu : 0u;
    }
    for (uint i = lid; i < 3u * BINS; i += WORKGROUP_SIZE) {
        bin_count[i] = 0u;
    }
    for (uint i = lid; i < 3u * BINS * 2u; i += WORKGROUP_SIZE) {
        bin_span[i] = i % 2u == 0u ? 0xffffffffu : 0u;
    }
    barrier();
    vec3 c_lo = vec3(INF), c_hi = vec3(-INF), b_lo = vec3(INF), b_hi = vec3(-INF);
    for (uint k = lid; k < task.count; k += WORKGROUP_SIZE) {
        Aabb box = primitive_box(primitive_at(task.first + k));
        vec3 c = (box.lo + box.hi) * 0.5;
        c_lo = min(c_lo, c);
        c_hi = max(c_hi, c);
        b_lo = min(b_lo, box.lo);
        b_hi = max(b_hi, box.hi);
    }
    c_lo = subgroupMin(c_lo);
    c_hi = subgroupMax(c_hi);
    b_lo = subgroupMin(b_lo);
    b_hi = subgroupMax(b_hi);
    if (subgroupElect()) {
        for (uint a = 0; a < 3u; ++a) {
            atomicMin(node_box[a], ordered(c_lo[a]));
            atomicMax(node_box[3u + a], ordered(c_hi[a]));
            atomicMin(node_box[6u + a], ordered(b_lo[a]));
            atomicMax(node_box[9u + a], ordered(b_hi[a]));
        }
    }
    barrier();
    vec3 centroid_lo = vec3(unordered(node_box[0]), unordered(node_box[1]), unordered(node_box[2]));
    vec3 centroid_hi = vec3(unordered(node_box[3]), unordered(node_box[4]), unordered(node_box[5]));
    vec3 box_lo = vec3(unordered(node_box[6]), unordered(node_box[7]), unordered(node_box[8]));
    vec3 box_hi = vec3(unordered(node_box[9]), unordered(node_box[10]), unordered(node_box[11]));
    if (pc.round == 0u) {
        task.region_lo = box_lo;
        task.region_hi = box_hi;
        if (lid == 0u) {
            Aabbs(pc.bounds_address).v[0] = Aabb(box_lo, 0u, box_hi, 0u);
        }
    }
    vec3 extent = centroid_hi - centroid_lo;
    vec3 scale = vec3(float(BINS)) / extent;
    bool may_split = task.count > pc.max_leaf && pc.round < pc.max_depth;

    // 2. The bins.
    if (may_split) {
        for (uint k = lid; k < task.count; k += WORKGROUP_SIZE) {
            Aabb box = primitive_box(primitive_at(task.first + k));
            vec3 c = (box.lo + box.hi) * 0.5;
            for (uint a = 0; a < 3u; ++a) {
                if (!(extent[a] > 0.0) || isinf(extent[a])) {
                    continue;
                }
                uint bin = a * BINS + bin_of(c[a], centroid_lo[a], scale[a]);
                atomicAdd(bin_count[bin], 1u);
                atomicMin(bin_span[bin * 2u], ordered(box.lo[a]));
                atomicMax(bin_span[bin * 2u + 1u], ordered(box.hi[a]));
            }
        }
    }
    barrier();

    // 3. Every candidate's cost, then the cheapest.
    vec3 region_lo = task.region_lo;
    vec3 region_hi = task.region_hi;
    float region_area = max(area(region_lo, region_hi), 1.17549435e-38);
    for (uint j = lid; j < CANDIDATES; j += WORKGROUP_SIZE) {
        uint a = j / (BINS - 1u);
        uint split = j % (BINS - 1u) + 1u;
        float cost = INF;
        if (may_split && extent[a] > 0.0 && !isinf(extent[a])) {
            uint n_left = 0u, n_right = 0u;
            float left_max = -INF, right_min = INF;
            for (uint bin = 0; bin < BINS; ++bin) {
                uint n = bin_count[a * BINS + bin];
                if (n == 0u) {
                    continue;
                }
                uint at = (a * BINS + bin) * 2u;
                if (bin < split) {
                    n_left += n;
                    left_max = max(left_max, unordered(bin_span[at + 1u]));
                } else {
                    n_right += n;
                    right_min = min(right_min, unordered(bin_span[at]));
                }
            }
            if (n_left > 0u && n_right > 0u) {
                float left_area = area_with_sides(region_lo, region_hi, a, region_lo[a], left_max);
                float right_area = area_with_sides(region_lo, region_hi, a, right_min, region_hi[a]);
                cost = pc.traversal_cost + pc.intersection_cost
                    * (left_area * float(n_left) + right_area * float(n_right)) / region_area;
            }
        }
        candidate_cost[j] = cost;
    }
    barrier();
    if (lid == 0u) {
        uint best = 0xffffffffu;
        float best_cost = INF;
        for (uint j = 0; j < CANDIDATES; ++j) {
            if (candidate_cost[j] < best_cost) {
                best_cost = candidate_cost[j];
                best = j;
            }
        }
        float leaf_cost = pc.intersection_cost * float(task.count);
        bool split = best != 0xffffffffu && best_cost < leaf_cost;
        float to_beat = split ? best_cost : leaf_cost;
        uint clip_axis = 3u;
        for (uint a = 0; a < 3u && may_split && pc.clip_nodes != 0u && task.below_clip == 0u; ++a) {
            if (box_lo[a] <= region_lo[a] && box_hi[a] >= region_hi[a]) {
                continue;
            }
            float cost = pc.traversal_cost + pc.intersection_cost * float(task.count)
                * area_with_sides(region_lo, region_hi, a, box_lo[a], box_hi[a]) / region_area;
            if (cost < to_beat) {
                to_beat = cost;
                clip_axis = a;
            }
        }
        decision[0] = clip_axis < 3u ? CLIP : split ? SPLIT : LEAF;
        if (clip_axis < 3u) {
            uint a = clip_axis;
            uint child = atomicAdd(U32s(pc.counters_address).v[0], 1u);
            uint slot = atomicAdd(U32s(pc.counters_address).v[2u + pc.round], 1u);
            BihNodes(pc.nodes_address).v[task.node] = BihNode(a | (child << 2), BIH_CLIP, vec2(box_lo[a], box_hi[a]));
            vec3 lo = region_lo;
            vec3 hi = region_hi;
            lo[a] = box_lo[a];
            hi[a] = box_hi[a];
            BihTasks(pc.tasks_out_address).v[slot] = BihTask(child, task.first, task.count, 1u, lo, hi);
            decision[1] = a;
            decision[2] = 0u;
            decision[3] = task.count;
        } else if (split) {
            uint a = best / (BINS - 1u);
            uint left_bins = best % (BINS - 1u) + 1u;
            uint n_left = 0u;
            float left_max = -INF;
            float right_min = INF;
            for (uint bin = 0; bin < BINS; ++bin) {
                uint at = (a * BINS + bin) * 2u;
                if (bin_count[a * BINS + bin] == 0u) {
                    continue;
                }
                if (bin < left_bins) {
                    n_left += bin_count[a * BINS + bin];
                    left_max = max(left_max, unordered(bin_span[at + 1u]));
                } else {
                    right_min = min(right_min, unordered(bin_span[at]));
                }
            }
            uint left = atomicAdd(U32s(pc.counters_address).v[0], 2u);
            uint slot = atomicAdd(U32s(pc.counters_address).v[2u + pc.round], 2u);
            BihNodes(pc.nodes_address).v[task.node] = BihNode(a | (left << 2), BIH_SPLIT, vec2(left_max, right_min));
            vec3 left_hi = region_hi;
            vec3 right_lo = region_lo;
            left_hi[a] = left_max;
            right_lo[a] = right_min;
            BihTasks tasks_out = BihTasks(pc.tasks_out_address);
            tasks_out.v[slot] = BihTask(left, task.first, n_left, 0u, region_lo, left_hi);
            tasks_out.v[slot + 1u] = BihTask(left + 1u, task.first + n_left, task.count - n_left, 0u, right_lo, region_hi);
            decision[1] = a;
            decision[2] = left_bins;
            decision[3] = n_left;
        } else {
            BihNodes(pc.nodes_address).v[task.node] = BihNode(BIH_LEAF | (task.count << 2), task.first, vec2(0.0));
        }
    }
    barrier();

    // 4. A leaf's run, or the stable partition of a split's.
    if (decision[0] == LEAF) {
        for (uint k = lid; k < task.count; k += WORKGROUP_SIZE) {
            U32s(pc.leaf_primitives_address).v[task.first + k] = primitive_at(task.first + k);
        }
        return;
    }
    uint a = decision[1];
    uint left_bins = decision[2];
    uint n_left = decision[3];
    uint left_base = 0u;
    uint right_base = 0u;
    U32s next_runs = U32s(pc.indices_out_address);
    for (uint tile = 0; tile < task.count; tile += WORKGROUP_SIZE) {
        uint k = tile + lid;
        bool valid = k < task.count;
        uint primitive = 0u;
        bool left = false;
        if (valid) {
            primitive = primitive_at(task.first + k);
            Aabb box = primitive_box(primitive);
            float c = (box.lo[a] + box.hi[a]) * 0.5;
            left = decision[0] == CLIP || bin_of(c, centroid_lo[a], scale[a]) < left_bins;
        }
        uint lefts;
        uint before = workgroup_exclusive_add(left ? 1u : 0u, lefts);
        if (valid) {
            uint position = left ? left_base + before : n_left + right_base + (lid - before);
            next_runs.v[task.first + position] = primitive;
        }
        uint in_tile = min(WORKGROUP_SIZE, task.count - tile);
        left_base += lefts;
        right_base += in_tile - lefts;
    }
}
