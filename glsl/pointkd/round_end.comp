#version 460
// The end of a level: when its lists were partitioned the next ones become current; the tasks
// appended become the next level's.
#include "pointkd/build.glsl"

void main() {
    load_refs();
    if (gl_GlobalInvocationID.x != 0) {
        return;
    }
    PointKdBuildStates state = build_state();
    PointKdBuildState s = state.v[0];
    if (s.to_partition != 0) {
        s.parity = 1 - s.parity;
    }
    s.tasks = min(s.next_tasks, refs.task_capacity);
    s.next_tasks = 0;
    s.queue = 1 - s.queue;
    s.to_partition = 0;
    state.v[0] = s;
}
