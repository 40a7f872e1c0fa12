#version 460
// The first path list of one sample of a frame: a pinhole camera's ray through every pixel,
// in row-major order from the top-left, with throughput 1; direction = forward + x * right +
// y * up with x, y in [-1, 1] (right and up scaled by the field of view and aspect ratio on the
// host). Unnormalised directions are fine: hits are found for t in (0, inf). With one sample
// the ray passes through the pixel's centre; with more, through a point of the sample's
// stratum chosen by a hash of the pixel and the sample (sample_offset; src/geom/view.rs is the
// reference). Invocation 0 zeroes the bounce counters (common/paths.glsl), and in the first
// sample each pixel's fixed-point radiance is zeroed by its invocation: later samples add to
// it.
#include "../common/prelude.glsl"
#include "../common/paths.glsl"
#include "../common/sampling.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t list_address;     // out: the camera rays' path list
    vec3 origin;
    uint width;
    vec3 forward;
    uint height;
    vec3 right;
    uint capacity;             // of the list
    vec3 up;
    uint counter_words;        // u32 words of bounce counters to zero
    uint64_t radiance_address; // out: 3 u64 per pixel, zeroed by sample 0
    uint64_t counters_address; // out: BounceCounters per bounce, zeroed
    uint sample_index;         // this sample
    uint samples;              // per pixel
} pc;

// Where sample `s` of `n` falls in `pixel`, in [0, 1)^2 from its top-left corner: the centre
// for one sample, else a hashed point of stratum s of the pixel's m x m strata,
// m = ceil(sqrt(n)).
vec2 sample_offset(uint pixel, uint s, uint n) {
    if (n <= 1u) {
        return vec2(0.5);
    }
    uint strata = uint(ceil(sqrt(float(n))));
    strata = strata * strata < n ? strata + 1u : strata;
    uint hash = sample_hash((pixel * 0x9e3779b9u) ^ s);
    vec2 jitter = vec2(unit_float(hash), unit_float(sample_hash(hash)));
    return (vec2(float(s % strata), float(s / strata % strata)) + jitter) / float(strata);
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i == 0) {
        for (uint w = 0; w < pc.counter_words; ++w) {
            U32s(pc.counters_address).v[w] = 0;
        }
    }
    if (i >= pc.width * pc.height) {
        return;
    }
    vec2 offset = sample_offset(i, pc.sample_index, pc.samples);
    float x = (float(i % pc.width) + offset.x) / float(pc.width) * 2.0 - 1.0;
    float y = 1.0 - (float(i / pc.width) + offset.y) / float(pc.height) * 2.0;
    list_rays(pc.list_address, pc.capacity).v[i] =
        Ray(pc.origin, 0.0, pc.forward + x * pc.right + y * pc.up, INF);
    list_payloads(pc.list_address, pc.capacity).v[i] = RayPayload(vec3(1.0), i);
    if (pc.sample_index == 0u) {
        U64s sums = U64s(pc.radiance_address);
        sums.v[3 * i] = 0;
        sums.v[3 * i + 1] = 0;
        sums.v[3 * i + 2] = 0;
    }
}
