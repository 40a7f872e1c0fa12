#version 460
// The first path list of a frame: a pinhole camera's ray through the centre of every pixel,
// in row-major order from the top-left, with throughput 1; direction = forward + x * right +
// y * up with x, y in [-1, 1] (right and up scaled by the field of view and aspect ratio on the
// host). Unnormalised directions are fine: hits are found for t in (0, inf). It also starts the
// frame's sums: each pixel's fixed-point radiance is zeroed by its invocation, and invocation 0
// zeroes the bounce counters (common/paths.glsl).
#include "../common/prelude.glsl"
#include "../common/paths.glsl"

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
    uint64_t radiance_address; // out: 3 u64 per pixel, zeroed
    uint64_t counters_address; // out: BounceCounters per bounce, zeroed
} pc;

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
    float x = (float(i % pc.width) + 0.5) / float(pc.width) * 2.0 - 1.0;
    float y = 1.0 - (float(i / pc.width) + 0.5) / float(pc.height) * 2.0;
    list_rays(pc.list_address, pc.capacity).v[i] =
        Ray(pc.origin, 0.0, pc.forward + x * pc.right + y * pc.up, INF);
    list_payloads(pc.list_address, pc.capacity).v[i] = RayPayload(vec3(1.0), i);
    U64s sums = U64s(pc.radiance_address);
    sums.v[3 * i] = 0;
    sums.v[3 * i + 1] = 0;
    sums.v[3 * i + 2] = 0;
}
