#version 460
// Exclusive (or, with INCLUSIVE, inclusive) prefix sum of u32 in one pass over memory: each
// workgroup scans a tile of WORKGROUP_SIZE * 4 * VECTORS_PER_INVOCATION elements, then finds the
// sum of all earlier tiles by decoupled look-back (common/lookback_fallback.glsl) instead of a
// second pass, so the data is read once and written once. Within a tile, each subgroup owns a contiguous
// stretch and walks it in 16-byte vectors, carrying its running sum across rounds; the subgroup
// totals are then scanned across the workgroup. Sums wrap modulo 2^32.
// Example (exclusive): [3 1 4 1 5] -> [0 3 4 8 9].
#include "../common/prelude.glsl"
#include "../common/workgroup_scan.glsl"

layout(constant_id = 2) const uint VECTORS_PER_INVOCATION = 4;
layout(constant_id = 3) const bool INCLUSIVE = false;
const uint TILE = WORKGROUP_SIZE * 4 * VECTORS_PER_INVOCATION;

layout(push_constant, scalar) uniform Push {
    uint64_t input_address;
    uint64_t output_address;
    uint64_t count_address;   // 0: use host_count
    uint64_t scratch_address; // look-back scratch (common/lookback.glsl), zero between uses
    uint host_count;
} pc;

shared uint tile_prefix_shared;
uint element_total; // n, for the look-back fallback

// The sum of `tile`'s input: what that tile publishes, for a look-back that stopped waiting for
// it (common/lookback_fallback.glsl). Called by one whole subgroup.
uint lookback_fallback_aggregate(uint tile) {
    U32s input_scalar = U32s(pc.input_address);
    uint end = min(element_total, (tile + 1) * TILE);
    uint sum = 0;
    for (uint i = tile * TILE + gl_SubgroupInvocationID; i < end; i += gl_SubgroupSize) {
        sum += input_scalar.v[i];
    }
    return subgroupAdd(sum);
}

#include "../common/lookback_fallback.glsl"

void main() {
    uint n = element_count(pc.count_address, pc.host_count);
    element_total = n;
    if (flat_workgroup_id() * TILE >= n) {
        return; // beyond the tiles needed (2D grid rounding, or over-launch): take no ticket
    }
    uint tile = acquire_tile(pc.scratch_address);
    U32s input_scalar = U32s(pc.input_address);
    U32x4s input_vector = U32x4s(pc.input_address);
    U32s output_scalar = U32s(pc.output_address);
    U32x4s output_vector = U32x4s(pc.output_address);

    uint subgroup_base = tile * TILE + gl_SubgroupID * gl_SubgroupSize * 4 * VECTORS_PER_INVOCATION;
    uvec4 values[VECTORS_PER_INVOCATION];
    uint lane_prefix[VECTORS_PER_INVOCATION];
    uint carry = 0;
    [[unroll]] for (uint k = 0; k < VECTORS_PER_INVOCATION; ++k) {
        uint first = subgroup_base + (k * gl_SubgroupSize + gl_SubgroupInvocationID) * 4;
        uvec4 v;
        if (first + 3 < n) {
            v = input_vector.v[first / 4];
        } else {
            for (uint c = 0; c < 4; ++c) {
                v[c] = 0u;
                if (first + c < n) {
                    v[c] = input_scalar.v[first + c];
                }
            }
        }
        values[k] = v;
        uint sum = v.x + v.y + v.z + v.w;
        uint inclusive = subgroupInclusiveAdd(sum);
        lane_prefix[k] = carry + inclusive - sum;
        carry += subgroupShuffle(inclusive, gl_SubgroupSize - 1);
    }
    uint tile_total;
    uint subgroup_offset = workgroup_exclusive_add(
        gl_SubgroupInvocationID == gl_SubgroupSize - 1 ? carry : 0u, tile_total);

    if (gl_SubgroupID == 0) {
        uint prefix = subgroup_lookback_fallback(pc.scratch_address + 8, tile, tile_total);
        if (subgroupElect()) {
            tile_prefix_shared = prefix;
        }
    }
    barrier();
    uint offset = tile_prefix_shared + subgroup_offset;
    release_lookback(pc.scratch_address, (n + TILE - 1) / TILE);

    [[unroll]] for (uint k = 0; k < VECTORS_PER_INVOCATION; ++k) {
        uint first = subgroup_base + (k * gl_SubgroupSize + gl_SubgroupInvocationID) * 4;
        uvec4 v = values[k];
        uvec4 r;
        r.x = offset + lane_prefix[k];
        r.y = r.x + v.x;
        r.z = r.y + v.y;
        r.w = r.z + v.z;
        if (INCLUSIVE) {
            r += v;
        }
        if (first + 3 < n) {
            output_vector.v[first / 4] = r;
        } else {
            for (uint c = 0; c < 4; ++c) {
                if (first + c < n) {
                    output_scalar.v[first + c] = r[c];
                }
            }
        }
    }
}
