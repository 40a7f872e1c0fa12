#version 460
// The BIH build's large-node stage, second kernel of a round: one workgroup per large task
// reads the bins the slices merged (bih/large_bins.comp), prices the candidates and decides
// (bih/binned_sah.glsl, as the small-node stage does), writes the node and hands out its
// children: a child of more than large_threshold primitives becomes a large task of the next
// round (every node of the last round, at the depth limit, is a leaf), with the box of its
// centroids from its side's bins and its slices reserved with one atomic add on that round's slice counter; any other child
// becomes a small task (bih/small_nodes.comp builds its subtree). The decision stays in the
// task for the partition kernel (bih/large_partition.comp), and the workgroup resets its bins
// for the next round's task in its slot.
// In round 0 the task is the root: its centroid box and box come from root_bounds, its box is
// its region and the scene box.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "bih/format.glsl"
#include "bih/queue.glsl"
#include "bih/binned_sah.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t tasks_address;       // LargeTask per large task of this round (decision written)
    uint64_t next_tasks_address;  // out: LargeTask per large task of the next round
    uint64_t next_slices_address; // out: u32 per slice of the next round: its task
    uint64_t small_tasks_address; // out: BihTask per small task
    uint64_t nodes_address;       // out: BihNode per node
    uint64_t bin_counts_address;  // u32 per task slot and bin (reset after reading)
    uint64_t bin_lows_address;    // BIN_LANES ordered u32 per task slot and bin
    uint64_t bin_highs_address;   // BIN_LANES ordered u32 per task slot and bin
    uint64_t root_bounds_address; // 12 ordered u32: the root's centroid lo, hi, box lo, hi
    uint64_t bounds_address;      // out: Aabb, the scene box (round 0)
    uint64_t counters_address;    // u32 counters (src/accel/bih/build.rs)
    uint task_counter;            // index of this round's large task counter
    uint round;                   // this round (the depth of its nodes)
    uint slice_size;              // primitives per slice
    uint large_threshold;         // children of more primitives stay in the large-node stage
    uint max_depth;               // nodes this deep are leaves
    uint max_leaf;                // nodes of at most this many primitives are leaves
    float traversal_cost;         // Ct
    float intersection_cost;      // Ci
    uint clip_nodes;              // 1 when clip nodes may be made
    uint pad;
} pc;

shared uint centroid_box[3u * BINS * 6u]; // per bin: centroid lo xyz, hi xyz (ordered)
shared uint tight_box[6];                  // the node's box (ordered)
shared uvec3 slice_fill[2];                // per large child: first slice, slices, task slot
shared Decision decision;

// The counter indices of round r: its large tasks, then its slices; [1] counts small tasks.
const uint SMALL_TASKS = 1u;

vec3 ordered_vec3(uint at) {
    return vec3(unordered(centroid_box[at]), unordered(centroid_box[at + 1u]), unordered(centroid_box[at + 2u]));
}

// Hands out a child: a large task of the next round or a small task.
void enqueue(BihTask child, vec3 centroid_lo, vec3 centroid_hi, uint which) {
    U32s counters = U32s(pc.counters_address);
    if (child.count > pc.large_threshold) {
        uint slot = atomicAdd(counters.v[pc.task_counter + 2u], 1u);
        uint slices = (child.count + pc.slice_size - 1u) / pc.slice_size;
        uint first_slice = atomicAdd(counters.v[pc.task_counter + 3u], slices);
        LargeTasks(pc.next_tasks_address).v[slot] =
            LargeTask(child, centroid_lo, centroid_hi, first_slice, LEAF, 0u, 0u, 0u, 0u, 0u, 0u);
        slice_fill[which] = uvec3(first_slice, slices, slot);
    } else {
        uint slot = atomicAdd(counters.v[SMALL_TASKS], 1u);
        BihTasks(pc.small_tasks_address).v[slot] = child;
    }
}

