// Rays, hits and per-ray work counts as the GPU stores them (Ray, Hit and RayWork in
// src/trace.rs), the ray/box slab test and the watertight ray/triangle test (Woop, Benthin and
// Wald 2013) that every tracer shares. src/geom/ray.rs is the reference.
#ifndef CANOPY_RAY
#define CANOPY_RAY
#include "prelude.glsl"
#include "geometry.glsl"

const uint MISS = 0xffffffffu;

struct Ray {
    vec3 origin;
    float tmin;
    vec3 direction;
    float tmax;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Rays { Ray v[]; };

// t along the ray, the triangle hit (MISS for none) and the barycentric weights of its
// second and third vertices.
struct Hit {
    float t;
    uint triangle;
    float u;
    float v;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Hits { Hit v[]; };

// The work of one ray's traversal, written by the counting variant of a tracer (COUNT_WORK):
// each tracer's top comment says what it counts.
struct RayWork {
    uint nodes_visited;
    uint primitives_tested;
};
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer RayWorks { RayWork v[]; };

// A ray prepared for repeated box and triangle tests.
struct RayQuery {
    vec3 origin;
    float tmin;
    vec3 inv_direction; // 1 / direction; 1 where the direction is zero (see `parallel`)
    bvec3 parallel;     // direction components that are zero
    ivec3 axes;         // kx, ky, kz of the watertight test (kz: largest |direction|)
    vec3 shear;         // Sx, Sy, Sz
};

RayQuery ray_query(Ray ray) {
    RayQuery q;
    q.origin = ray.origin;
    q.tmin = ray.tmin;
    vec3 d = ray.direction;
    q.parallel = equal(d, vec3(0.0));
    q.inv_direction = 1.0 / mix(d, vec3(1.0), q.parallel);
    vec3 ad = abs(d);
    int kz = ad.x > ad.y ? (ad.x > ad.z ? 0 : 2) : (ad.y > ad.z ? 1 : 2);
    int kx = (kz + 1) % 3;
    int ky = (kx + 1) % 3;
    if (d[kz] < 0.0) {
        int swap = kx;
        kx = ky;
        ky = swap;
    }
    q.axes = ivec3(kx, ky, kz);
    q.shear = vec3(d[kx] / d[kz], d[ky] / d[kz], 1.0 / d[kz]);
    return q;
}

// The interval (enter, exit) in which the ray is inside the box, clipped to [tmin, tmax]; empty
// (enter > exit) when it misses. Along an axis the ray runs parallel to, the box either holds
// the ray's whole line (the origin lies within its slab, faces included) or none of it. An
// empty (inverted) box is always missed. The exit is widened by 2 ulp so rounding never culls
// a box whose triangle the watertight test would hit.
vec2 box_interval(RayQuery q, vec3 lo, vec3 hi, float tmax) {
    vec3 t_lo = (lo - q.origin) * q.inv_direction;
    vec3 t_hi = (hi - q.origin) * q.inv_direction;
    bvec3 forward = greaterThanEqual(q.inv_direction, vec3(0.0));
    vec3 t_near = mix(t_hi, t_lo, forward);
    vec3 t_far = mix(t_lo, t_hi, forward);
    bvec3 inside = lessThanEqual(max(lo - q.origin, q.origin - hi), vec3(0.0));
    t_near = mix(t_near, mix(vec3(INF), vec3(-INF), inside), q.parallel);
    t_far = mix(t_far, mix(vec3(-INF), vec3(INF), inside), q.parallel);
    float enter = max(max(t_near.x, t_near.y), max(t_near.z, q.tmin));
    float leave = min(min(t_far.x, t_far.y), min(t_far.z, tmax)) * 1.00000024;
    return vec2(enter, leave);
}

// Distance at which the ray enters the box within [tmin, tmax], or INF when it misses.
float box_entry(RayQuery q, vec3 lo, vec3 hi, float tmax) {
    vec2 interval = box_interval(q, lo, hi, tmax);
    return interval.x <= interval.y ? interval.x : INF;
}

// Watertight ray/triangle test: the triangle is sheared into the ray's space, where the signs
// of the three edge functions U, V, W (weights of a, b, c) decide inside or outside exactly
// as on the neighbouring triangle, so no ray passes between triangles sharing an edge.
// Degenerate triangles (U + V + W = 0) are never hit. On a hit in (tmin, t) it updates t and
// the weights u (of b) and v (of c). src/geom/ray.rs recomputes U, V, W in double precision
// when one is exactly zero; the GPU keeps single precision (shaderFloat64 is optional), which
// stays watertight: a zero edge function counts as inside for both triangles of the edge.
bool intersect_triangle(RayQuery q, vec3 a, vec3 b, vec3 c, inout float t, out vec2 uv) {
    int kx = q.axes.x;
    int ky = q.axes.y;
    int kz = q.axes.z;
    vec3 A = a - q.origin;
    vec3 B = b - q.origin;
    vec3 C = c - q.origin;
    precise float ax = A[kx] - q.shear.x * A[kz];
    precise float ay = A[ky] - q.shear.y * A[kz];
    precise float bx = B[kx] - q.shear.x * B[kz];
    precise float by = B[ky] - q.shear.y * B[kz];
    precise float cx = C[kx] - q.shear.x * C[kz];
    precise float cy = C[ky] - q.shear.y * C[kz];
    precise float u = cx * by - cy * bx;
    precise float v = ax * cy - ay * cx;
    precise float w = bx * ay - by * ax;
    uv = vec2(0.0);
    if ((u < 0.0 || v < 0.0 || w < 0.0) && (u > 0.0 || v > 0.0 || w > 0.0)) {
        return false;
    }
    float det = u + v + w;
    if (det == 0.0) {
        return false;
    }
    precise float hit_t = (u * (q.shear.z * A[kz]) + v * (q.shear.z * B[kz]) + w * (q.shear.z * C[kz])) / det;
    if (!(hit_t > q.tmin && hit_t < t)) {
        return false;
    }
    t = hit_t;
    uv = vec2(v, w) / det;
    return true;
}

#endif
