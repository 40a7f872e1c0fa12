// The box of primitive i of the LBVH and octree builders: a triangle's box (its three vertices
// through its indices) or a point's degenerate box, and its centre, the point its Morton code
// is computed from. One definition, so the centroid bounds and the codes agree exactly.
#ifndef CANOPY_PRIMITIVE
#define CANOPY_PRIMITIVE
#include "prelude.glsl"
#include "geometry.glsl"

// The includer's constant_id 2 decides: triangles, or points (no triangle indices).
layout(constant_id = 2) const bool POINTS = false;

Aabb primitive_box(uint64_t positions_address, uint64_t triangles_address, uint i) {
    Vec3s positions = Vec3s(positions_address);
    if (POINTS) {
        vec3 p = positions.v[i];
        return Aabb(p, 0, p, 0);
    }
    uvec3 t = UVec3s(triangles_address).v[i];
    vec3 a = positions.v[t.x];
    vec3 b = positions.v[t.y];
    vec3 c = positions.v[t.z];
    return Aabb(min(a, min(b, c)), 0, max(a, max(b, c)), 0);
}

vec3 primitive_centroid(uint64_t positions_address, uint64_t triangles_address, uint i) {
    Aabb box = primitive_box(positions_address, triangles_address, i);
    return (box.lo + box.hi) * 0.5;
}

#endif