void main() {
    uint task_index = flat_workgroup_id();
    if (task_index >= U32s(pc.counters_address).v[pc.task_counter]) {
        return;
    }
    uint lid = gl_LocalInvocationIndex;
    LargeTasks tasks = LargeTasks(pc.tasks_address);
    LargeTask large = tasks.v[task_index];
    BihTask task = large.task;
    U32s counts = U32s(pc.bin_counts_address);
    U32s lows = U32s(pc.bin_lows_address);
    U32s highs = U32s(pc.bin_highs_address);

    // The bins into shared memory, and the node's box from them (on each axis, the span of
    // that axis's bins).
    for (uint bin = lid; bin < 3u * BINS; bin += WORKGROUP_SIZE) {
        uint at = global_bin(task_index, bin);
        bin_count[bin] = counts.v[at];
        bin_span[bin * 2u] = lows.v[at * BIN_LANES];
        bin_span[bin * 2u + 1u] = highs.v[at * BIN_LANES];
        for (uint e = 0; e < 3u; ++e) {
            centroid_box[bin * 6u + e] = lows.v[at * BIN_LANES + 1u + e];
            centroid_box[bin * 6u + 3u + e] = highs.v[at * BIN_LANES + 1u + e];
        }
    }
    if (lid < 2u) {
        slice_fill[lid] = uvec3(0u);
    }
    reset_best_candidate();
    barrier();
    U32s root_bounds = U32s(pc.root_bounds_address);
    if (pc.round == 0u) {
        large.centroid_lo = vec3(unordered(root_bounds.v[0]), unordered(root_bounds.v[1]), unordered(root_bounds.v[2]));
        large.centroid_hi = vec3(unordered(root_bounds.v[3]), unordered(root_bounds.v[4]), unordered(root_bounds.v[5]));
        task.region_lo = vec3(unordered(root_bounds.v[6]), unordered(root_bounds.v[7]), unordered(root_bounds.v[8]));
        task.region_hi = vec3(unordered(root_bounds.v[9]), unordered(root_bounds.v[10]), unordered(root_bounds.v[11]));
        if (lid == 0u) {
            Aabbs(pc.bounds_address).v[0] = Aabb(task.region_lo, 0u, task.region_hi, 0u);
        }
    }
    vec3 extent = large.centroid_hi - large.centroid_lo;
    // The node's box: on each axis, the span of that axis's bins.
    vec3 box_lo, box_hi;
    for (uint a = 0; a < 3u; ++a) {
        float lo = INF, hi = -INF;
        for (uint bin = 0; bin < BINS; ++bin) {
            lo = min(lo, unordered(bin_span[(a * BINS + bin) * 2u]));
            hi = max(hi, unordered(bin_span[(a * BINS + bin) * 2u + 1u]));
        }
        box_lo[a] = lo;
        box_hi[a] = hi;
    }
    uint depth = task.flags >> TASK_DEPTH_SHIFT;
    bool may_split = task.count > pc.max_leaf && depth < pc.max_depth;
    vec2 costs = vec2(pc.traversal_cost, pc.intersection_cost);
    price_candidates(may_split, extent, task.region_lo, task.region_hi, costs);
    barrier();
    select_candidate();
    barrier();

    if (lid == 0u) {
        bool may_clip = may_split && pc.clip_nodes != 0u && (task.flags & TASK_BELOW_CLIP) == 0u;
        Decision d = decide(task.count, may_clip, box_lo, box_hi, task.region_lo, task.region_hi, costs);
        uint a = d.axis;
        uint next_buffer = (pc.round + 1u) % 2u;
        uint child_flags = (next_buffer == 1u ? TASK_RUN_IN_SECOND : 0u) | ((depth + 1u) << TASK_DEPTH_SHIFT);
        BihNodes nodes = BihNodes(pc.nodes_address);
        if (d.kind == CLIP) {
            uint child = atomicAdd(U32s(pc.counters_address).v[0], 1u);
            nodes.v[task.node] = BihNode(a | (child << 2), BIH_CLIP, d.planes);
            vec3 lo = task.region_lo;
            vec3 hi = task.region_hi;
            lo[a] = d.planes.x;
            hi[a] = d.planes.y;
            BihTask only = BihTask(child, task.first, task.count, child_flags | TASK_BELOW_CLIP, lo, hi);
            enqueue(only, large.centroid_lo, large.centroid_hi, 0u);
        } else if (d.kind == SPLIT) {
            uint left = atomicAdd(U32s(pc.counters_address).v[0], 2u);
            nodes.v[task.node] = BihNode(a | (left << 2), BIH_SPLIT, d.planes);
            vec3 left_hi = task.region_hi;
            vec3 right_lo = task.region_lo;
            left_hi[a] = d.planes.x;
            right_lo[a] = d.planes.y;
            // Each side's centroid box: the union of its bins' on the split axis.
            vec3 l_lo = vec3(INF), l_hi = vec3(-INF), r_lo = vec3(INF), r_hi = vec3(-INF);
            for (uint bin = 0; bin < BINS; ++bin) {
                uint at = (a * BINS + bin) * 6u;
                if (bin_count[a * BINS + bin] == 0u) {
                    continue;
                }
                if (bin < d.left_bins) {
                    l_lo = min(l_lo, ordered_vec3(at));
                    l_hi = max(l_hi, ordered_vec3(at + 3u));
                } else {
                    r_lo = min(r_lo, ordered_vec3(at));
                    r_hi = max(r_hi, ordered_vec3(at + 3u));
                }
            }
            enqueue(BihTask(left, task.first, d.left_count, child_flags, task.region_lo, left_hi), l_lo, l_hi, 0u);
            enqueue(BihTask(left + 1u, task.first + d.left_count, task.count - d.left_count, child_flags, right_lo, task.region_hi), r_lo, r_hi, 1u);
        } else {
            nodes.v[task.node] = BihNode(BIH_LEAF | (task.count << 2), task.first, vec2(0.0));
        }
        tasks.v[task_index] = LargeTask(task, large.centroid_lo, large.centroid_hi, large.slice_first,
                                        d.kind, a, d.left_bins, d.left_count, 0u, 0u, 0u);
    }
    barrier();

    // The large children's slices, and the bins reset for the next round's task in this slot.
    for (uint which = 0; which < 2u; ++which) {
        uvec3 fill = slice_fill[which];
        for (uint i = lid; i < fill.y; i += WORKGROUP_SIZE) {
            U32s(pc.next_slices_address).v[fill.x + i] = fill.z;
        }
    }
    for (uint bin = lid; bin < 3u * BINS; bin += WORKGROUP_SIZE) {
        uint at = global_bin(task_index, bin);
        counts.v[at] = 0u;
        for (uint e = 0; e < BIN_LANES; ++e) {
            lows.v[at * BIN_LANES + e] = 0xffffffffu;
            highs.v[at * BIN_LANES + e] = 0u;
        }
    }
}
