#version 460
// The last step of a point kd-tree build: each entry of the final order (the current first
// list, leaves' runs in place) as the queries read it: the point's position and index; and
// the tree's header (its node and point counts, and R).
#include "pointkd/build.glsl"

void main() {
    load_refs();
    uint e = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (e == 0) {
        // Field by field: a whole-struct store crashes spirv-opt.
        PointKdHeaders header = PointKdHeaders(refs.header);
        header.h.node_count = build_state().v[0].node_count;
        header.h.query_radius = refs.radius;
        header.h.point_count = refs.count;
    }
    if (e >= refs.count) {
        return;
    }
    uint id = U32s(refs.lists[build_state().v[0].parity]).v[e];
    PointEntries(refs.entries).v[e] = vec4(point(id), uintBitsToFloat(id));
}
