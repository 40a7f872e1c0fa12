#version 460
// The colour of every pixel: sky for primary misses; otherwise Lambert shading with the
// interpolated normal, summed over the lights whose shadow ray found nothing, plus a small
// ambient term. Written as sRGB-encoded RGBA8 (gamma 2.2 approximation). cpu/render.rs
// computes the same image.
#include "../common/prelude.glsl"
#include "../common/shading.glsl"

layout(push_constant, scalar) uniform Push {
    SceneRefs scene;
    uint64_t primary_rays_address; // Ray per pixel
    uint64_t primary_hits_address; // Hit per pixel
    uint64_t lights_address;       // Light per light
    uint64_t shadow_hits_address;  // Hit per pixel and light
    uint64_t image_address;        // out: RGBA8 per pixel
    uint pixels;
    uint light_count;
    float ambient;
} pc;

vec3 sky(vec3 direction) {
    float up = clamp(normalize(direction).y * 0.5 + 0.5, 0.0, 1.0);
    return mix(vec3(0.85, 0.85, 0.8), vec3(0.35, 0.55, 0.9), up);
}

uint pack_srgb(vec3 linear) {
    uvec3 c = uvec3(round(pow(clamp(linear, 0.0, 1.0), vec3(1.0 / 2.2)) * 255.0));
    return c.r | (c.g << 8) | (c.b << 16) | (255u << 24);
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= pc.pixels) {
        return;
    }
    Ray ray = Rays(pc.primary_rays_address).v[i];
    Hit hit = Hits(pc.primary_hits_address).v[i];
    vec3 colour;
    if (hit.triangle == MISS) {
        colour = sky(ray.direction);
    } else {
        SurfacePoint s = surface_at(pc.scene, ray, hit);
        colour = s.albedo * pc.ambient;
        for (uint l = 0; l < pc.light_count; ++l) {
            if (Hits(pc.shadow_hits_address).v[l * pc.pixels + i].triangle != MISS) {
                continue;
            }
            vec3 to_light;
            float tmax;
            vec3 irradiance;
            light_towards(Lights(pc.lights_address).v[l], s.position, to_light, tmax, irradiance);
            if (dot(to_light, s.geometric_normal) <= 0.0) {
                continue; // the surface faces away: no shadow ray was traced
            }
            float cosine = max(dot(s.shading_normal, normalize(to_light)), 0.0);
            colour += s.albedo * irradiance * cosine;
        }
    }
    U32s(pc.image_address).v[i] = pack_srgb(colour);
}
