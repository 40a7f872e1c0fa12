#version 460
// The caustic radiance at each gather point (seed 000 §5.3; Jensen 2001): the photons within
// the point's radius r (the k-th nearest photon's distance, bounded, from the k-nearest
// search), their power weighted by the cone filter w = 1 - d / r and normalised by (1 - 2/3) pi r^2, times
// the gather's weight (the path's throughput times the surface's albedo, in the renderer's
// units: a diffuse surface reflects albedo x irradiance), added to the gather's pixel.
// Gathers whose radius holds no photon add nothing.
#include "../common/prelude.glsl"
#include "../common/paths.glsl"
#include "pointkd/search.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t nodes_address;     // the photon tree's nodes
    uint64_t entries_address;   // its entries (position, stored photon index)
    uint64_t powers_address;    // vec3 power per stored photon
    uint64_t positions_address; // vec3 per gather
    uint64_t payloads_address;  // RayPayload per gather: weight, pixel
    uint64_t found_address;     // uvec2 per gather: photons within, radius bits (the search's KnnFound)
    uint64_t count_address;     // gathers (u32)
    uint64_t radiance_address;  // 3 u64 per pixel
    uint capacity;              // the most gathers
    uint pad;
} pc;

float gather_radius = 0.0;
vec3 gathered = vec3(0.0);

void visit_point(vec4 entry, float d2) {
    vec3 power = Vec3s(pc.powers_address).v[floatBitsToUint(entry.w)];
    gathered += power * (1.0 - sqrt(d2) / gather_radius);
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= min(U32s(pc.count_address).v[0], pc.capacity)) {
        return;
    }
    if (U32s(pc.found_address).v[2 * i] == 0u) {
        return;
    }
    gather_radius = uintBitsToFloat(U32s(pc.found_address).v[2 * i + 1]);
    vec3 q = Vec3s(pc.positions_address).v[i];
    range_search(pc.nodes_address, pc.entries_address, q, gather_radius * gather_radius);
    RayPayload payload = RayPayloads(pc.payloads_address).v[i];
    float area = (1.0 - 2.0 / 3.0) * 3.14159265358979 * gather_radius * gather_radius;
    add_radiance(pc.radiance_address, payload.pixel, payload.weight * gathered / area);
}
