// The wavefront renderer's work lists and image accumulator (src/render/mod.rs):
//
// - A ray list of capacity C is one buffer: C rays (Ray), then C payloads (RayPayload: the
//   pixel the ray contributes to and its weight), then C hits (Hit), so the tracer reads the
//   rays and writes the hits in place. Path lists (camera rays, then reflected and refracted
//   rays) carry a path's throughput as the weight; shadow lists carry the radiance the shadow
//   ray adds to its pixel when it reaches its light.
// - Lists are filled by appending: append_slots reserves slots with one atomicAdd per
//   subgroup (a subgroup sum, an exclusive subgroup scan for each lane's offset, and the
//   base broadcast from the elected lane). Appends past the capacity are not written; the
//   counters keep the requested total, which close_lists.comp clamps (the host reports the
//   difference as dropped rays).
// - Radiance is summed per pixel in 64-bit fixed point (RADIANCE_SCALE units per unit of
//   linear radiance, 2^-24 resolution) with integer atomicAdd: integer addition is associative,
//   so the sum does not depend on the order the GPU adds contributions in, and the CPU
//   reference (src/render/cpu.rs) adds the same integers to the same total. Each contribution
//   is clamped per channel to [0, RADIANCE_MAX] (NaN to 0) before conversion; the image clamps
//   to 1 anyway, so the clamp never changes a pixel, and it bounds a pixel's sum: 2^64 units
//   hold 2^32 contributions of RADIANCE_MAX, far more than a pixel's paths can make.
#ifndef CANOPY_PATHS
#define CANOPY_PATHS
#include "prelude.glsl"
#include "ray.glsl"

struct RayPayload {
    vec3 weight; // path throughput, or a shadow ray's radiance if unoccluded
    uint pixel;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer RayPayloads { RayPayload v[]; };

Rays list_rays(uint64_t list, uint capacity) {
    return Rays(list);
}

RayPayloads list_payloads(uint64_t list, uint capacity) {
    return RayPayloads(list + uint64_t(capacity) * 32ul);
}

Hits list_hits(uint64_t list, uint capacity) {
    return Hits(list + uint64_t(capacity) * 48ul);
}

// The counters of one bounce (BounceCounters in src/render/mod.rs), one per bounce in the
// counter buffer, zeroed every frame by camera_rays.comp and copied to the host with the image
// (rays dropped = appended - clamped).
struct BounceCounters {
    uint appended_rays;        // rays the bounce's shading appended to the next path list
    uint appended_shadow_rays; // shadow rays it appended to the shadow list
    uint rays;                 // rays in the next path list: appended_rays clamped to capacity
    uint shadow_rays;          // shadow rays in the list: appended_shadow_rays clamped
    uvec4 shade_groups;        // dispatch size of the next bounce's shading (x, y, z, 0)
    uvec4 shadow_groups;       // dispatch size of this bounce's shadow accumulation
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer BounceCounterRefs { BounceCounters v[]; };

const float RADIANCE_SCALE = 16777216.0; // 2^24 fixed-point units per unit of radiance
const float RADIANCE_MAX = 256.0;        // per contribution and channel

// Reserves `n` consecutive list slots for each invocation from the u32 counter at `counter`
// and returns the first; one atomic per subgroup. Call from uniform control flow.
uint append_slots(uint64_t counter, uint n) {
    uint total = subgroupAdd(n);
    uint base = 0;
    if (subgroupElect() && total != 0u) {
        base = atomicAdd(U32s(counter).v[0], total);
    }
    return subgroupBroadcastFirst(base) + subgroupExclusiveAdd(n);
}

// Adds radiance `c` to `pixel`'s fixed-point sum (three u64 per pixel).
void add_radiance(uint64_t radiance, uint pixel, vec3 c) {
    U64s sums = U64s(radiance);
    [[unroll]] for (uint k = 0; k < 3; ++k) {
        float x = c[k] > 0.0 ? min(c[k], RADIANCE_MAX) : 0.0;
        uint64_t units = uint64_t(x * RADIANCE_SCALE + 0.5);
        if (units != 0ul) {
            atomicAdd(sums.v[pixel * 3 + k], units);
        }
    }
}

#endif
