#version 460
// The caustic gathers of one bounce (seed 000 §5.3): every path of the bounce's list whose
// closest hit is a diffuse surface appends a gather point, its position and the weight its
// caustic radiance is added with (the path's throughput times the surface's diffuse albedo,
// its colour times 1 - metallic, as the shading takes it) to its
// pixel, for glsl/photons/estimate.comp once the bounces are done. Appends past the list's
// capacity are counted, not written (close_lists.comp clamps the count).
#include "../common/prelude.glsl"
#include "../common/shading.glsl"
#include "../common/paths.glsl"

layout(push_constant, scalar) uniform Push {
    SceneRefs scene;
    uint64_t list_address;      // this bounce's path list
    uint64_t count_address;     // its length on the device (u32), or 0: host_count
    uint64_t positions_address; // out: vec3 per gather
    uint64_t payloads_address;  // out: RayPayload per gather
    uint64_t counters_address;  // the gathers' BounceCounters (appended_rays)
    uint capacity;              // of the path list
    uint host_count;
    uint gather_capacity;
    float cone_spread;          // bounce 0: the camera rays' spacing (surface_at); else 0
} pc;

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    bool diffuse = false;
    SurfacePoint s;
    RayPayload payload;
    if (i < element_count(pc.count_address, pc.host_count)) {
        Hit hit = list_hits(pc.list_address, pc.capacity).v[i];
        if (hit.triangle != MISS) {
            Ray ray = list_rays(pc.list_address, pc.capacity).v[i];
            payload = list_payloads(pc.list_address, pc.capacity).v[i];
            s = surface_at(pc.scene, ray, hit, pc.cone_spread);
            diffuse = s.kind == MATERIAL_DIFFUSE;
        }
    }
    uint slot = append_slots(pc.counters_address, diffuse ? 1u : 0u);
    if (diffuse && slot < pc.gather_capacity) {
        Vec3s(pc.positions_address).v[slot] = s.position;
        RayPayloads(pc.payloads_address).v[slot] =
            RayPayload(payload.weight * s.colour * (1.0 - s.metallic), payload.pixel);
    }
}
