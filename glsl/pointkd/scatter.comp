#version 460
// The stable partition of every list within its task's entries: an element goes to
// begin + (left elements before it) when its point is left of the split, else to
// begin + left count + (right elements before it), counted from the flags' exclusive scan, so
// each list stays sorted within both children (seed 000 §5.1, the split of Sengupta 2007).
// Elements of tasks that did not split keep their place and end their ownership.
#include "pointkd/build.glsl"

void main() {
    load_refs();
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= 3 * refs.stride) {
        return;
    }
    uint current = build_state().v[0].parity;
    uint axis_list = i / refs.stride;
    uint position = i % refs.stride;
    if (position >= refs.count) {
        return;
    }
    U32s source = U32s(refs.lists[current]);
    U32s target = U32s(refs.lists[1 - current]);
    U32s owners_next = U32s(refs.owners[1 - current]);
    uint t = U32s(refs.owners[current]).v[position];
    PointKdSplit split = PointKdSplit(NO_SPLIT, 0.0, 0, 0);
    if (t != NO_TASK) {
        split = load_split(refs.splits, t);
    }
    if (split.axis == NO_SPLIT) {
        target.v[i] = source.v[i];
        if (axis_list == 0) {
            owners_next.v[position] = NO_TASK;
        }
        return;
    }
    // The task's entries start at the left child's begin.
    PointKdBuildStates state = build_state();
    uint begin = PointKdTasks(refs.tasks[1 - state.v[0].queue]).v[split.left_task].begin;
    U32s offsets = U32s(refs.offsets);
    uint left_before = offsets.v[i] - offsets.v[axis_list * refs.stride + begin];
    bool left = U32s(refs.flags).v[i] != 0;
    uint to = left ? begin + left_before : begin + split.left_count + (position - begin - left_before);
    target.v[axis_list * refs.stride + to] = source.v[i];
    if (axis_list == 0) {
        owners_next.v[to] = left ? split.left_task : split.left_task + 1;
    }
}
