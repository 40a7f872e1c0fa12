#version 460
// Closest-hit or any-hit queries of a batch of rays against a two-level BVH
// (src/accel/bvh/instances.rs): a top tree over the instances' world boxes, whose leaf names
// an instance in its triangle id, and below it each instance's mesh tree. One invocation per
// ray walks the top tree (bvh/walk.glsl as instance_walk). At an instance's leaf the ray is
// taken into the instance's object space by its world-to-object transform, the direction not
// normalized so that t means the same in both spaces, and walks the mesh's tree (bvh_walk)
// against the closest hit so far. A hit's triangle is the instance's first_triangle + the
// mesh's triangle id: the instances' triangles numbered one after another, as a scene with
// every instance's triangles copied out in instance order numbers them. Instances whose mask
// shares no bit with the batch's ray mask are skipped.
//
// With COUNT_WORK, each ray also writes its RayWork: the internal nodes of both levels it
// visited, and the primitives it tested, triangles and instance leaves alike.
#include "../common/prelude.glsl"
#include "bvh/format.glsl"
#include "bvh/instance_format.glsl"
#include "../common/ray.glsl"
#include "bvh/leaf_hit.glsl"

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

// What the two walks share: the ray in world space, the first triangle id of the instance
// being walked, and the mesh walks' counts.
Ray world_ray;
uint first_triangle;
RayWork mesh_work;

// The mesh walk's leaf test: the leaf's triangle, numbered in the instance's range.
bool bvh_leaf_hit(RayQuery q, LeafTriangles leaves, uint leaf, uint mode, inout float t,
                  inout uint triangle, inout vec2 uv) {
    return hit_leaf(q, leaves, leaf, first_triangle, pc.cutouts_address, t, triangle, uv);
}

#include "bvh/walk.glsl"

// The top walk's leaf test: the instance's mesh, walked in its object space.
bool instance_leaf_hit(RayQuery world, LeafTriangles top_leaves, uint leaf, uint mode,
                       inout float t, inout uint triangle, inout vec2 uv) {
    BvhInstance instance = BvhInstances(pc.instances_address).v[floatBitsToUint(top_leaves.v[leaf].a.w)];
    if ((instance.mask & pc.ray_mask) == 0u) {
        return false;
    }
    Ray local = world_ray;
    for (int row = 0; row < 3; ++row) {
        vec4 m = instance.world_to_object[row];
        local.origin[row] = dot(m.xyz, world_ray.origin) + m.w;
        local.direction[row] = dot(m.xyz, world_ray.direction);
    }
    first_triangle = instance.first_triangle;
    float before = t;
    bvh_walk(BvhNodes(instance.nodes_address), LeafTriangles(instance.leaves_address),
             ray_query(local), mode, COUNT_WORK, t, triangle, uv, mesh_work);
    return t < before;
}

#define BVH_WALK instance_walk
#define BVH_LEAF_HIT instance_leaf_hit
#include "bvh/walk.glsl"

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= element_count(pc.count_address, pc.host_count)) {
        return;
    }
    world_ray = Rays(pc.rays_address).v[i];
    mesh_work = RayWork(0u, 0u);
    float t = world_ray.tmax;
    uint triangle = MISS;
    vec2 uv = vec2(0.0);
    RayWork work = RayWork(0u, 0u);
    if (pc.instance_count != 0u) {
        instance_walk(BvhNodes(pc.top_nodes_address), LeafTriangles(pc.top_leaves_address),
                      ray_query(world_ray), ANY_HIT ? BVH_ANY : BVH_CLOSEST, COUNT_WORK, t,
                      triangle, uv, work);
    }
    Hits(pc.hits_address).v[i] = Hit(t, triangle, uv.x, uv.y);
    if (COUNT_WORK) {
        RayWorks(pc.work_address).v[i] = RayWork(work.nodes_visited + mesh_work.nodes_visited,
                                                 work.primitives_tested + mesh_work.primitives_tested);
    }
}
