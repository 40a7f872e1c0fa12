#version 460
// The application's own kernel (examples/own_shader/main.rs): one invocation per pixel casts
// the application's camera ray through canopy's BVH (glsl/include/canopy_trace.glsl), shades its closest
// hit with a sun (its shadow ray an any-hit query) and counts the surfaces the ray passes
// through (every hit, through the application's canopy_on_hit). It writes, per pixel, the hit,
// whether the camera ray hits anything at all (the any-hit query of the same ray), the count
// and a grey level; and the closest and any hit of the same ray through the same scene as one
// instance under a two-level tree.
layout(local_size_x = 64) in;

#define CANOPY_ALL_HITS
#include "include/canopy_trace.glsl"

uint surfaces_crossed;

// Every hit of canopy_trace_all: counted, and the walk goes on.
bool canopy_on_hit(uint ray_id, float t, uint triangle, vec2 uv) {
    surfaces_crossed += 1u;
    return false;
}

struct PixelOut {
    CanopyHit closest;
    uint any_hit;
    uint crossed;
    float grey;
    uint pad;
    float instances_t;       // through the two-level tree: the closest hit's t,
    uint instances_triangle; // its triangle,
    uint instances_any_hit;  // and any hit
    uint pad2;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer PixelOuts { PixelOut v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Positions { vec3 v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Triangles { uvec3 v[]; };

layout(buffer_reference, scalar, buffer_reference_align = 16) buffer AppRays { Ray v[]; };

layout(push_constant, scalar) uniform Push {
    uint64_t nodes;     // canopy's Bvh::nodes
    uint64_t leaves;    // canopy's Bvh::leaf_triangles
    uint64_t rays;      // the application's camera rays (canopy's Ray layout)
    uint64_t positions; // the application's vertices
    uint64_t triangles; // and triangles
    uint64_t pixels;    // out: PixelOut per ray
    uint primitive_count;
    uint ray_count;
    CanopyInstances scene; // the same mesh as one instance under a top tree
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.ray_count) {
        return;
    }
    Ray ray = AppRays(pc.rays).v[i];
    vec3 eye = ray.origin;
    vec3 direction = ray.direction;
    CanopyHit hit = canopy_trace_closest(pc.nodes, pc.leaves, pc.primitive_count, eye,
                                         direction, ray.tmin, ray.tmax);
    bool any_hit = canopy_trace_any(pc.nodes, pc.leaves, pc.primitive_count, eye, direction,
                                    ray.tmin, ray.tmax);
    surfaces_crossed = 0u;
    canopy_trace_all(pc.nodes, pc.leaves, pc.primitive_count, i, eye, direction, ray.tmin,
                     ray.tmax);
    float grey = 0.15; // the sky
    if (hit.triangle != MISS) {
        uvec3 t = Triangles(pc.triangles).v[hit.triangle];
        Positions p = Positions(pc.positions);
        vec3 n = normalize(cross(p.v[t.y] - p.v[t.x], p.v[t.z] - p.v[t.x]));
        n = dot(n, direction) > 0.0 ? -n : n;
        vec3 to_sun = normalize(vec3(0.4, 1.0, 0.3));
        vec3 point = eye + hit.t * direction + 1e-3 * n;
        bool lit = dot(n, to_sun) > 0.0
            && !canopy_trace_any(pc.nodes, pc.leaves, pc.primitive_count, point, to_sun, 0.0, 1e30);
        grey = 0.1 + (lit ? 0.8 * dot(n, to_sun) : 0.0);
    }
    CanopyHit through_instances = canopy_trace_instances_closest(pc.scene, eye, direction,
                                                                 ray.tmin, ray.tmax);
    bool any_instance = canopy_trace_instances_any(pc.scene, eye, direction, ray.tmin, ray.tmax);
    PixelOuts(pc.pixels).v[i] = PixelOut(hit, any_hit ? 1u : 0u, surfaces_crossed, grey, 0u,
                                         through_instances.t, through_instances.triangle,
                                         any_instance ? 1u : 0u, 0u);
}
