#version 460
// Segmented reduction by atomics (Chang 2013): element i carries a value and a segment id, and
// output[id] is combined (add, min or max, chosen by OP and FLOAT) with every value of that id.
// The ids need not be sorted, so no segmented scan over the whole input is possible; instead
// each subgroup first merges *runs* of equal consecutive ids among its own elements, then issues
// one atomic per run into the output. Inputs where equal ids come in runs (triangles grouped by
// kd-tree node, points by cell) thus cost about one atomic per run instead of one per element,
// and fully random ids still work, at one atomic per element.
//
// Each subgroup owns a contiguous stretch of SUBGROUP_SIZE * ITEMS_PER_INVOCATION elements and
// walks it SUBGROUP_SIZE elements per round (coalesced reads). In a round, a lane is a run head
// when its id differs from the previous lane's; a segmented inclusive scan by shuffles (log2 of
// the subgroup size steps, each lane adding the value d lanes back only while that lane is still
// in its run) leaves every run's total in its last lane. Runs that end inside the round are
// written with one atomic each; the round's last run may continue into the next round, so it is
// carried (id and partial value) and folded into the next round's first run when the ids match,
// or written when they do not. The carry is written after the last round.
// Example (add): ids [4 4 4 7 7 4], values [1 2 3 4 5 6], one subgroup of 8 lanes ->
// atomics output[4] += 6, output[7] += 9, output[4] += 6.
//
// Output encoding: u32 ops and f32 add store plain values. f32 min and max store the order-
// preserving encoding of the float (sign bit clear: set the sign bit; sign bit set: invert
// all bits), for which unsigned integer order equals float order (-0 < +0; NaNs with the sign bit
// clear above +inf, with it set below -inf), so uint atomicMin/atomicMax work on every device.
// MODE 1 of this kernel decodes such an output to plain f32 in place. f32 add uses a
// compare-and-swap loop on the bits, so it needs no float-atomic device feature; sums are
// accumulated in an unspecified order and may differ by rounding between runs.
// Elements whose id is not below `segments` are ignored.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"

layout(constant_id = 2) const uint OP = 0; // 0 add, 1 min, 2 max
layout(constant_id = 3) const bool FLOAT = false;
layout(constant_id = 4) const uint ITEMS_PER_INVOCATION = 16;
layout(constant_id = 5) const uint MODE = 0; // 0 reduce, 1 decode an f32 min/max output in place
const uint TILE = WORKGROUP_SIZE * ITEMS_PER_INVOCATION;
const bool ORDERED = FLOAT && OP != 0; // values travel as order-preserving u32 encodings

layout(push_constant, scalar) uniform Push {
    uint64_t values_address; // u32 or f32 per element
    uint64_t ids_address;    // u32 segment id per element
    uint64_t output_address; // one u32 or f32 per segment, initialised by the caller
    uint64_t count_address;  // 0: use host_count
    uint host_count;         // MODE 1: the number of segments to decode
    uint max_count;          // device counts are clamped to it
    uint segments;           // ids at or above it are ignored
    uint pad;
} pc;

uint value_identity() {
    if (OP == 0) return 0u; // also the bits of 0.0
    return OP == 1 ? 0xffffffffu : 0u;
}

uint value_combine(uint a, uint b) {
    if (OP == 0) return FLOAT ? floatBitsToUint(uintBitsToFloat(a) + uintBitsToFloat(b)) : a + b;
    return OP == 1 ? min(a, b) : max(a, b);
}

void flush(uint id, uint value) {
    if (id >= pc.segments) {
        return;
    }
    U32s output_values = U32s(pc.output_address);
    if (OP == 1) {
        atomicMin(output_values.v[id], value);
    } else if (OP == 2) {
        atomicMax(output_values.v[id], value);
    } else if (!FLOAT) {
        atomicAdd(output_values.v[id], value);
    } else {
        uint seen = output_values.v[id];
        while (true) {
            uint expected = seen;
            seen = atomicCompSwap(output_values.v[id], expected, value_combine(expected, value));
            if (seen == expected) {
                break;
            }
        }
    }
}

void decode_output() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i < pc.host_count) {
        U32s output_values = U32s(pc.output_address);
        output_values.v[i] = ordered_to_float(output_values.v[i]);
    }
}

void main() {
    if (MODE == 1) {
        decode_output();
        return;
    }
    uint n = min(element_count(pc.count_address, pc.host_count), pc.max_count);
    U32s values = U32s(pc.values_address);
    U32s ids = U32s(pc.ids_address);
    uint lane = gl_SubgroupInvocationID;
    uint subgroup_base = flat_workgroup_id() * TILE + gl_SubgroupID * gl_SubgroupSize * ITEMS_PER_INVOCATION;

    bool carrying = false;
    uint carry_id = 0;
    uint carry_value = value_identity();
    for (uint k = 0; k < ITEMS_PER_INVOCATION; ++k) {
        uint round_base = subgroup_base + k * gl_SubgroupSize;
        if (round_base >= n) {
            break; // uniform across the subgroup
        }
        uint last = min(gl_SubgroupSize, n - round_base) - 1; // last lane holding an element
        bool valid = lane <= last;
        uint id = 0xffffffffu;
        if (valid) {
            id = ids.v[round_base + lane];
        }
        uint value = value_identity();
        if (valid) {
            value = values.v[round_base + lane];
            value = ORDERED ? float_to_ordered(value) : value;
        }
        uint previous_id = subgroupShuffle(id, lane == 0 ? 0 : lane - 1);
        uint next_id = subgroupShuffle(id, min(lane + 1, gl_SubgroupSize - 1));
        bool head = valid && (lane == 0 || previous_id != id);
        bool tail = valid && (lane == last || next_id != id);
        // The lane where this lane's run starts: the nearest head at or below it.
        uint run_start = subgroupBallotFindMSB(subgroupBallot(head) & gl_SubgroupLeMask);

        // Segmented inclusive scan: afterwards each lane holds its run's total from run_start.
        for (uint d = 1; d < gl_SubgroupSize; d <<= 1) {
            uint other = subgroupShuffle(value, lane >= d ? lane - d : lane);
            if (lane >= run_start + d) {
                value = value_combine(other, value);
            }
        }

        uint first_id = subgroupShuffle(id, 0);
        if (carrying) {
            if (first_id == carry_id) {
                if (run_start == 0) {
                    value = value_combine(carry_value, value);
                }
            } else if (subgroupElect()) {
                flush(carry_id, carry_value);
            }
        }
        if (tail && lane != last) {
            flush(id, value);
        }
        carry_id = subgroupShuffle(id, last);
        carry_value = subgroupShuffle(value, last);
        carrying = true;
    }
    if (carrying && subgroupElect()) {
        flush(carry_id, carry_value);
    }
}
