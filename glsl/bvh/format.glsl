// The binary BVH node (BvhNode in src/accel/bvh/mod.rs): both children's boxes and references,
// the parent and the leaf count, 64 bytes. Internal nodes are 0..n-2 with the root at 0; a
// child reference with LEAF_BIT set names leaf k, whose triangle is stored in Morton order
// as a LeafTriangle (three vertices, the original triangle id in a.w).
#ifndef CANOPY_BVH
#define CANOPY_BVH
#include "common/prelude.glsl"

const uint LEAF_BIT = 0x80000000u;
const uint INVALID_CHILD = 0xffffffffu;

struct BvhNode {
    vec3 left_lo;
    uint left;
    vec3 left_hi;
    uint right;
    vec3 right_lo;
    uint parent;
    vec3 right_hi;
    uint leaf_count;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer BvhNodes { BvhNode v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 16) coherent buffer CoherentBvhNodes { BvhNode v[]; };

// A leaf's triangle, copied in leaf order so traversal reads it contiguously.
struct LeafTriangle {
    vec4 a; // xyz: vertex 0, w: the triangle's id (uint bits)
    vec4 b; // xyz: vertex 1
    vec4 c; // xyz: vertex 2
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer LeafTriangles { LeafTriangle v[]; };

// What a walk of the tree looks for (bvh/walk.glsl, bvh/walk_instances.glsl): the closest hit,
// any hit (occlusion), or every hit.
const uint BVH_CLOSEST = 0u;
const uint BVH_ANY = 1u;
const uint BVH_ALL = 2u;

#endif
