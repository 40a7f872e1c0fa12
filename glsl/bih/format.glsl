// The BIH node (BihNode in src/accel/bih/mod.rs), 16 bytes: word0 holds the axis (0-2) or
// BIH_LEAF in bits 0-1, and above them the left child (internal; the right child is the next
// node) or the primitive count (leaf); word1 is a leaf's first entry in the leaf primitive
// list; clip holds an internal node's two planes on its axis: the left child's maximum and the
// right child's minimum.
#ifndef CANOPY_BIH
#define CANOPY_BIH
#include "common/prelude.glsl"

const uint BIH_LEAF = 3u;

struct BihNode {
    uint word0;
    uint word1;
    vec2 clip;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer BihNodes { BihNode v[]; };

#endif
