// A ray against one leaf's triangle (LeafTriangle, bvh/format.glsl), for the BVH tracers.
#ifndef CANOPY_BVH_LEAF_HIT
#define CANOPY_BVH_LEAF_HIT
#include "bvh/format.glsl"
#include "../common/ray.glsl"

// Intersects leaf `k` of `leaves`; on a closer hit updates t, the triangle id and its
// weights, and returns true.
bool hit_leaf(RayQuery q, LeafTriangles leaves, uint k, inout float t, inout uint triangle,
              inout vec2 uv) {
    LeafTriangle leaf = leaves.v[k];
    vec2 leaf_uv;
    if (intersect_triangle(q, leaf.a.xyz, leaf.b.xyz, leaf.c.xyz, t, leaf_uv)) {
        triangle = floatBitsToUint(leaf.a.w);
        uv = leaf_uv;
        return true;
    }
    return false;
}

#endif
