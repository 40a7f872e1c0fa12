#version 460
// Turns a count produced on the GPU into a VkDispatchIndirectCommand, so that the next dispatch
// covers exactly ceil(count / elements_per_group) workgroups (zero when the count is zero) with
// no CPU read-back. Counts above `max_count` are clamped to it: the consumer's buffers were
// sized for `max_count`, and `overflow` (when set) receives the count that did not fit so the
// host can grow and rerun. Groups above the device's per-dimension limit become a 2D grid,
// see common/dispatch.glsl. One invocation does the work.
#include "../common/prelude.glsl"
#include "../common/dispatch.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t count_address;    // u32 count written by earlier GPU work
    uint64_t args_address;     // VkDispatchIndirectCommand {x, y, z}
    uint64_t overflow_address; // optional: receives the requested count when clamped
    uint elements_per_group;
    uint min_groups;           // e.g. 1 for kernels that must write a result for empty input
    uint max_count;
    uint max_groups_per_dim;
} pc;

void main() {
    if (gl_GlobalInvocationID.x != 0) {
        return;
    }
    uint count = U32s(pc.count_address).v[0];
    if (count > pc.max_count) {
        if (pc.overflow_address != 0ul) {
            atomicMax(U32s(pc.overflow_address).v[0], count);
        }
        count = pc.max_count;
    }
    uvec3 grid = dispatch_grid(count, pc.elements_per_group, pc.min_groups, pc.max_groups_per_dim);
    U32s args = U32s(pc.args_address);
    args.v[0] = grid.x;
    args.v[1] = grid.y;
    args.v[2] = grid.z;
}
