// The BIH node (BihNode in src/accel/bih/mod.rs), 16 bytes: word0 holds the axis (0-2) or
// BIH_LEAF in bits 0-1, and above them the first child (internal; a split's right child is the
// next node) or the primitive count (leaf); word1 is a leaf's first entry in the leaf primitive
// list, or an internal node's kind (BIH_SPLIT, BIH_CLIP); clip holds an internal node's two
// planes on its axis: a split's left child maximum and right child minimum, a clip node's
// child minimum and maximum.
#ifndef CANOPY_BIH
#define CANOPY_BIH
#include "common/prelude.glsl"

const uint BIH_LEAF = 3u;
const uint BIH_SPLIT = 0u;
const uint BIH_CLIP = 1u;

struct BihNode {
    uint word0;
    uint word1;
    vec2 clip;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer BihNodes { BihNode v[]; };

#endif
