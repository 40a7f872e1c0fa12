// An instance of a two-level BVH (BvhInstance in src/accel/bvh/instances.rs): a mesh's binary
// BVH placed in the world by an affine transform, 128 bytes. A transform's rows multiply
// vec4(point, 1): world = object_to_world * (object, 1).
#ifndef CANOPY_BVH_INSTANCE
#define CANOPY_BVH_INSTANCE
#include "common/prelude.glsl"

struct BvhInstance {
    vec4 world_to_object[3];
    vec4 object_to_world[3];
    uint64_t nodes_address;  // the mesh tree's BvhNode array
    uint64_t leaves_address; // its LeafTriangle array
    uint first_triangle;     // the id of its mesh's triangle 0 in hits
    uint triangle_count;     // the mesh's triangles (at least one)
    uint mask;               // seen by rays whose mask shares a bit with it
    uint flags;              // BVH_INSTANCE_SWAP_WEIGHTS
};
// A hit's weights are reported swapped: u weighs the triangle's third vertex, v its second
// (Instance::swap_weights).
const uint BVH_INSTANCE_SWAP_WEIGHTS = 1u;
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer BvhInstances { BvhInstance v[]; };

#endif
