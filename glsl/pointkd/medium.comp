#version 460
// The medium-node stage, one workgroup per medium task (above T points, at most
// medium_limit()): the large-node levels of its subtree in one dispatch, the workgroup in
// place of the grid. Level by level: one invocation per task decides it as split.comp does
// (decide_large_task), the children of the level's splits queued in shared memory; then the
// workgroup partitions the task's entries of the three lists stably within every split node,
// as flags.comp, the scan and scatter.comp do over the whole lists, in chunks of the
// workgroup's size with the running count of left elements carried. Example: a task of 2,000
// points takes about six levels, each one pass over its 6,000 list elements (24 chunks of 256
// invocations), where the grid took six rounds of nine dispatches each over every list element.
// The lists alternate between the two buffers level by level and end in the buffer the levels
// left current (copied back when the task's levels ended in the other), where small.comp and
// entries.comp read them; tasks of at most T points are appended to the small tasks.
#include "pointkd/build.glsl"
#include "../common/workgroup_scan.glsl"

// The tasks of the level and of the next one, and each task's split.
shared PointKdTask level_tasks[2][MEDIUM_LEVEL_TASKS];
shared uint level_counts[2];
shared uint split_axis[MEDIUM_LEVEL_TASKS];
shared float split_plane[MEDIUM_LEVEL_TASKS];
shared uint split_left_count[MEDIUM_LEVEL_TASKS];
shared uint split_left_task[MEDIUM_LEVEL_TASKS];
// Per list and split task: the left elements counted before its first entry in that list.
shared uint segment_start[3][MEDIUM_LEVEL_TASKS];

PointKdSplit level_split(uint t) {
    return PointKdSplit(split_axis[t], split_plane[t], split_left_count[t], split_left_task[t]);
}

void main() {
    load_refs();
    PointKdBuildStates state = build_state();
    uint m = flat_workgroup_id();
    if (m >= min(state.v[0].medium_tasks, refs.medium_capacity)) {
        return;
    }
    uint lid = gl_LocalInvocationIndex;
    PointKdTask root = PointKdTasks(refs.medium).v[m];
    uint begin = root.begin;
    uint len = root.end - root.begin;
    uint elements = 3 * len;
    uint parity = state.v[0].parity;
    uint current = parity;
    // Every entry starts owned by the root, task 0 of the first level.
    for (uint p = begin + lid; p < root.end; p += WORKGROUP_SIZE) {
        CoherentU32s(refs.owners[current]).v[p] = 0;
    }
    if (lid == 0) {
        level_tasks[0][0] = root;
        level_counts[0] = 1;
        level_counts[1] = 0;
    }
    memoryBarrierBuffer();
    memoryBarrierShared();
    barrier();
    for (uint q = 0; level_counts[q] > 0; q = 1 - q) {
        uint count = level_counts[q];
        // Decide the level's tasks; splits queue their children.
        for (uint t = lid; t < count; t += WORKGROUP_SIZE) {
            PointKdTask task = level_tasks[q][t];
            vec3 lo;
            vec3 hi;
            PointKdSplit split = decide_large_task(task, refs.lists[current], lo, hi);
            if (split.axis != NO_SPLIT) {
                uint children = atomicAdd(state.v[0].node_count, 2);
                uint next = atomicAdd(level_counts[1 - q], 2);
                if (children + 2 > refs.node_capacity || next + 2 > MEDIUM_LEVEL_TASKS) {
                    overflow_leaf(task, lo, hi);
                    split.axis = NO_SPLIT;
                } else {
                    split_node(task, split, lo, hi, children, level_tasks[1 - q][next], level_tasks[1 - q][next + 1]);
                    split.left_task = next;
                }
            }
            split_axis[t] = split.axis;
            split_plane[t] = split.plane;
            split_left_count[t] = split.left_count;
            split_left_task[t] = split.left_task;
        }
        memoryBarrierShared();
        barrier();
        if (level_counts[1 - q] > 0) {
            // The stable partition of the task's entries of every list, in chunks.
            CoherentU32s source = CoherentU32s(refs.lists[current]);
            CoherentU32s target = CoherentU32s(refs.lists[1 - current]);
            CoherentU32s owners = CoherentU32s(refs.owners[current]);
            CoherentU32s owners_next = CoherentU32s(refs.owners[1 - current]);
            uint carried = 0;
            for (uint base = 0; base < elements; base += WORKGROUP_SIZE) {
                uint e = base + lid;
                uint list = e < elements ? e / len : 0;
                uint position = e < elements ? begin + e % len : begin;
                uint i = list * refs.stride + position;
                uint t = e < elements ? owners.v[position] : NO_TASK;
                PointKdSplit split = PointKdSplit(NO_SPLIT, 0.0, 0, 0);
                if (t != NO_TASK) {
                    split = level_split(t);
                }
                uint id = e < elements ? source.v[i] : 0;
                bool left = split.axis != NO_SPLIT && point(id)[split.axis] < split.plane;
                uint total;
                uint left_before = carried + workgroup_exclusive_add(left ? 1u : 0u, total);
                carried += total;
                uint task_begin = split.axis != NO_SPLIT ? level_tasks[1 - q][split.left_task].begin : 0;
                if (split.axis != NO_SPLIT && position == task_begin) {
                    segment_start[list][t] = left_before;
                }
                memoryBarrierShared();
                barrier();
                if (e < elements) {
                    if (split.axis == NO_SPLIT) {
                        target.v[i] = id;
                        if (list == 0) {
                            owners_next.v[position] = NO_TASK;
                        }
                    } else {
                        uint before = left_before - segment_start[list][t];
                        uint to = partition_target(position, task_begin, split.left_count, left, before);
                        target.v[list * refs.stride + to] = id;
                        if (list == 0) {
                            owners_next.v[to] = left ? split.left_task : split.left_task + 1;
                        }
                    }
                }
            }
            current = 1 - current;
        }
        if (lid == 0) {
            level_counts[q] = 0;
        }
        memoryBarrierBuffer();
        memoryBarrierShared();
        barrier();
    }
    // The lists back in the buffer every later step reads.
    if (current != parity) {
        CoherentU32s source = CoherentU32s(refs.lists[current]);
        CoherentU32s target = CoherentU32s(refs.lists[parity]);
        for (uint e = lid; e < elements; e += WORKGROUP_SIZE) {
            uint i = (e / len) * refs.stride + begin + e % len;
            target.v[i] = source.v[i];
        }
    }
}
