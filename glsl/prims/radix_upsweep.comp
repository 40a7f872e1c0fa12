#version 460
// First step of one radix sort pass: counts how many keys of each tile hold each digit and
// writes the counts digit-major, table[digit * tile_stride + tile]. An exclusive scan of that
// table (prims/scan.comp) then gives, for every (digit, tile), where the tile's keys with that
// digit start in the output: all keys with smaller digits, plus the keys with this digit in
// earlier tiles. The tiles match radix_scatter.comp's, which reads the scanned table. The grid
// covers all tile_stride tiles: those past a device count write zero counts, so the table
// needs no fill before a pass.
#include "../common/prelude.glsl"
#include "radix_digits.glsl"

layout(constant_id = 2) const uint KEY_WORDS = 1;
layout(constant_id = 3) const uint KEYS_PER_INVOCATION = 8;
const uint TILE = WORKGROUP_SIZE * KEYS_PER_INVOCATION;

layout(push_constant, scalar) uniform Push {
    uint64_t keys_address;
    uint64_t table_address;     // RADIX_BINS * tile_stride u32
    uint64_t count_address;
    uint host_count;
    uint shift;                 // bit position of this pass's digit
    uint tile_stride;           // tiles per digit row of the table
    uint bits;                  // bits of this pass's digit
} pc;

shared uint tile_histogram[RADIX_BINS];

void main() {
    uint n = element_count(pc.count_address, pc.host_count);
    uint tile = flat_workgroup_id();
    if (tile >= pc.tile_stride) {
        return; // 2D grid rounding
    }
    for (uint i = gl_LocalInvocationIndex; i < RADIX_BINS; i += WORKGROUP_SIZE) {
        tile_histogram[i] = 0;
    }
    barrier();
    U32s keys = U32s(pc.keys_address);
    uint end = min(n, (tile + 1) * TILE);
    for (uint i = tile * TILE + gl_LocalInvocationIndex; i < end; i += WORKGROUP_SIZE) {
        atomicAdd(tile_histogram[radix_digit_of(keys, i, KEY_WORDS, pc.shift, pc.bits)], 1u);
    }
    barrier();
    U32s table = U32s(pc.table_address);
    for (uint digit = gl_LocalInvocationIndex; digit < RADIX_BINS; digit += WORKGROUP_SIZE) {
        table.v[digit * pc.tile_stride + tile] = tile_histogram[digit];
    }
}
