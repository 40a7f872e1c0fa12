// The kd-tree node (KdNode in src/accel/kdtree/mod.rs), 8 bytes, in preorder: an internal node's
// left child is the next node. word0 holds the axis (0-2) or 3 for a leaf in bits 0-1, and the
// right child's index (internal) or the triangle count (leaf) above; word1 holds the split
// position's bits (internal) or the leaf's first entry in the leaf triangle list (leaf).
#ifndef CANOPY_KDTREE
#define CANOPY_KDTREE
#include "common/prelude.glsl"

const uint KD_LEAF = 3u;

struct KdNode {
    uint word0;
    uint word1;
};
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer KdNodes { KdNode v[]; };

#endif
