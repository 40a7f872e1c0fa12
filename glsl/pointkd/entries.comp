#version 460
// The last step of a point kd-tree build: each entry of the final order (the current first
// list, leaves' runs in place) as the queries read it: the point's position and index.
#include "pointkd/build.glsl"

void main() {
    load_refs();
    uint e = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (e >= refs.count) {
        return;
    }
    uint id = U32s(refs.lists[build_state().v[0].parity]).v[e];
    PointEntries(refs.entries).v[e] = vec4(point(id), uintBitsToFloat(id));
}
