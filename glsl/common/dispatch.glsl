// Workgroup grids within the device's per-dimension limit `max_per_dim` (at most 65535, so
// x * y fits in 32 bits), matching src/vk/recorder.rs grid_for; kernels flatten them with
// flat_workgroup_id (common/prelude.glsl) and skip the groups past the end.
//
// fold_grid(groups): [groups, 1, 1] when it fits, else x = max_per_dim and as many rows y
// (then layers z) as needed. Example: 70,000 groups with a limit of 65,535 -> {65535, 2, 1};
// with a limit of 64 -> {64, 64, 18}. Every component is non-decreasing in `groups`, so
// producers that append to a list can keep its consumer's grid current with atomicMax
// (grow_grid), with no pass that converts a count into dispatch arguments.
#ifndef CANOPY_DISPATCH
#define CANOPY_DISPATCH
#include "prelude.glsl"

uvec3 fold_grid(uint groups, uint max_per_dim) {
    uint x = min(groups, max_per_dim);
    if (x == 0u) {
        return uvec3(0u, 1u, 1u);
    }
    uint y = min((groups + x - 1u) / x, max_per_dim);
    uint z = (groups + x * y - 1u) / (x * y);
    return uvec3(x, y, z);
}

// The VkDispatchIndirectCommand of a dispatch over `count` elements: ceil(count /
// elements_per_group) workgroups, at least `min_groups`, folded.
uvec3 dispatch_grid(uint count, uint elements_per_group, uint min_groups, uint max_per_dim) {
    uint groups = max((count + elements_per_group - 1u) / elements_per_group, min_groups);
    return fold_grid(groups, max_per_dim);
}

// Producers grow grids in steps of this many workgroups: a grid may cover up to GRID_STEP - 1
// groups past the list's end (they find nothing to do and return), and only reservations that
// cross a step touch the grid.
const uint GRID_STEP = 32u;

// Grows the folded grid at `grid_address` ({x, y, z} u32s) from covering `first` workgroups to
// covering `end`, for a producer that reserved the slots [first, end) of a list with an atomic
// add. Reservations are contiguous, so the one that reserved up to `first` has already grown
// the grid to cover `first`: a component is raised (atomicMax) only where covering `end`, in
// steps of GRID_STEP, changes it. Example with a limit of 65,535: reserving [40, 41) changes
// nothing ({64, 1, 1} either way); [63, 66) raises x to 96; [65500, 65510) raises x to 65,535 and y to 2. So
// the contended atomics of a list are one add per reservation and one max per step.
void grow_grid(uint64_t grid_address, uint first, uint end, uint max_per_dim) {
    uint steps_before = (first + GRID_STEP - 1u) / GRID_STEP;
    uint steps_after = (end + GRID_STEP - 1u) / GRID_STEP;
    if (steps_after == steps_before) {
        return; // the common case: no division, no atomic
    }
    uvec3 before = fold_grid(steps_before * GRID_STEP, max_per_dim);
    uvec3 after = fold_grid(steps_after * GRID_STEP, max_per_dim);
    U32s args = U32s(grid_address);
    [[unroll]] for (uint d = 0; d < 3; ++d) {
        if (after[d] != before[d]) {
            atomicMax(args.v[d], after[d]);
        }
    }
}

#endif
