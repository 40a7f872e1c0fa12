#version 460
// The bounds of the primitives' centroids (the centres of their boxes, 0.5 * (lo + hi):
// common/primitive.glsl), reduced in one dispatch with common/single_pass_reduce.glsl. They
// frame the Morton grid of the next step, which recomputes each centroid from the vertices:
// reading them again costs less than writing and reading a box per primitive.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "../common/primitive.glsl"

layout(constant_id = 3) const uint ITEMS_PER_INVOCATION = 4;
const uint TILE = WORKGROUP_SIZE * ITEMS_PER_INVOCATION;

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address; // vec3 per vertex (or per point)
    uint64_t triangles_address; // uvec3 per triangle (unused for points)
    uint64_t bounds_address;    // out: one Aabb, the centroid bounds
    uint64_t scratch_address;   // u32 done-counter (zero), pad to 32 bytes, then one Aabb per tile
    uint64_t count_address;
    uint host_count;
} pc;

#include "../common/aabb_union.glsl"
Value load_element(uint i) {
    vec3 center = primitive_centroid(pc.positions_address, pc.triangles_address, i);
    return Aabb(center, 0, center, 0);
}
void store_partial(uint slot, Value v) { CoherentAabbs(pc.scratch_address).v[1 + slot] = v; }
Value load_partial(uint slot) { return CoherentAabbs(pc.scratch_address).v[1 + slot]; }
void store_result(Value v) { Aabbs(pc.bounds_address).v[0] = v; }

#include "../common/single_pass_reduce.glsl"

void main() {
    uint n = element_count(pc.count_address, pc.host_count);
    single_pass_reduce(n, max((n + TILE - 1) / TILE, 1u), pc.scratch_address);
}
