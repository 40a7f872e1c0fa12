#version 460
// A kernel that does nothing: `canopy bench dispatch` records chains of it (one dispatch after
// another, with or without a compute->compute barrier between them) to measure what a
// dispatch costs on its own, with one workgroup or with enough to fill the GPU. The timed
// chains push no counter, so every invocation tests one push constant and ends. The counted
// chain pushes a counter, and the first invocation of each workgroup asked for adds one to
// it (a grid folded into 2D or 3D holds a few more, which skip it): the workgroups that ran,
// which the bench checks against the dispatches recorded times their workgroups (e.g. 100
// dispatches of 2048 workgroups: 204,800).
#include "../common/prelude.glsl"

layout(push_constant, scalar) uniform Push {
    // A u32 counter of workgroups run, or 0: count nothing.
    uint64_t counter_address;
    // Workgroups asked for.
    uint group_count;
} pc;

void main() {
    if (pc.counter_address != 0ul && gl_LocalInvocationID.x == 0
            && flat_workgroup_id() < pc.group_count) {
        atomicAdd(U32s(pc.counter_address).v[0], 1u);
    }
}
