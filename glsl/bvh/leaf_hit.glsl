// A ray against one leaf's triangle (LeafTriangle, bvh/format.glsl), for the BVH tracers.
#ifndef CANOPY_BVH_LEAF_HIT
#define CANOPY_BVH_LEAF_HIT
#include "bvh/format.glsl"
#include "../common/ray.glsl"
#include "../common/cutout.glsl"

// Intersects leaf `k` of `leaves`, whose triangles are numbered from `first_id` (0 but in a
// two-level tree's meshes), passing through cut-outs (common/cutout.glsl, `appearance` 0 for
// none); on a closer hit updates t, the triangle id and its weights, and returns true.
bool hit_leaf(RayQuery q, LeafTriangles leaves, uint k, uint first_id, uint64_t appearance,
              inout float t, inout uint triangle, inout vec2 uv) {
    LeafTriangle leaf = leaves.v[k];
    vec2 leaf_uv;
    uint id = first_id + floatBitsToUint(leaf.a.w);
    if (intersect_solid(q, leaf.a.xyz, leaf.b.xyz, leaf.c.xyz, id, appearance, t, leaf_uv)) {
        triangle = id;
        uv = leaf_uv;
        return true;
    }
    return false;
}

#endif
