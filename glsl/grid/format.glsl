// The screen grid (Patidar & Narayanan 2008, seed 001) as its kernels share it; mirrored in
// src/accel/grid/mod.rs. A frame's triangles are projected through a pinhole view and
// referenced once per image tile their projection may cover, in one of `slabs` depth slabs per
// tile chosen by the triangle's nearest depth; references are ordered by bin (tile-major,
// slabs front to back), so a tile's rays meet its nearest triangles first.
#ifndef CANOPY_GRID_FORMAT
#define CANOPY_GRID_FORMAT
#include "../common/prelude.glsl"

// What one build found, written on the GPU (the host reads it back to grow the references).
struct GridFrame {
    uint64_t needed;  // references the frame's triangles need (64-bit: a sum over triangles)
    uint z_min_bits;  // float bits of the nearest depth of any triangle in view (depths > 0)
    uint z_max_bits;  // float bits of the farthest nearest-depth of any triangle in view
    uint references;  // references written: `needed` when it fits the capacity, else 0
    uint pad;
};
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer GridFrames { GridFrame v[]; };

// A triangle in view: the tiles its projection may cover (x | y << 16, inclusive corners) and
// its nearest depth along the view direction (clipped to the near plane).
struct GridTriangle {
    uint tiles_lo;
    uint tiles_hi;
    float depth;
    uint pad;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer GridTriangles { GridTriangle v[]; };

// Where `depth` falls among the slabs, in slab units: slab s holds depths in [s, s + 1). The
// same float expression places triangles and ends rays, and it never decreases with depth.
float slab_position(GridFrame frame, uint slabs, float depth) {
    float z_min = uintBitsToFloat(frame.z_min_bits);
    float z_max = uintBitsToFloat(frame.z_max_bits);
    float scale = z_max > z_min ? float(slabs) / (z_max - z_min) : 0.0;
    return (depth - z_min) * scale;
}

uint slab_of(float position, uint slabs) {
    return min(uint(max(position, 0.0)), slabs - 1);
}

#endif
