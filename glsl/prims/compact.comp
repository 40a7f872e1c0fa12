#version 460
// Stable stream compaction in one pass: copies the elements whose flag is nonzero, in their
// original order, to the front of the output, and writes how many were kept as a u32 so later
// GPU work can size itself from it (a Count::Device). Without a values array the kept *indices*
// are written instead, which turns a flag array into a work list.
//
// Each element's output position is the number of kept elements before it: an exclusive prefix
// sum of the flags. As in scan.comp, the sum is found in a single pass: each workgroup counts the
// kept elements of its tile, learns the count of all earlier tiles by decoupled look-back, then
// writes. The look-back (common/lookback_fallback.glsl) waits a bounded number of polls for a
// predecessor and then counts that tile's flags itself, which keeps it correct on lavapipe,
// whose loop-iteration cap otherwise cut long waits short. Inside a tile each subgroup owns a
// contiguous stretch and walks it SUBGROUP_SIZE elements per round (coalesced reads); a round's
// keep mask is one subgroupBallot, its count a bit count, and each lane's place among the round's
// kept elements subgroupBallotExclusiveBitCount, so no shuffles or shared-memory scans are needed
// per element. The tile that covers the last element knows the grand total and writes it. An
// empty input (a device count of zero; one workgroup is still dispatched) writes a total of 0.
// Example: values [a b c d e], flags [0 1 1 0 1] -> output [b c e], count 3; without values
// -> output [1 2 4], count 3.
#include "../common/prelude.glsl"
#include "../common/workgroup_scan.glsl"

layout(constant_id = 2) const uint ITEMS_PER_INVOCATION = 16; // at most 32 (one bit each)
layout(constant_id = 3) const uint SPIN_LIMIT = 1024; // look-back polls before the fallback
#define LOOKBACK_SPIN_LIMIT SPIN_LIMIT
const uint TILE = WORKGROUP_SIZE * ITEMS_PER_INVOCATION;

layout(push_constant, scalar) uniform Push {
    uint64_t values_address;     // u32 values, or 0: write the kept indices
    uint64_t flags_address;      // u32 per element, nonzero = keep
    uint64_t output_address;     // kept values (or indices), at most `count` of them
    uint64_t kept_count_address; // receives the number kept (u32)
    uint64_t count_address;      // 0: use host_count
    uint64_t scratch_address;    // look-back scratch (common/lookback.glsl), zero between uses
    uint host_count;
    uint max_count;              // device counts are clamped to it
} pc;

shared uint tile_prefix_shared;
uint element_total; // n, for the look-back fallback

// The kept count of `tile`, from the flags: what that tile publishes, for a look-back that
// stopped waiting for it (common/lookback_fallback.glsl). Called by one whole subgroup.
uint lookback_fallback_aggregate(uint tile) {
    U32s flags = U32s(pc.flags_address);
    uint end = min(element_total, (tile + 1) * TILE);
    uint kept = 0;
    for (uint base = tile * TILE; base < end; base += 4 * gl_SubgroupSize) {
        [[unroll]] for (uint c = 0; c < 4; ++c) {
            uint i = base + c * gl_SubgroupSize + gl_SubgroupInvocationID;
            if (i < end) { // an `if`, so the load never runs past the end
                kept += flags.v[i] != 0u ? 1u : 0u;
            }
        }
    }
    return subgroupAdd(kept);
}

#include "../common/lookback_fallback.glsl"

void main() {
    uint n = min(element_count(pc.count_address, pc.host_count), pc.max_count);
    element_total = n;
    if (n == 0) {
        if (flat_workgroup_id() == 0 && gl_LocalInvocationIndex == 0) {
            U32s(pc.kept_count_address).v[0] = 0;
        }
        return;
    }
    if (flat_workgroup_id() * TILE >= n) {
        return; // beyond the tiles needed (2D grid rounding, or over-launch): take no ticket
    }
    uint tile = acquire_tile(pc.scratch_address);
    U32s flags = U32s(pc.flags_address);

    uint subgroup_base = tile * TILE + gl_SubgroupID * gl_SubgroupSize * ITEMS_PER_INVOCATION;
    uint keep_bits = 0;
    uint lane_offset[ITEMS_PER_INVOCATION];
    uint carry = 0;
    [[unroll]] for (uint k = 0; k < ITEMS_PER_INVOCATION; ++k) {
        uint i = subgroup_base + k * gl_SubgroupSize + gl_SubgroupInvocationID;
        bool keep = false;
        if (i < n) {
            keep = flags.v[i] != 0u;
        }
        uvec4 ballot = subgroupBallot(keep);
        lane_offset[k] = carry + subgroupBallotExclusiveBitCount(ballot);
        carry += subgroupBallotBitCount(ballot);
        keep_bits |= keep ? 1u << k : 0u;
    }
    uint tile_total;
    uint subgroup_offset = workgroup_exclusive_add(
        gl_SubgroupInvocationID == gl_SubgroupSize - 1 ? carry : 0u, tile_total);

    if (gl_SubgroupID == 0) {
        uint prefix = subgroup_lookback_fallback(pc.scratch_address + 8, tile, tile_total);
        if (subgroupElect()) {
            tile_prefix_shared = prefix;
            if (tile == (n - 1) / TILE) {
                U32s(pc.kept_count_address).v[0] = prefix + tile_total;
            }
        }
    }
    barrier();
    uint offset = tile_prefix_shared + subgroup_offset;
    release_lookback(pc.scratch_address, (n + TILE - 1) / TILE);

    U32s output_values = U32s(pc.output_address);
    [[unroll]] for (uint k = 0; k < ITEMS_PER_INVOCATION; ++k) {
        if ((keep_bits & (1u << k)) != 0u) {
            uint i = subgroup_base + k * gl_SubgroupSize + gl_SubgroupInvocationID;
            uint value = i;
            if (pc.values_address != 0ul) {
                value = U32s(pc.values_address).v[i];
            }
            output_values.v[offset + lane_offset[k]] = value;
        }
    }
}
