#version 460
// One level of the large-node stage, one invocation per task, decided as
// decide_large_task (pointkd/build.glsl) says: a leaf, a small task, or a spatial-median or
// empty-space split whose children are allocated as a pair and appended for the next level,
// the lists to be partitioned. A task above T points and at most medium_limit() is appended to
// the medium tasks instead: one workgroup of medium.comp builds its whole subtree after the
// levels, so the levels stop where every node left fits one workgroup.
#include "pointkd/build.glsl"

void main() {
    load_refs();
    uint t = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    PointKdBuildStates state = build_state();
    if (t >= state.v[0].tasks) {
        return;
    }
    uint queue = state.v[0].queue;
    PointKdTask task = PointKdTasks(refs.tasks[queue]).v[t];
    uint n = task.end - task.begin;
    PointKdSplit split = PointKdSplit(NO_SPLIT, 0.0, 0, 0);
    if (n > refs.large_node && n <= medium_limit()) {
        uint m = atomicAdd(state.v[0].medium_tasks, 1);
        if (m < refs.medium_capacity) {
            store_task(refs.medium, m, task);
        } else {
            atomicOr(state.v[0].overflow, 1);
        }
        store_split(refs.splits, t, split);
        return;
    }
    vec3 lo;
    vec3 hi;
    split = decide_large_task(task, refs.lists[state.v[0].parity], lo, hi);
    if (split.axis != NO_SPLIT) {
        uint children = atomicAdd(state.v[0].node_count, 2);
        uint next = atomicAdd(state.v[0].next_tasks, 2);
        if (children + 2 > refs.node_capacity || next + 2 > refs.task_capacity) {
            overflow_leaf(task, lo, hi);
            split.axis = NO_SPLIT;
        } else {
            PointKdTask left;
            PointKdTask right;
            split_node(task, split, lo, hi, children, left, right);
            uint64_t queue_next = refs.tasks[1 - queue];
            store_task(queue_next, next, left);
            store_task(queue_next, next + 1, right);
            split.left_task = next;
            atomicMax(state.v[0].to_partition, 3 * refs.stride);
        }
    }
    store_split(refs.splits, t, split);
}
