#version 460
// Union of `count` axis-aligned boxes ({vec3 min, pad, vec3 max, pad}, 32 bytes; Aabb in
// src/prims/reduce.rs) in a single dispatch (common/single_pass_reduce.glsl). Used for scene
// and centroid bounds. Empty input yields the empty box (min = +inf, max = -inf).
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"

layout(constant_id = 2) const uint ITEMS_PER_INVOCATION = 8;
const uint TILE = WORKGROUP_SIZE * ITEMS_PER_INVOCATION;

layout(push_constant, scalar) uniform Push {
    uint64_t input_address;
    uint64_t output_address;  // one Aabb
    uint64_t count_address;
    uint64_t scratch_address; // u32 done-counter (zero), pad to 32 bytes, then one Aabb per tile
    uint host_count;
} pc;

#include "../common/aabb_union.glsl"
Value load_element(uint i) { return Aabbs(pc.input_address).v[i]; }
void store_partial(uint slot, Value v) { CoherentAabbs(pc.scratch_address).v[1 + slot] = v; }
Value load_partial(uint slot) { return CoherentAabbs(pc.scratch_address).v[1 + slot]; }
void store_result(Value v) { Aabbs(pc.output_address).v[0] = v; }

#include "../common/single_pass_reduce.glsl"

void main() {
    uint n = element_count(pc.count_address, pc.host_count);
    single_pass_reduce(n, max((n + TILE - 1) / TILE, 1u), pc.scratch_address);
}
