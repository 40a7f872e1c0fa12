// The photon map's shared state (src/photons/mod.rs mirrors the structs): what the frame's
// photons aim at, how they are split between lights and targets, and what was emitted and
// stored.
#ifndef CANOPY_PHOTONS
#define CANOPY_PHOTONS
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"

// The most (light, target) pairs photons are split between.
const uint MAX_EMITTERS = 64;

// The frame's counts.
struct PhotonCounters {
    uint emitters; // (light, target) pairs with photons
    uint emitted;  // photons emitted
    uint stored;   // photons stored (hit a diffuse surface after a specular event)
    uint pad;
};

// Photons from one light towards one target's bounding sphere: `count` photons from `first`,
// each carrying `power`. Point lights emit into the cone about the sphere (cosine of its half
// angle: cos_max; -1: the light is inside, every direction); directional lights through the
// disc of the sphere's radius across the light, from `back` units up the light's direction.
struct PhotonEmitter {
    vec3 centre;
    float radius;
    vec3 power;
    uint light;
    uint first;
    uint count;
    float cos_max;
    float back;
};

// A box as order-preserving keys of its corners' coordinates, reduced with integer atomicMax
// from zeroed memory: the high corner's keys, and the low corner's keys inverted (so the
// largest inverted key is the lowest coordinate); an empty box reads as NaN. Then the radius
// of the bounding sphere about the box's centre, as float bits.
struct PhotonTarget {
    uvec3 lo;
    uint pad;
    uvec3 hi;
    uint radius_bits;
};

// The state buffer: the counters, then MAX_EMITTERS emitters, then a target per material and
// the scene's bounds last.
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer PhotonCountersRef { PhotonCounters c; };
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer PhotonEmitters { PhotonEmitter v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer PhotonTargets { PhotonTarget v[]; };

const uint64_t EMITTERS_OFFSET = 16ul;
const uint64_t TARGETS_OFFSET = 16ul + uint64_t(MAX_EMITTERS) * 48ul;

#endif
