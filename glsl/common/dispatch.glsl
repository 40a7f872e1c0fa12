// The workgroup grid of an indirect dispatch over `count` elements, as a
// VkDispatchIndirectCommand {x, y, z}: ceil(count / elements_per_group) groups, at least
// `min_groups`, split into a 2D grid when above the device's per-dimension limit (matching
// src/vk/recorder.rs grid_for; kernels flatten it with flat_workgroup_id). Example: 70,000
// groups with a limit of 65,535 -> {35,000, 2, 1}.
#ifndef CANOPY_DISPATCH
#define CANOPY_DISPATCH

uvec3 dispatch_grid(uint count, uint elements_per_group, uint min_groups, uint max_groups_per_dim) {
    uint groups = max((count + elements_per_group - 1) / elements_per_group, min_groups);
    uint y = (groups + max_groups_per_dim - 1) / max_groups_per_dim;
    uint x = y <= 1 ? groups : (groups + y - 1) / y;
    return uvec3(x, max(y, 1u), 1u);
}

#endif
