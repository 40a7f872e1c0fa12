#version 460
// Closest-hit or any-hit queries of a batch of rays against a two-level BVH
// (src/accel/bvh/instances.rs): a top tree over the instances' world boxes, whose leaf names
// an instance in its triangle id, and below it each instance's mesh tree. One invocation per
// ray walks both levels in one loop (bvh/walk_instances.glsl): at an instance the ray is taken
// into the instance's object space and walks the mesh's tree against the closest hit so far.
// A hit's triangle is the instance's first_triangle + the mesh's triangle id: the instances'
// triangles numbered one after another, as a scene with every instance's triangles copied out
// in instance order numbers them. Instances whose mask shares no bit with the batch's ray mask
// are skipped.
//
// With COUNT_WORK, each ray also writes its RayWork: the internal nodes of both levels it
// visited, and the primitives it tested, triangles and instance leaves alike.
#include "../common/prelude.glsl"
#include "bvh/format.glsl"
#include "bvh/instance_format.glsl"
#include "../common/ray.glsl"
#include "bvh/leaf_hit.glsl"
#include "bvh/walk_instances.glsl"

layout(constant_id = 2) const bool ANY_HIT = false;
layout(constant_id = 3) const bool COUNT_WORK = false;

layout(push_constant, scalar) uniform Push {
    uint64_t top_nodes_address;  // BvhNode per internal node of the top tree
    uint64_t top_leaves_address; // LeafTriangle per instance leaf (its id in a.w)
    uint64_t instances_address;  // BvhInstance per instance in the top tree
    uint64_t rays_address;       // Ray per query
    uint64_t hits_address;       // out: Hit per query
    uint64_t count_address;      // ray count on the device, or 0
    uint host_count;             // ray count from the host
    uint instance_count;         // instances in the top tree; 0: every ray misses
    uint64_t work_address;       // out: RayWork per query, with COUNT_WORK
    uint64_t cutouts_address;    // the scene's appearance where materials cut out, or 0
    uint ray_mask;               // instances sharing no bit with it are skipped
    uint pad;
} pc;

// The walk's leaf test: the leaf's triangle, past cut-outs.
bool bvh_instance_leaf_hit(RayQuery q, LeafTriangles leaves, uint leaf, uint first_triangle,
                           inout float t, inout uint triangle, inout vec2 uv) {
    return hit_leaf(q, leaves, leaf, first_triangle, pc.cutouts_address, t, triangle, uv);
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
    if (pc.instance_count != 0u) {
        bvh_walk_instances(BvhNodes(pc.top_nodes_address), LeafTriangles(pc.top_leaves_address),
                           BvhInstances(pc.instances_address), ray, pc.ray_mask,
                           ANY_HIT ? BVH_ANY : BVH_CLOSEST, COUNT_WORK, t, triangle, uv, work);
    }
    Hits(pc.hits_address).v[i] = Hit(t, triangle, uv.x, uv.y);
    if (COUNT_WORK) {
        RayWorks(pc.work_address).v[i] = work;
    }
}
