#version 460
// Morton code of every primitive's centroid (the centre of its box) on a grid of 2^10 or
// 2^21 cells per axis spanning the centroid bounds (Karras 2012 §3), written as sort keys
// (u32 for 30-bit codes, u64 for 63-bit); the sort pairs each with its index, the primitive.
// A flat axis (zero extent) quantizes to cell 0. src/geom/morton.rs is the reference.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "../common/morton.glsl"
#include "../common/primitive.glsl"

layout(constant_id = 3) const bool CODES63 = false;

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address; // vec3 per vertex (or per point)
    uint64_t triangles_address; // uvec3 per triangle (unused for points)
    uint64_t bounds_address; // one Aabb: centroid bounds
    uint64_t keys_address;   // out: u32 or u64 per primitive
    uint64_t count_address;
    uint host_count;
} pc;

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= element_count(pc.count_address, pc.host_count)) {
        return;
    }
    uint bits = CODES63 ? 21u : 10u;
    Aabb bounds = Aabbs(pc.bounds_address).v[0];
    vec3 extent = bounds.hi - bounds.lo;
    vec3 scale = morton_scale(extent, bits);
    vec3 center = primitive_centroid(pc.positions_address, pc.triangles_address, i);
    uvec3 cell = morton_quantize(center, bounds.lo, scale, bits);
    if (CODES63) {
        U64s(pc.keys_address).v[i] = morton63(cell);
    } else {
        U32s(pc.keys_address).v[i] = morton30(cell);
    }
}
