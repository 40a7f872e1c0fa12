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

// dot(a, b) as the CPU reference evaluates it: ((a.x b.x + a.y b.y) + a.z b.z), each product
// and sum rounded on its own. Vulkan requires products and sums correctly rounded, but leaves
// how a device evaluates `dot` open (NVIDIA's differs from the CPU's in the last bit), and one
// bit of a depth can move a triangle to another slab when the frame's depth range spans a few
// ulps (a small scene far from the camera).
float view_dot(vec3 a, vec3 b) {
    precise float d = a.x * b.x + a.y * b.y + a.z * b.z;
    return d;
}

// Whether `depth` lies at or behind the front of slab `s` (1 <= s <= slabs), the depth s /
// slabs of the way through the frame's depth range: s (z_max - z_min) <= slabs (depth - z_min),
// products, differences and a comparison only, each correctly rounded on every device (a
// division may be off by 2.5 ulps), so the GPU and the CPU place every depth alike. It never
// holds for an empty or single-depth range, and holding for s it holds for every s' < s.
bool behind_slab_front(GridFrame frame, uint slabs, uint s, float depth) {
    float z_min = uintBitsToFloat(frame.z_min_bits);
    float z_max = uintBitsToFloat(frame.z_max_bits);
    precise float range = z_max - z_min;
    precise float front = float(s) * range;
    precise float scaled = (depth - z_min) * float(slabs);
    return range > 0.0 && front <= scaled;
}

// The slab of `depth`: the last slab whose front it lies at or behind (slab 0 when none),
// found by bisection (at most 8 steps for 256 slabs). It never decreases with depth.
uint slab_of(GridFrame frame, uint slabs, float depth) {
    uint lo = 0;
    uint hi = slabs - 1;
    while (lo < hi) {
        uint mid = (lo + hi + 1) / 2;
        if (behind_slab_front(frame, slabs, mid, depth)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

#endif
