// The compressed 8-wide BVH node (WideNode in src/accel/bvh/wide/format.rs), 80 bytes: a frame
// (the node box's smallest corner and, per axis, a power-of-two step 2^e with plane 255 at or
// past the box's far side), the first internal child's node index and the first leaf's
// triangle index, which slots hold internal children and which one-triangle leaves, the
// triangles below, and each child's box quantized to a byte per plane. Plane q of an axis
// decodes to origin + q * 2^e, one rounding (`precise`: no fused multiply-add), exactly as
// the reference; every child's decoded box contains its true box. A node's internal children
// are consecutive nodes and its leaves consecutive triangles (LeafTriangle, bvh/format.glsl),
// both in slot order.
#ifndef CANOPY_WIDE_BVH
#define CANOPY_WIDE_BVH
#include "../common/prelude.glsl"

const uint WIDE_WIDTH = 8u;
const int MIN_STEP_EXPONENT = -100;
const int MAX_STEP_EXPONENT = 126;

struct WideNode {
    vec3 origin;
    uint exponents_internal; // biased step exponents (bytes 0-2), internal-slot mask (byte 3)
    uint child_base;
    uint triangle_base;
    uint leaf_mask;
    uint leaf_count;
    // A byte per slot: low x, y, z, then high x, y, z, two words each.
    uint planes[12];
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer WideNodes { WideNode v[]; };
// The same nodes as five 16-byte words each, as traversal loads them.
layout(buffer_reference, std430, buffer_reference_align = 16) buffer WideNodeWords { uvec4 v[]; };

// 2^e for e in the normal range.
float pow2(int e) {
    return uintBitsToFloat(uint(e + 127) << 23);
}

float decode_plane(float origin, float step, uint q) {
    precise float plane = origin + float(q) * step;
    return plane;
}

// The steps of a node's three axes, from its biased exponents (bytes 0-2 of `exponents`).
vec3 node_steps(uint exponents) {
    return vec3(pow2(int(exponents & 0xffu) - 127), pow2(int((exponents >> 8) & 0xffu) - 127),
                pow2(int((exponents >> 16) & 0xffu) - 127));
}

// Plane q of slot `slot` of plane set `plane` (0-2 low x-z, 3-5 high x-z) from a node's last
// three words (its 12 plane words).
uint plane_of(uvec4 planes[3], uint plane, uint slot) {
    uint word = 2u * plane + slot / 4u;
    return bitfieldExtract(planes[word / 4u][word % 4u], int(8u * (slot % 4u)), 8);
}

#endif
