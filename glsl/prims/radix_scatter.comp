#version 460
// Second step of one pass of a stable LSD radix sort (DIGIT_BITS-bit digits): each workgroup
// takes a tile of keys (the same tiles as radix_upsweep.comp) and
//  1. ranks its keys stably by digit: each subgroup walks its contiguous stretch in rounds of
//     one key per lane, finds the lanes holding the same digit with DIGIT_BITS ballots (a
//     "match"), and counts into its own histogram row in shared memory;
//  2. scans those rows across subgroups (per digit) and across digits (the tile's local order);
//  3. reads where each digit's keys of this tile start in the output from the scanned
//     digit-major count table (upsweep + prims/scan.comp);
//  4. reorders the tile (keys and values) in shared memory by digit, in the words the histogram
//     rows used, then writes it out, so invocations write runs of consecutive addresses.
// Keys are KEY_WORDS u32 words; values are u32 and travel with their keys (a first pass may
// take each key's index as its value instead of reading one: INDEXED_VALUES). Workgroups never wait for each
// other, so the sort is correct on any scheduler.
// Example, digit = key & 255, one tile: keys [0x102 0x001 0x202 0x001] -> [0x001 0x001 0x102 0x202].
#include "../common/prelude.glsl"
#include "../common/workgroup_scan.glsl"
#include "radix_digits.glsl"

layout(constant_id = 2) const uint KEY_WORDS = 1;
layout(constant_id = 3) const uint KEYS_PER_INVOCATION = 8;
// max(SUBGROUPS_PER_WORKGROUP * RADIX_BINS, TILE * (KEY_WORDS + 1)), set by the host.
layout(constant_id = 5) const uint SHARED_WORDS = 4096;
// Each key's value is its index (a first pass that reads no values). A constant, not a branch
// on the address: a branch in the unrolled staging loop kept its loads from issuing together
// and cost the u64 sort a third of its speed on an H100.
layout(constant_id = 6) const bool INDEXED_VALUES = false;
const uint TILE = WORKGROUP_SIZE * KEYS_PER_INVOCATION;
const uint DIGITS_PER_INVOCATION = (RADIX_BINS + WORKGROUP_SIZE - 1) / WORKGROUP_SIZE;
const uint INVALID_DIGIT = 0xffffffffu;

layout(push_constant, scalar) uniform Push {
    uint64_t keys_in_address;
    uint64_t keys_out_address;
    uint64_t values_in_address; // unused with INDEXED_VALUES
    uint64_t values_out_address;
    uint64_t table_address;     // scanned table[digit * tile_stride + tile]
    uint64_t count_address;
    uint host_count;
    uint shift;                 // bit position of this pass's digit
    uint tile_stride;
    uint bits;                  // bits of this pass's digit
} pc;

// Steps 1-3: a histogram row per subgroup (subgroup s, digit d at s * RADIX_BINS + d). Step 4:
// the tile's keys (word-major) and values, reordered by digit.
shared uint tile_words[SHARED_WORDS];
shared uint digit_tile_start[RADIX_BINS];
shared uint digit_global_offset[RADIX_BINS];

