#version 460
// Closest-hit or any-hit queries of a batch of rays against a binary BVH (bvh/format.glsl):
// one invocation per ray walks the tree (bvh/walk.glsl: both child boxes tested at each node,
// the nearer inner child first, the farther pushed with its entry distance) and tests each
// leaf it meets with the watertight ray/triangle test (common/ray.glsl), passing through
// cut-outs (bvh/leaf_hit.glsl). Any-hit (occlusion) queries stop at the first hit. Every ray
// writes a Hit; a miss has triangle = MISS and t = tmax.
//
// With COUNT_WORK set, each ray also writes its RayWork (what bvh/walk.glsl counts). Example:
// a ray that enters only the root's left box, whose node has leaves 3 and 4 as children, and
// there only leaf 4's box, visits 2 nodes and tests 1 primitive. With COUNT_WORK false (the
// fast path) the driver folds the constant and drops the counting. src/accel/bvh/traverse.rs
// trace_bvh walks the tree in the same order and counts the same way.
#include "../common/prelude.glsl"
#include "bvh/format.glsl"
#include "../common/ray.glsl"
#include "bvh/leaf_hit.glsl"
#include "bvh/walk.glsl"

layout(constant_id = 2) const bool ANY_HIT = false;
layout(constant_id = 3) const bool COUNT_WORK = false;

layout(push_constant, scalar) uniform Push {
    uint64_t nodes_address;          // BvhNode per internal node
    uint64_t leaf_triangles_address; // LeafTriangle per leaf
    uint64_t rays_address;           // Ray per query
    uint64_t hits_address;           // out: Hit per query
    uint64_t count_address;          // ray count on the device, or 0
    uint host_count;                 // ray count from the host
    uint primitive_count;            // 0: every ray misses
    uint64_t work_address;           // out: RayWork per query, with COUNT_WORK
    uint64_t cutouts_address;        // the scene's appearance where materials cut out, or 0
} pc;

// The walk's leaf test: the leaf's triangle, past cut-outs.
bool bvh_leaf_hit(RayQuery q, LeafTriangles leaves, uint leaf, uint mode, inout float t,
                  inout uint triangle, inout vec2 uv) {
    return hit_leaf(q, leaves, leaf, 0u, pc.cutouts_address, t, triangle, uv);
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= element_count(pc.count_address, pc.host_count)) {
        return;
    }
    Ray ray = Rays(pc.rays_address).v[i];
    float t = ray.tmax;
    uint triangle = MISS;
    vec2 uv = vec2(0.0);
    RayWork work = RayWork(0u, 0u);
    if (pc.primitive_count != 0u) {
        bvh_walk(BvhNodes(pc.nodes_address), LeafTriangles(pc.leaf_triangles_address),
                 ray_query(ray), ANY_HIT ? BVH_ANY : BVH_CLOSEST, COUNT_WORK, t, triangle, uv,
                 work);
    }
    Hits(pc.hits_address).v[i] = Hit(t, triangle, uv.x, uv.y);
    if (COUNT_WORK) {
        RayWorks(pc.work_address).v[i] = work;
    }
}
