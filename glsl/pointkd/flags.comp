#version 460
// For every element of the three lists, whether its point goes to the left child of its
// task's split this level (the scan input of the stable partition; 0 where nothing splits).
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
    uint flag = 0;
    if (position < refs.count) {
        uint t = U32s(refs.owners[current]).v[position];
        if (t != NO_TASK) {
            U32s words = U32s(refs.splits);
            uint axis = words.v[4 * t];
            if (axis != NO_SPLIT) {
                float plane = F32s(refs.splits).v[4 * t + 1];
                uint id = U32s(refs.lists[current]).v[i];
                flag = point(id)[axis] < plane ? 1u : 0u;
            }
        }
    }
    U32s(refs.flags).v[i] = flag;
}
