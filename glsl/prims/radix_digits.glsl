// Digit extraction shared by the radix sort kernels: keys are KEY_WORDS little-endian u32
// words (1 for u32 keys, 2 for u64 keys), sorted DIGIT_BITS bits per pass from the least
// significant. The host picks the width per sort (8 to 10 bits: 30-bit Morton codes take three
// passes of 10); a digit of a u64 key may straddle its two words.
#ifndef CANOPY_RADIX
#define CANOPY_RADIX

layout(constant_id = 4) const uint DIGIT_BITS = 8;
const uint RADIX_BINS = 1u << DIGIT_BITS;

// Whether the `bits`-bit digit at bit `shift` reaches into the key's next word (only digits of
// u64 keys that cross bit 32 do).
bool radix_digit_straddles(uint shift, uint bits) {
    return (shift & 31u) + bits > 32u;
}

// The `bits`-bit digit (at most DIGIT_BITS: a last pass may take fewer, so that key bits above
// the sorted ones are ignored) at bit `shift` of a key whose word `shift / 32` is `low` and
// whose next word is `high` (0 past the key's last word). Selects, not branches.
uint radix_digit(uint low, uint high, uint shift, uint bits) {
    uint digit = low >> (shift & 31u);
    digit |= radix_digit_straddles(shift, bits) ? high << (32u - (shift & 31u)) : 0u;
    return digit & ((1u << bits) - 1u);
}

// The `bits`-bit digit at bit `shift` of key `index` of `keys` (key_words words per key). Both
// words of a u64 key are read (one 8-byte load, the same memory) with no branch around them,
// so that the loads of an unrolled loop over keys are issued together.
uint radix_digit_of(U32s keys, uint index, uint key_words, uint shift, uint bits) {
    if (key_words == 1u) {
        return radix_digit(keys.v[index], 0u, shift, bits);
    }
    uvec2 key = U32x2s(uint64_t(keys)).v[index];
    bool upper = shift >= 32u;
    return radix_digit(upper ? key.y : key.x, upper ? 0u : key.y, shift, bits);
}

#endif
