// What the renderer's kernels share: the scene's buffers (positions, normals, triangles, a
// material per triangle), lights, and the surface point a primary hit describes. Mirrors
// src/render/scene_gpu.rs (Material, GpuLight) and cpu/render.rs.
#ifndef CANOPY_SHADING
#define CANOPY_SHADING
#include "prelude.glsl"
#include "geometry.glsl"
#include "ray.glsl"

struct Material {
    vec3 albedo;
    float checker_scale; // > 0: the albedo alternates with its half on a world-space xz checker
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Materials { Material v[]; };

const uint LIGHT_DIRECTIONAL = 0u;
const uint LIGHT_POINT = 1u;

struct Light {
    vec3 vector; // direction the light travels (directional) or position (point)
    uint kind;
    vec3 intensity;
    float pad;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Lights { Light v[]; };

struct SceneRefs {
    uint64_t positions;          // vec3 per vertex
    uint64_t normals;            // vec3 per vertex
    uint64_t triangles;          // uvec3 per triangle
    uint64_t triangle_materials; // u32 per triangle
    uint64_t materials;          // Material per material id
};

struct SurfacePoint {
    vec3 position;
    vec3 geometric_normal; // unit, facing the ray's origin
    vec3 shading_normal;   // interpolated vertex normal, on the geometric normal's side
    vec3 albedo;
};

SurfacePoint surface_at(SceneRefs scene, Ray ray, Hit hit) {
    uvec3 t = UVec3s(scene.triangles).v[hit.triangle];
    Vec3s positions = Vec3s(scene.positions);
    Vec3s normals = Vec3s(scene.normals);
    vec3 a = positions.v[t.x];
    vec3 b = positions.v[t.y];
    vec3 c = positions.v[t.z];
    float w = 1.0 - hit.u - hit.v;
    SurfacePoint s;
    s.position = w * a + hit.u * b + hit.v * c;
    vec3 g = normalize(cross(b - a, c - a));
    if (dot(g, ray.direction) > 0.0) {
        g = -g;
    }
    s.geometric_normal = g;
    vec3 n = w * normals.v[t.x] + hit.u * normals.v[t.y] + hit.v * normals.v[t.z];
    float len = length(n);
    n = len > 0.0 ? n / len : g;
    if (dot(n, g) < 0.0) {
        n = -n;
    }
    s.shading_normal = n;
    Material m = Materials(scene.materials).v[U32s(scene.triangle_materials).v[hit.triangle]];
    s.albedo = m.albedo;
    if (m.checker_scale > 0.0) {
        ivec2 cell = ivec2(floor(s.position.xz / m.checker_scale));
        if (((cell.x + cell.y) & 1) != 0) {
            s.albedo *= 0.5;
        }
    }
    return s;
}

// Direction towards the light and the distance scale of its shadow ray (1: the ray's
// direction reaches the light; INF for directional lights), and the irradiance arriving.
void light_towards(Light light, vec3 p, out vec3 to_light, out float tmax, out vec3 irradiance) {
    if (light.kind == LIGHT_POINT) {
        to_light = light.vector - p;
        tmax = 1.0;
        irradiance = light.intensity / max(dot(to_light, to_light), 1e-12);
    } else {
        to_light = -light.vector;
        tmax = INF;
        irradiance = light.intensity;
    }
}

#endif
