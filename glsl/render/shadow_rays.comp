#version 460
// One shadow ray per pixel and light (light-major: ray l * pixels + pixel) from each primary
// hit towards the light, starting a small offset off the surface along its geometric normal
// so it cannot hit its own triangle. Pixels that hit nothing, and lights behind the surface,
// get an empty ray (tmin > tmax) that the tracer rejects at the root.
#include "../common/prelude.glsl"
#include "../common/shading.glsl"

layout(push_constant, scalar) uniform Push {
    SceneRefs scene;
    uint64_t primary_rays_address; // Ray per pixel
    uint64_t primary_hits_address; // Hit per pixel
    uint64_t lights_address;       // Light per light
    uint64_t shadow_rays_address;  // out: Ray per pixel and light
    uint pixels;
    uint light_count;
    float surface_offset;          // world-space offset along the normal
} pc;

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= pc.pixels) {
        return;
    }
    Ray ray = Rays(pc.primary_rays_address).v[i];
    Hit hit = Hits(pc.primary_hits_address).v[i];
    Rays shadow = Rays(pc.shadow_rays_address);
    const Ray EMPTY = Ray(vec3(0.0), 1.0, vec3(0.0, 0.0, 1.0), 0.0);
    if (hit.triangle == MISS) {
        for (uint l = 0; l < pc.light_count; ++l) {
            shadow.v[l * pc.pixels + i] = EMPTY;
        }
        return;
    }
    SurfacePoint s = surface_at(pc.scene, ray, hit);
    vec3 origin = s.position + s.geometric_normal * pc.surface_offset;
    for (uint l = 0; l < pc.light_count; ++l) {
        vec3 to_light;
        float tmax;
        vec3 irradiance;
        light_towards(Lights(pc.lights_address).v[l], s.position, to_light, tmax, irradiance);
        bool faces_light = dot(to_light, s.geometric_normal) > 0.0;
        shadow.v[l * pc.pixels + i] = faces_light ? Ray(origin, 0.0, to_light, tmax) : EMPTY;
    }
}
