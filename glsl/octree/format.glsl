// What the octree kernels share: the octree node (OctreeNode in src/accel/octree.rs), and
// the prefix length of radix-tree node r over m distinct keys (Karras 2012 §4), counted in
// bits of the 3L-bit Morton code: r < m - 1 names internal node r, r >= m - 1 leaf r - (m-1)
// (whose prefix is the whole code).
#ifndef CANOPY_OCTREE
#define CANOPY_OCTREE
#include "common/prelude.glsl"
#include "bvh/format.glsl"
#include "common/morton.glsl"
#include "common/keys.glsl"

const int LEVELS = KEYS64 ? 21 : 10;
const int CODE_BITS = 3 * LEVELS;

struct OctreeNode {
    uint64_t prefix; // the code's top 3 * level bits
    uint parent;     // NO_PARENT for the root
    uint level;      // 0: the root
};
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer OctreeNodes { OctreeNode v[]; };

// The split of a point k-d tree node (KdSplit in src/accel/octree.rs).
struct KdSplit {
    uint axis;   // 0, 1, 2 for x, y, z
    float plane; // position of the splitting plane on that axis
};
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer KdSplits { KdSplit v[]; };

// Prefix length (in code bits) shared by the distinct keys a and b.
int common_prefix(uint64_t a, uint64_t b) {
    return clz64(a ^ b) - (64 - CODE_BITS);
}

// Prefix length of radix node r; for internal nodes its range is found as the radix-tree
// kernel found it: the direction from the neighbours, the length from leaf_count.
int radix_prefix(uint64_t keys, BvhNodes nodes, int r, int m) {
    if (r >= m - 1) {
        return CODE_BITS;
    }
    uint64_t key = key_at(keys, uint(r));
    int d = 1;
    if (r > 0 && common_prefix(key, key_at(keys, uint(r - 1))) > common_prefix(key, key_at(keys, uint(r + 1)))) {
        d = -1;
    }
    int other = r + d * int(nodes.v[r].leaf_count - 1u);
    return common_prefix(key, key_at(keys, uint(other)));
}

// The radix node above r (NO_PARENT above the root) as a radix node number.
uint radix_parent(BvhNodes nodes, uint64_t leaf_parents, int r, int m) {
    if (r >= m - 1) {
        return U32s(leaf_parents).v[r - (m - 1)];
    }
    return nodes.v[r].parent;
}

#endif
