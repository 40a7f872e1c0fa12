#version 460
// Adds the radiance of every shadow ray that reached its light (its any-hit query found
// nothing) to its pixel's fixed-point sum. The shading kernel computed each shadow ray's
// contribution (path throughput x albedo x irradiance x cosine) when it appended the ray, so
// this pass only tests the hit and adds; occluded rays add nothing.
#include "../common/prelude.glsl"
#include "../common/paths.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t list_address;     // the shadow list (rays, payloads, hits)
    uint64_t count_address;    // its length (u32, written by close_lists.comp)
    uint64_t radiance_address; // 3 u64 per pixel
    uint capacity;             // of the list
    uint pad;
} pc;

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= U32s(pc.count_address).v[0]) {
        return;
    }
    if (list_hits(pc.list_address, pc.capacity).v[i].triangle == MISS) {
        RayPayload shadow = list_payloads(pc.list_address, pc.capacity).v[i];
        add_radiance(pc.radiance_address, shadow.pixel, shadow.weight);
    }
}
