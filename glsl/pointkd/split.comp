#version 460
// One level of the large-node stage, one invocation per task: the node's box from the ends of
// its sorted lists (O(1)); a leaf when it is small enough, as deep as allowed or all one point;
// a small task (exact VVH later) at or below T points; else, as src/accel/pointkd/cpu.rs
// decides: the empty part of its cell cut off when it exceeds Ce on some side (the largest), or
// the spatial median of its box on its longest axis. A split allocates its children as a pair,
// appends their tasks for the next level, counts its left points by binary search in the sorted
// list of its axis, and asks for the lists to be partitioned.
#include "pointkd/build.glsl"

// Whether an empty part `empty` of a cell `extent` wide exceeds Ce and, as a fraction of the
// cell, the best cut so far (when there is one: `cut`). The fractions are compared as products
// (a / b > c / d as a d > c b), correctly rounded on every device where Vulkan lets a division
// be off by up to 2.5 ulps, as src/accel/pointkd/cpu.rs compares them.
bool beats(float empty, float extent, bool cut, float best_empty, float best_extent) {
    precise float least = refs.empty_space * extent;
    precise float fraction = empty * best_extent;
    precise float best = best_empty * extent;
    return empty > least && (!cut || fraction > best);
}

void main() {
    load_refs();
    uint t = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    PointKdBuildStates state = build_state();
    if (t >= state.v[0].tasks) {
        return;
    }
    uint queue = state.v[0].queue;
    uint current = state.v[0].parity;
    PointKdTask task = PointKdTasks(refs.tasks[queue]).v[t];
    U32s lists = U32s(refs.lists[current]);
    uint n = task.end - task.begin;
    vec3 lo = vec3(INF);
    vec3 hi = vec3(-INF);
    if (n > 0) {
        for (uint a = 0; a < 3; ++a) {
            lo[a] = point(lists.v[a * refs.stride + task.begin])[a];
            hi[a] = point(lists.v[a * refs.stride + task.end - 1])[a];
        }
    }
    PointKdSplit split = PointKdSplit(NO_SPLIT, 0.0, 0, 0);
    PointKdNodes nodes = PointKdNodes(refs.nodes);
    if (n <= refs.max_leaf || task.depth >= refs.max_depth || lo == hi) {
        nodes.v[task.node] = PointKdNode(lo, POINT_KD_LEAF | (n << 2), hi, task.begin);
    } else if (n <= refs.large_node) {
        uint s = atomicAdd(state.v[0].small_tasks, 1);
        if (s < refs.small_capacity) {
            store_task(refs.small, s, task);
        } else {
            atomicOr(state.v[0].overflow, 1);
        }
    } else {
        // Empty space first, the largest part beyond Ce.
        bool cut = false;
        float best_empty = 0.0;
        float best_extent = 0.0;
        uint axis = 0;
        float plane = 0.0;
        for (uint a = 0; a < 3; ++a) {
            float extent = task.cell_hi[a] - task.cell_lo[a];
            float below = lo[a] - task.cell_lo[a];
            if (beats(below, extent, cut, best_empty, best_extent)) {
                cut = true;
                best_empty = below;
                best_extent = extent;
                axis = a;
                plane = lo[a];
            }
            // A cut just above the points must still lie inside the cell, or it would cut
            // nothing off (a flat box in a cell a few ulps wide), level after level.
            float above = task.cell_hi[a] - hi[a];
            float above_plane = next_up_normal(hi[a]);
            if (beats(above, extent, cut, best_empty, best_extent) && above_plane < task.cell_hi[a]) {
                cut = true;
                best_empty = above;
                best_extent = extent;
                axis = a;
                plane = above_plane;
            }
        }
        if (!cut) {
            // The longest axis (the last of equals), its middle.
            axis = 0;
            for (uint a = 1; a < 3; ++a) {
                if (hi[a] - lo[a] >= hi[axis] - lo[axis]) {
                    axis = a;
                }
            }
            // Exact as written: the product by 0.5 does not round, so a fused multiply-add
            // agrees. A box one ulp wide has no plane strictly inside, and a subnormal middle
            // (a box within 1e-38 of zero) is none where subnormals flush: split at its top.
            float middle = lo[axis] + (hi[axis] - lo[axis]) * 0.5;
            plane = middle > lo[axis] && !is_subnormal(middle) ? middle : hi[axis];
        }
        // Points below the plane: a prefix of the axis's sorted list.
        uint first = task.begin;
        uint last = task.end;
        while (first < last) {
            uint mid = (first + last) / 2;
            if (point(lists.v[axis * refs.stride + mid])[axis] < plane) {
                first = mid + 1;
            } else {
                last = mid;
            }
        }
        uint left_count = first - task.begin;
        uint children = atomicAdd(state.v[0].node_count, 2);
        uint next = atomicAdd(state.v[0].next_tasks, 2);
        if (children + 2 > refs.node_capacity || next + 2 > refs.task_capacity) {
            atomicOr(state.v[0].overflow, 1);
            nodes.v[task.node] = PointKdNode(lo, POINT_KD_LEAF | (n << 2), hi, task.begin);
        } else {
            nodes.v[task.node] = PointKdNode(lo, axis | (children << 2), hi, floatBitsToUint(plane));
            vec3 left_hi = task.cell_hi;
            left_hi[axis] = plane;
            vec3 right_lo = task.cell_lo;
            right_lo[axis] = plane;
            uint64_t queue_next = refs.tasks[1 - queue];
            uint mid_entry = task.begin + left_count;
            store_task(queue_next, next, PointKdTask(children, task.begin, mid_entry, task.depth + 1, task.cell_lo, 0, left_hi, 0));
            store_task(queue_next, next + 1, PointKdTask(children + 1, mid_entry, task.end, task.depth + 1, right_lo, 0, task.cell_hi, 0));
            split = PointKdSplit(axis, plane, left_count, next);
            atomicMax(state.v[0].to_partition, 3 * refs.stride);
        }
    }
    store_split(refs.splits, t, split);
}
