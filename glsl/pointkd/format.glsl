// The point kd-tree (seed 000 §5.1) as its queries read it; mirrored in
// src/accel/pointkd/mod.rs. The root first, an internal node's two children next to each other
// (left, right), each node with the box of its points; leaves hold runs of entries: a point's
// position and index.
#ifndef CANOPY_POINTKD_FORMAT
#define CANOPY_POINTKD_FORMAT
#include "../common/prelude.glsl"

const uint POINT_KD_LEAF = 3;

// The deepest tree a query walks, the size of its stack (src/accel/pointkd/mod.rs MAX_DEPTH).
const uint POINT_KD_STACK_SIZE = 64;

// word0: axis or POINT_KD_LEAF in bits 0-1, then the left child (internal) or the point count
// (leaf); word1: the split's bits (internal) or the leaf's first entry.
struct PointKdNode {
    vec3 lo;
    uint word0;
    vec3 hi;
    uint word1;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer PointKdNodes { PointKdNode v[]; };

// What a query needs to know of the tree as a whole (src/accel/pointkd/knn.rs
// PointKdHeader): how many nodes and points it has, and the query radius R its VVH priced.
struct PointKdHeader {
    uint node_count;
    float query_radius;
    uint point_count;
    uint pad;
};
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer PointKdHeaders { PointKdHeader h; };

// A leaf entry: the point's position, and its index as the bits of w.
layout(buffer_reference, std430, buffer_reference_align = 16) buffer PointEntries { vec4 v[]; };

// Squared distance, in the order src/accel/pointkd/cpu.rs computes it, so both agree exactly.
float distance2(vec3 a, vec3 b) {
    precise vec3 d = a - b;
    precise float d2 = d.x * d.x + d.y * d.y + d.z * d.z;
    return d2;
}

// Squared distance from q to the box lo..hi (0 inside).
float box_distance2(vec3 q, vec3 lo, vec3 hi) {
    vec3 d = max(max(lo - q, q - hi), vec3(0.0));
    return dot(d, d);
}

#endif
