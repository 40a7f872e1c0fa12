#version 460
// The frame's image: each pixel's fixed-point radiance sum (common/paths.glsl) back to linear
// RGB, times 1 / samples per pixel (the samples' mean), clamped to [0, 1] and written as sRGB-encoded RGBA8 (the sRGB transfer function,
// common/srgb.glsl), opaque.
// src/render/cpu.rs packs the same way.
#include "../common/prelude.glsl"
#include "../common/paths.glsl"
#include "../common/srgb.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t radiance_address; // 3 u64 per pixel
    uint64_t image_address;    // out: RGBA8 per pixel
    uint pixels;
    float sample_weight; // 1 / samples per pixel
} pc;

uint pack_srgb(vec3 linear) {
    vec3 v = clamp(linear, 0.0, 1.0);
    uvec3 c = uvec3(round(vec3(srgb_encode(v.r), srgb_encode(v.g), srgb_encode(v.b)) * 255.0));
    return c.r | (c.g << 8) | (c.b << 16) | (255u << 24);
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= pc.pixels) {
        return;
    }
    U64s sums = U64s(pc.radiance_address);
    vec3 units = vec3(float(sums.v[3 * i]), float(sums.v[3 * i + 1]), float(sums.v[3 * i + 2]));
    U32s(pc.image_address).v[i] = pack_srgb(units * (1.0 / RADIANCE_SCALE) * pc.sample_weight);
}
