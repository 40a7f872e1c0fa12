#version 460
// The first hit of every pixel's camera ray as data for compositing (arbitrary output
// variables), one invocation per camera path after bounce 0's trace: the depth along the
// view axis, the shading normal and the albedo the shading uses (common/shading.glsl
// surface_at, the same surface the image is shaded from), the world position and the hit
// triangle's material (canopy's object id) and instance, and the coverage (1 hit, 0 the sky; the sky's
// depth is infinite). With several samples per pixel, the first sample writes every variable
// and the later ones add their albedo and coverage, each weighted 1 / samples, to the first's:
// those two are means, the rest the first sample's. src/render/cpu.rs primary_aovs is the
// reference.
#include "../common/prelude.glsl"
#include "../common/shading.glsl"
#include "../common/paths.glsl"

#include "pixel_aovs.glsl"

layout(push_constant, scalar) uniform Push {
    SceneRefs scene;
    uint64_t list_address; // bounce 0's path list (the camera rays and their hits)
    uint64_t aovs_address; // out: PixelAovs per pixel
    vec3 forward;          // the camera's unit view direction
    uint capacity;         // of the path list
    uint pixels;
    uint sample_index;     // 0 writes every variable, later samples add to the means
    float sample_weight;   // 1 / samples per pixel
    float cone_spread;     // the camera rays' spacing: textures at their cone's mip level
} pc;

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= pc.pixels) {
        return;
    }
    Ray ray = list_rays(pc.list_address, pc.capacity).v[i];
    Hit hit = list_hits(pc.list_address, pc.capacity).v[i];
    uint pixel = list_payloads(pc.list_address, pc.capacity).v[i].pixel;
    PixelAovsList out_aovs = PixelAovsList(pc.aovs_address);
    bool first = pc.sample_index == 0u;
    if (hit.triangle == MISS && !first) {
        return;
    }
    if (hit.triangle == MISS) {
        out_aovs.v[pixel].normal = vec3(0.0);
        out_aovs.v[pixel].depth = INF;
        out_aovs.v[pixel].albedo = vec3(0.0);
        out_aovs.v[pixel].object_id = MISS;
        out_aovs.v[pixel].instance_id = MISS;
        out_aovs.v[pixel].position = vec3(0.0);
        out_aovs.v[pixel].coverage = 0.0;
        return;
    }
    SurfacePoint s = surface_at(pc.scene, ray, hit, pc.cone_spread);
    if (!first) {
        out_aovs.v[pixel].albedo += s.colour * pc.sample_weight;
        out_aovs.v[pixel].coverage += pc.sample_weight;
        return;
    }
    out_aovs.v[pixel].normal = s.shading_normal;
    out_aovs.v[pixel].depth = dot(s.position - ray.origin, pc.forward);
    out_aovs.v[pixel].albedo = s.colour * pc.sample_weight;
    out_aovs.v[pixel].object_id = U32s(pc.scene.triangle_materials).v[hit.triangle];
    out_aovs.v[pixel].instance_id = scene_instance(pc.scene, hit.triangle);
    out_aovs.v[pixel].position = s.position;
    out_aovs.v[pixel].coverage = pc.sample_weight;
}
