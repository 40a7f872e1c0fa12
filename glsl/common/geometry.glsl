// Geometry as the GPU stores it: boxes (Aabb in src/prims/reduce.rs), vertex positions and
// triangle indices (tightly packed float and uint triples, as src/scene/mesh.rs holds them),
// and the float <-> ordered-uint mapping that lets atomics compare floats.
#ifndef CANOPY_GEOMETRY
#define CANOPY_GEOMETRY
#include "prelude.glsl"

struct Aabb {
    vec3 lo;
    uint pad0;
    vec3 hi;
    uint pad1;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Aabbs { Aabb v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 16) coherent buffer CoherentAabbs { Aabb v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Vec3s { vec3 v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer UVec3s { uvec3 v[]; };

#define INF uintBitsToFloat(0x7f800000u)

Aabb empty_aabb() {
    return Aabb(vec3(INF), 0, vec3(-INF), 0);
}

// Float bits mapped to uints of the same order (negative floats reversed), so that unsigned
// atomicMin/atomicMax order floats; and back.
uint float_to_ordered(uint bits) {
    return (bits & 0x80000000u) != 0u ? ~bits : bits | 0x80000000u;
}

uint ordered_to_float(uint ordered) {
    return (ordered & 0x80000000u) != 0u ? ordered & 0x7fffffffu : ~ordered;
}

#endif
