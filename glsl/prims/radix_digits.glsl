// Digit extraction shared by the radix sort kernels: keys are KEY_WORDS little-endian u32
// words (1 for u32 keys, 2 for u64 keys), sorted DIGIT_BITS bits per pass from the least
// significant. The host picks the width per sort (8 to 10 bits: 30-bit Morton codes take three
// passes of 10); a digit of a u64 key may straddle its two words.
#ifndef CANOPY_RADIX
#define CANOPY_RADIX

layout(constant_id = 4) const uint DIGIT_BITS = 8;
const uint RADIX_BINS = 1u << DIGIT_BITS;

// The `bits`-bit digit (at most DIGIT_BITS: a last pass may take fewer, so that key bits above
// the sorted ones are ignored) at bit `shift` of a key whose word `shift / 32` is `low` and
// whose next word is `high` (0 past the key's last word).
uint radix_digit(uint low, uint high, uint shift, uint bits) {
    uint64_t pair = packUint2x32(uvec2(low, high));
    return uint(pair >> (shift & 31u)) & ((1u << bits) - 1u);
}

// The `bits`-bit digit at bit `shift` of key `index` of `keys` (key_words words per key).
uint radix_digit_of(U32s keys, uint index, uint key_words, uint shift, uint bits) {
    uint word = shift / 32u;
    uint high = 0u;
    if (word + 1u < key_words && (shift & 31u) + bits > 32u) {
        high = keys.v[index * key_words + word + 1u];
    }
    return radix_digit(keys.v[index * key_words + word], high, shift, bits);
}

#endif
