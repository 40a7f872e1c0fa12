#version 460
// Reduces `count` u32 or f32 values to one (sum, minimum or maximum, chosen by the OP and
// FLOAT specialization constants) in a single dispatch (common/single_pass_reduce.glsl).
// Values travel as raw 32-bit words; f32 is reinterpreted for the arithmetic. Sums of u32 wrap
// modulo 2^32; f32 sums are accumulated in a fixed order per tile, so results are deterministic.
// Empty input yields the identity (0, the largest value, or the smallest value).
#include "../common/prelude.glsl"

layout(constant_id = 2) const uint OP = 0; // 0 add, 1 min, 2 max
layout(constant_id = 3) const bool FLOAT = false;
layout(constant_id = 4) const uint ITEMS_PER_INVOCATION = 16;
const uint TILE = WORKGROUP_SIZE * ITEMS_PER_INVOCATION;

layout(push_constant, scalar) uniform Push {
    uint64_t input_address;
    uint64_t output_address;  // one u32 result
    uint64_t count_address;
    uint64_t scratch_address; // u32 done-counter (zero), then one u32 partial per tile
    uint host_count;
} pc;

#define Value uint

Value value_identity() {
    if (OP == 0) return FLOAT ? floatBitsToUint(0.0) : 0u;
    if (OP == 1) return FLOAT ? floatBitsToUint(uintBitsToFloat(0x7f800000u)) : 0xffffffffu;
    return FLOAT ? floatBitsToUint(uintBitsToFloat(0xff800000u)) : 0u;
}

Value value_combine(Value a, Value b) {
    if (FLOAT) {
        float x = uintBitsToFloat(a), y = uintBitsToFloat(b);
        return floatBitsToUint(OP == 0 ? x + y : OP == 1 ? min(x, y) : max(x, y));
    }
    return OP == 0 ? a + b : OP == 1 ? min(a, b) : max(a, b);
}

Value subgroup_reduce_value(Value v) {
    if (FLOAT) {
        float x = uintBitsToFloat(v);
        return floatBitsToUint(OP == 0 ? subgroupAdd(x) : OP == 1 ? subgroupMin(x) : subgroupMax(x));
    }
    return OP == 0 ? subgroupAdd(v) : OP == 1 ? subgroupMin(v) : subgroupMax(v);
}

Value load_element(uint i) { return U32s(pc.input_address).v[i]; }
void store_partial(uint slot, Value v) { CoherentU32s(pc.scratch_address).v[1 + slot] = v; }
Value load_partial(uint slot) { return CoherentU32s(pc.scratch_address).v[1 + slot]; }
void store_result(Value v) { U32s(pc.output_address).v[0] = v; }

#include "../common/single_pass_reduce.glsl"

void main() {
    uint n = element_count(pc.count_address, pc.host_count);
    single_pass_reduce(n, max((n + TILE - 1) / TILE, 1u), pc.scratch_address);
}
