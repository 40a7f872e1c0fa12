#version 460
// Vertices of the default scene at time `time`: a deforming torus of U x V vertices (a grid
// in the angles u around the ring and v around the tube, wrapping in both) followed by the
// four corners of the ground square and two UV spheres (the mirror and the glass sphere, each
// its top pole, rings of 2 * rings vertices from the top, and its bottom pole, as
// scene/shapes.rs uv_sphere makes them). The tube's radius ripples with travelling waves, its
// centre line wobbles, and the ring tilts and spins. Normals are the cross product of the
// surface's central differences in u and v. scene/default_scene.rs holds the same surface on
// the CPU (surface_point) as the reference.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address; // out: vec3 per vertex
    uint64_t normals_address;   // out: vec3 per vertex
    uint segments_u;            // vertices around the ring
    uint segments_v;            // vertices around the tube
    float time;                 // seconds
    float ground_half_size;
    float ground_height;
    uint sphere_rings;          // latitude bands of each sphere
    vec4 spheres[2];            // centre and radius of each sphere
} pc;

const float TAU = 6.28318530718;
const float PI = 3.14159265359;

// The unit normal of vertex j of a UV sphere of `rings` bands (shapes::uv_sphere_normal).
vec3 sphere_normal(uint rings, uint j) {
    uint segments = 2 * rings;
    if (j == 0) {
        return vec3(0.0, 1.0, 0.0);
    }
    if (j > (rings - 1) * segments) {
        return vec3(0.0, -1.0, 0.0);
    }
    float theta = PI * float(1 + (j - 1) / segments) / float(rings);
    float phi = TAU * float((j - 1) % segments) / float(segments);
    return vec3(sin(theta) * cos(phi), cos(theta), sin(theta) * sin(phi));
}

vec3 surface_point(float u, float v, float t) {
    float tube = 0.35 * (1.0 + 0.25 * sin(5.0 * u + 2.0 * t) * sin(3.0 * v - 1.5 * t)
                         + 0.04 * sin(24.0 * u - 4.0 * t) * cos(2.0 * v));
    vec3 ring = vec3(cos(u), 0.0, sin(u));
    vec3 centre = ring + vec3(0.0, 0.2 * sin(2.0 * u + t), 0.0);
    vec3 p = centre + tube * (cos(v) * ring + vec3(0.0, sin(v), 0.0));
    float tilt = 0.6 + 0.2 * sin(0.5 * t);
    float spin = 0.3 * t;
    p = vec3(p.x, p.y * cos(tilt) - p.z * sin(tilt), p.y * sin(tilt) + p.z * cos(tilt));
    p = vec3(p.x * cos(spin) + p.z * sin(spin), p.y, -p.x * sin(spin) + p.z * cos(spin));
    return p + vec3(0.0, 0.9, 0.0);
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    uint surface_vertices = pc.segments_u * pc.segments_v;
    uint sphere_vertices = 2 + (pc.sphere_rings - 1) * 2 * pc.sphere_rings;
    if (i >= surface_vertices + 4u + 2 * sphere_vertices) {
        return;
    }
    vec3 p;
    vec3 n;
    if (i < surface_vertices) {
        float u = TAU * float(i % pc.segments_u) / float(pc.segments_u);
        float v = TAU * float(i / pc.segments_u) / float(pc.segments_v);
        const float h = 1e-3;
        vec3 du = surface_point(u + h, v, pc.time) - surface_point(u - h, v, pc.time);
        vec3 dv = surface_point(u, v + h, pc.time) - surface_point(u, v - h, pc.time);
        p = surface_point(u, v, pc.time);
        n = normalize(cross(dv, du));
    } else if (i >= surface_vertices + 4u) {
        uint j = i - surface_vertices - 4u;
        vec4 sphere = pc.spheres[j / sphere_vertices];
        n = sphere_normal(pc.sphere_rings, j % sphere_vertices);
        p = sphere.xyz + sphere.w * n;
    } else {
        uint corner = i - surface_vertices;
        float s = pc.ground_half_size;
        p = vec3((corner & 1u) != 0u ? s : -s, pc.ground_height, (corner & 2u) != 0u ? s : -s);
        n = vec3(0.0, 1.0, 0.0);
    }
    Vec3s(pc.positions_address).v[i] = p;
    Vec3s(pc.normals_address).v[i] = n;
}
