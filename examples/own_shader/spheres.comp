#version 460
// The application's own kernel over primitives only it can intersect
// (examples/own_shader/main.rs): spheres, each inside a box of a tree canopy built over boxes
// (BoxTreeBuilder), traced through glsl/include/canopy_trace.glsl's canopy_trace_boxes_*,
// which hand each box a ray reaches to canopy_intersect_box below. One invocation per ray
// writes the closest sphere and its distance, whether any sphere is met, and how many are.
layout(local_size_x = 64) in;

#define CANOPY_ALL_HITS
#define CANOPY_BOX_PRIMITIVES
#include "include/canopy_trace.glsl"

layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Spheres { vec4 v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer AppRays { Ray v[]; };

struct SphereOut {
    float t;
    uint sphere;
    uint any_hit;
    uint crossed;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer SphereOuts { SphereOut v[]; };

layout(push_constant, scalar) uniform Push {
    uint64_t nodes;   // the box tree's Bvh::nodes
    uint64_t leaves;  // its Bvh::leaf_triangles
    uint64_t spheres; // the application's spheres: centre, radius
    uint64_t rays;    // its rays (canopy's Ray layout)
    uint64_t out_;    // out: SphereOut per ray
    uint sphere_count;
    uint ray_count;
} pc;

uint spheres_crossed;

// Sphere `box`'s nearer crossing in (tmin, t), if any: the quadratic's smaller root, else its
// larger (a ray starting inside).
bool canopy_intersect_box(uint box, vec3 origin, vec3 direction, float tmin, inout float t) {
    vec4 sphere = Spheres(pc.spheres).v[box];
    vec3 to_origin = origin - sphere.xyz;
    float a = dot(direction, direction);
    float b = dot(to_origin, direction);
    float c = dot(to_origin, to_origin) - sphere.w * sphere.w;
    float discriminant = b * b - a * c;
    if (discriminant < 0.0) {
        return false;
    }
    float root = sqrt(discriminant);
    float near = (-b - root) / a;
    float far = (-b + root) / a;
    float crossing = near > tmin ? near : far;
    if (crossing <= tmin || crossing >= t) {
        return false;
    }
    t = crossing;
    return true;
}

// Every sphere canopy_trace_boxes_all meets: counted, and the walk goes on.
bool canopy_on_hit(uint ray_id, float t, uint triangle, vec2 uv) {
    spheres_crossed += 1u;
    return false;
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.ray_count) {
        return;
    }
    Ray ray = AppRays(pc.rays).v[i];
    CanopyHit hit = canopy_trace_boxes_closest(pc.nodes, pc.leaves, pc.sphere_count, ray.origin,
                                               ray.direction, ray.tmin, ray.tmax);
    bool any_hit = canopy_trace_boxes_any(pc.nodes, pc.leaves, pc.sphere_count, ray.origin,
                                          ray.direction, ray.tmin, ray.tmax);
    spheres_crossed = 0u;
    canopy_trace_boxes_all(pc.nodes, pc.leaves, pc.sphere_count, i, ray.origin, ray.direction,
                           ray.tmin, ray.tmax);
    SphereOuts(pc.out_).v[i] = SphereOut(hit.t, hit.triangle, any_hit ? 1u : 0u, spheres_crossed);
}