void main() {
    uint n = element_count(pc.count_address, pc.host_count);
    uint tile = flat_workgroup_id();
    if (tile * TILE >= n) {
        return;
    }
    U32s keys_in = U32s(pc.keys_in_address);

    for (uint i = gl_LocalInvocationIndex; i < SUBGROUPS_PER_WORKGROUP * RADIX_BINS; i += WORKGROUP_SIZE) {
        tile_words[i] = 0;
    }
    barrier();

    // 1. Stable rank within the subgroup's stretch.
    uint row = gl_SubgroupID * RADIX_BINS;
    uint stretch = tile * TILE + gl_SubgroupID * gl_SubgroupSize * KEYS_PER_INVOCATION;
    uint digits[KEYS_PER_INVOCATION];
    uint ranks[KEYS_PER_INVOCATION];
    [[unroll]] for (uint k = 0; k < KEYS_PER_INVOCATION; ++k) {
        uint i = stretch + k * gl_SubgroupSize + gl_SubgroupInvocationID;
        bool valid = i < n;
        uint digit = INVALID_DIGIT;
        if (valid) {
            digit = radix_digit_of(keys_in, i, KEY_WORDS, pc.shift, pc.bits);
        }
        uvec4 peers = subgroupBallot(valid);
        [[unroll]] for (uint b = 0; b < DIGIT_BITS; ++b) {
            bool bit = ((digit >> b) & 1u) != 0;
            uvec4 set = subgroupBallot(bit);
            peers &= bit ? set : ~set;
        }
        uint rank_among_peers = subgroupBallotExclusiveBitCount(peers);
        uint before = 0;
        if (valid) {
            before = tile_words[row + digit];
        }
        subgroupBarrier();
        if (valid && rank_among_peers == 0) {
            tile_words[row + digit] = before + subgroupBallotBitCount(peers);
        }
        subgroupBarrier();
        digits[k] = digit;
        ranks[k] = before + rank_among_peers;
    }
    barrier();

    // 2. Per digit: exclusive scan over subgroups, then over digits (tile-local order).
    uint my_digits_total = 0;
    uint digit_totals[DIGITS_PER_INVOCATION];
    [[unroll]] for (uint j = 0; j < DIGITS_PER_INVOCATION; ++j) {
        uint digit = gl_LocalInvocationIndex * DIGITS_PER_INVOCATION + j;
        uint total = 0;
        if (digit < RADIX_BINS) {
            for (uint s = 0; s < gl_NumSubgroups; ++s) {
                uint c = tile_words[s * RADIX_BINS + digit];
                tile_words[s * RADIX_BINS + digit] = total;
                total += c;
            }
        }
        digit_totals[j] = total;
        my_digits_total += total;
    }
    uint ignored;
    uint running = workgroup_exclusive_add(my_digits_total, ignored);

    // 3. Where this tile's keys of each digit start in the output.
    U32s table = U32s(pc.table_address);
    [[unroll]] for (uint j = 0; j < DIGITS_PER_INVOCATION; ++j) {
        uint digit = gl_LocalInvocationIndex * DIGITS_PER_INVOCATION + j;
        if (digit < RADIX_BINS) {
            digit_tile_start[digit] = running;
            digit_global_offset[digit] = table.v[digit * pc.tile_stride + tile] - running;
            running += digit_totals[j];
        }
    }
    barrier();

    // 4. Reorder through shared memory (the histogram rows' words, once every invocation has
    // its positions), all key words and the values at once.
    uint local_positions[KEYS_PER_INVOCATION];
    [[unroll]] for (uint k = 0; k < KEYS_PER_INVOCATION; ++k) {
        uint digit = digits[k];
        local_positions[k] = digit == INVALID_DIGIT ? INVALID_DIGIT
            : digit_tile_start[digit] + tile_words[row + digit] + ranks[k];
    }
    barrier();
    uint tile_count = min(TILE, n - tile * TILE);
    U32s values_in = U32s(pc.values_in_address);
    [[unroll]] for (uint k = 0; k < KEYS_PER_INVOCATION; ++k) {
        uint position = local_positions[k];
        if (position != INVALID_DIGIT) {
            uint i = stretch + k * gl_SubgroupSize + gl_SubgroupInvocationID;
            for (uint w = 0; w < KEY_WORDS; ++w) {
                tile_words[w * TILE + position] = keys_in.v[i * KEY_WORDS + w];
            }
            uint value = INDEXED_VALUES ? i : values_in.v[i];
            tile_words[KEY_WORDS * TILE + position] = value;
        }
    }
    barrier();
    U32s keys_out = U32s(pc.keys_out_address);
    U32s values_out = U32s(pc.values_out_address);
    uint digit_word = pc.shift / 32u;
    [[unroll]] for (uint k = 0; k < KEYS_PER_INVOCATION; ++k) {
        uint local = gl_LocalInvocationIndex + k * WORKGROUP_SIZE;
        if (local < tile_count) {
            uint high = 0u;
            if (digit_word + 1u < KEY_WORDS && radix_digit_straddles(pc.shift, pc.bits)) {
                high = tile_words[(digit_word + 1u) * TILE + local];
            }
            uint digit = radix_digit(tile_words[digit_word * TILE + local], high, pc.shift, pc.bits);
            uint destination = digit_global_offset[digit] + local;
            for (uint w = 0; w < KEY_WORDS; ++w) {
                keys_out.v[destination * KEY_WORDS + w] = tile_words[w * TILE + local];
            }
            values_out.v[destination] = tile_words[KEY_WORDS * TILE + local];
        }
    }
}
