// Morton codes: quantized coordinates interleaved with x in the most significant bit of each
// triple (src/geom/morton.rs computes the same codes). 30-bit codes take 10 bits per axis, 63-bit
// codes 21.
#ifndef CANOPY_MORTON
#define CANOPY_MORTON
#include "prelude.glsl"

uint spread_bits10(uint v) {
    v &= 0x3ffu;
    v = (v | (v << 16)) & 0x030000ffu;
    v = (v | (v << 8)) & 0x0300f00fu;
    v = (v | (v << 4)) & 0x030c30c3u;
    v = (v | (v << 2)) & 0x09249249u;
    return v;
}

uint64_t spread_bits21(uint64_t v) {
    v &= 0x1ffffful;
    v = (v | (v << 32)) & 0x1f00000000fffful;
    v = (v | (v << 16)) & 0x1f0000ff0000fful;
    v = (v | (v << 8)) & 0x100f00f00f00f00ful;
    v = (v | (v << 4)) & 0x10c30c30c30c30c3ul;
    v = (v | (v << 2)) & 0x1249249249249249ul;
    return v;
}

// Cells per unit length along each axis for a grid of 2^bits cells spanning `extent`; a flat
// axis (zero extent) gets scale 0, so every point falls in its cell 0.
vec3 morton_scale(vec3 extent, uint bits) {
    return mix(vec3(0.0), float(1u << bits) / extent, greaterThan(extent, vec3(0.0)));
}

// The cell of `p` in a grid of 2^bits cells per axis spanning [origin, origin + 2^bits / scale].
uvec3 morton_quantize(vec3 p, vec3 origin, vec3 scale, uint bits) {
    precise vec3 cell = floor((p - origin) * scale);
    return uvec3(clamp(cell, vec3(0.0), vec3(float((1u << bits) - 1u))));
}

uint morton30(uvec3 q) {
    return (spread_bits10(q.x) << 2) | (spread_bits10(q.y) << 1) | spread_bits10(q.z);
}

uint64_t morton63(uvec3 q) {
    return (spread_bits21(q.x) << 2) | (spread_bits21(q.y) << 1) | spread_bits21(q.z);
}

// The inverse of spread_bits21: every third bit of `v`, packed.
uint compact_bits21(uint64_t v) {
    v &= 0x1249249249249249ul;
    v = (v | (v >> 2)) & 0x10c30c30c30c30c3ul;
    v = (v | (v >> 4)) & 0x100f00f00f00f00ful;
    v = (v | (v >> 8)) & 0x1f0000ff0000fful;
    v = (v | (v >> 16)) & 0x1f00000000fffful;
    v = (v | (v >> 32)) & 0x1ffffful;
    return uint(v);
}

// Leading zeros of a 64-bit value (64 for zero).
int clz64(uint64_t x) {
    uint high = uint(x >> 32);
    if (high != 0u) {
        return 31 - findMSB(high);
    }
    return 63 - findMSB(uint(x));
}

#endif
