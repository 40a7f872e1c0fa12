// The ray/triangle tests of a leaf that lists its triangles by id (kd-tree and BIH leaves: a
// run of u32 ids in the leaf list, each naming a triangle's three vertex indices): every
// triangle of the run is tested (watertight, common/ray.glsl, less cut-outs), keeping the
// closest hit in t, triangle and uv; an any-hit query stops at its first hit. Returns whether
// a hit was found in the leaf.
//
// Each entry's id and vertex indices are read one test ahead, so that a test waits for its
// vertices only, not for the chain id -> indices -> vertices: a batch of rays is timed by its
// longest walk, whose tests are most of that chain (docs/lab/2026-11-27-kdtree-traversal.md).
//
// The includer declares the specialization constants ANY_HIT and COUNT_WORK before including
// this file; with COUNT_WORK each test adds one to work.primitives_tested.
#ifndef CANOPY_LEAF_LIST
#define CANOPY_LEAF_LIST
#include "prelude.glsl"
#include "ray.glsl"
#include "cutout.glsl"

bool test_leaf_list(RayQuery q, U32s leaves, UVec3s triangles, Vec3s positions, uint first,
                    uint count, uint64_t cutouts, inout float t, inout uint triangle,
                    inout vec2 uv, inout RayWork work) {
    bool found = false;
    uint next_id = count > 0u ? leaves.v[first] : 0u;
    uvec3 next_triangle = count > 0u ? triangles.v[next_id] : uvec3(0u);
    for (uint k = 0; k < count; ++k) {
        uint id = next_id;
        uvec3 corners = next_triangle;
        if (k + 1u < count) {
            next_id = leaves.v[first + k + 1u];
            next_triangle = triangles.v[next_id];
        }
        if (COUNT_WORK) {
            ++work.primitives_tested;
        }
        vec2 hit_uv;
        if (intersect_solid(q, positions.v[corners.x], positions.v[corners.y],
                            positions.v[corners.z], id, cutouts, t, hit_uv)) {
            triangle = id;
            uv = hit_uv;
            found = true;
            if (ANY_HIT) {
                break;
            }
        }
    }
    return found;
}

#endif
