#version 460
// Ends the appends of one bounce's shading: the requested list lengths are clamped to the
// lists' capacities (appends past them were not written; the host reads the counters back and
// reports the difference as dropped rays), and the dispatch sizes of the kernels that walk the
// lists next (the next bounce's shading, this bounce's shadow accumulation) are written, so
// the whole bounce loop is recorded ahead with no CPU read-back. One invocation does the work.
// Example: 70 rays appended to a list of capacity 64 -> rays = 64, 6 dropped.
#include "../common/prelude.glsl"
#include "../common/dispatch.glsl"
#include "../common/paths.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t counters_address; // this bounce's BounceCounters
    uint next_capacity;        // capacity of the next path list
    uint shadow_capacity;      // capacity of the shadow list
    uint elements_per_group;   // invocations per workgroup of the list kernels
    uint max_groups_per_dim;   // the device's per-dimension workgroup count limit
} pc;

void main() {
    if (gl_GlobalInvocationID.x != 0) {
        return;
    }
    BounceCounterRefs counters = BounceCounterRefs(pc.counters_address);
    uint rays = min(counters.v[0].appended_rays, pc.next_capacity);
    uint shadow_rays = min(counters.v[0].appended_shadow_rays, pc.shadow_capacity);
    counters.v[0].rays = rays;
    counters.v[0].shadow_rays = shadow_rays;
    uint per_group = pc.elements_per_group;
    counters.v[0].shade_groups = uvec4(dispatch_grid(rays, per_group, 0, pc.max_groups_per_dim), 0);
    counters.v[0].shadow_groups =
        uvec4(dispatch_grid(shadow_rays, per_group, 0, pc.max_groups_per_dim), 0);
}
