// Digit extraction shared by the radix sort kernels: keys are KEY_WORDS little-endian u32
// words (1 for u32 keys, 2 for u64 keys), sorted 8 bits per pass from the least significant.
#ifndef CANOPY_RADIX
#define CANOPY_RADIX

const uint RADIX_BITS = 8;
const uint RADIX_BINS = 1u << RADIX_BITS;

uint radix_digit(uint key_word, uint shift) {
    return (key_word >> (shift & 31u)) & (RADIX_BINS - 1u);
}

#endif
