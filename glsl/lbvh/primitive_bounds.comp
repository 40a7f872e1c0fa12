#version 460
// The box of every primitive and the bounds of their centroids, in one dispatch: each
// invocation computes its triangle's box (or its point's degenerate box) and writes it to
// `boxes`, and the centroids (box centres, 0.5 * (lo + hi)) are reduced to one box with
// common/single_pass_reduce.glsl. The centroid bounds frame the Morton grid of the next step;
// the boxes spare the Morton step from reading the vertices again.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"

layout(constant_id = 2) const uint ITEMS_PER_INVOCATION = 4;
layout(constant_id = 3) const bool POINTS = false;
const uint TILE = WORKGROUP_SIZE * ITEMS_PER_INVOCATION;

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address; // vec3 per vertex (or per point)
    uint64_t triangles_address; // uvec3 per triangle (unused for points)
    uint64_t boxes_address;     // out: Aabb per primitive
    uint64_t bounds_address;    // out: one Aabb, the centroid bounds
    uint64_t scratch_address;   // u32 done-counter (zero), pad to 32 bytes, then one Aabb per tile
    uint64_t count_address;
    uint host_count;
} pc;

#define Value Aabb

Value value_identity() {
    return empty_aabb();
}
Value value_combine(Value a, Value b) {
    return Aabb(min(a.lo, b.lo), 0, max(a.hi, b.hi), 0);
}
Value subgroup_reduce_value(Value v) {
    return Aabb(subgroupMin(v.lo), 0, subgroupMax(v.hi), 0);
}
Value load_element(uint i) {
    Vec3s positions = Vec3s(pc.positions_address);
    Aabb box;
    if (POINTS) {
        vec3 p = positions.v[i];
        box = Aabb(p, 0, p, 0);
    } else {
        uvec3 t = UVec3s(pc.triangles_address).v[i];
        vec3 a = positions.v[t.x];
        vec3 b = positions.v[t.y];
        vec3 c = positions.v[t.z];
        box = Aabb(min(a, min(b, c)), 0, max(a, max(b, c)), 0);
    }
    Aabbs(pc.boxes_address).v[i] = box;
    vec3 center = (box.lo + box.hi) * 0.5;
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
