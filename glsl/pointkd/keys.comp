#version 460
// The first step of a point kd-tree build: for each point and axis, the sortable bits of its
// coordinate as a key and the point's index as the value, in three lists (one per axis) that
// the radix sort orders; every list position starts owned by the root's task.
#include "pointkd/build.glsl"

void main() {
    load_refs();
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= refs.count) {
        return;
    }
    vec3 p = point(i);
    for (uint a = 0; a < 3; ++a) {
        U32s(refs.keys).v[a * refs.stride + i] = float_to_ordered(floatBitsToUint(p[a]));
        U32s(refs.lists[0]).v[a * refs.stride + i] = i;
    }
    U32s(refs.owners[0]).v[i] = 0;
}
