// canopy's BVH traversal for an application's own shaders: trace rays through a binary BVH
// canopy built (an LBVH, fast or high quality) from any compute shader the application
// compiles itself, over buffer device addresses; no descriptors.
//
// `#include "include/canopy_trace.glsl"` after the application's own `#version 460` and
// `layout(local_size_x = ...) in;`, with canopy's `glsl/` folder (`canopy::GLSL_DIR`) on the
// include path, e.g. `glslc --target-env=vulkan1.2 -I $GLSL_DIR app.comp -o app.spv`. It requires
// the device features canopy requires (bufferDeviceAddress, scalarBlockLayout, shaderInt64) and
// declares canopy's GLSL names (Ray, Hit, RayQuery, BvhNode, LeafTriangle, BvhInstance, their
// buffer references, U32s, F32s, ... and everything prefixed canopy_ or bvh_): an
// application's own names must differ. It declares no specialization constants, push
// constants or descriptors.
//
// The tree: `nodes` is `Bvh::nodes.address()` (BvhNode per internal node, 64 bytes, root at
// 0; see bvh/format.glsl), `leaves` is `Bvh::leaf_triangles.address()` (a LeafTriangle of 48
// bytes per leaf: three vertices, the triangle's id in the first's w), `primitive_count` the
// tree's triangles (`Bvh::primitive_count()`; 0: every ray misses). Rays are an origin and a
// direction (not necessarily unit) and an open interval (tmin, tmax) of t; a hit's t is along
// that direction, and u, v weigh the triangle's second and third vertices. Hits are the ones
// canopy's own trace finds (the same walk, bvh/walk.glsl, and the same watertight triangle
// test). Cut-outs (alpha masks) are not applied here.
//
// - canopy_trace_closest: the closest hit, or triangle == MISS (t = tmax).
// - canopy_trace_any: whether anything is hit (occlusion).
// - canopy_trace_instances_closest, canopy_trace_instances_any: the same through a two-level
//   BVH (instances of meshes under a top tree, TwoLevelBvh), handed over as a CanopyInstances
//   (TwoLevelBvh::shader_view, 32 bytes: the top tree's and the instances' addresses, the
//   instance count and the rays' mask); a hit's triangle numbers the instances' triangles one
//   after another in instance order (TwoLevelBvh::locate turns it back into an instance).
// - canopy_trace_boxes_closest, canopy_trace_boxes_any, canopy_trace_boxes_all: with
//   CANOPY_BOX_PRIMITIVES defined before the include, the same through a tree of boxes
//   (BoxTreeBuilder) around primitives the application intersects itself: each box the ray
//   reaches goes to the application's
//     bool canopy_intersect_box(uint box, vec3 origin, vec3 direction, float tmin, inout float t)
//   (declared here), which returns whether the ray meets its primitive in (tmin, t) and
//   writes that t; a hit's triangle is the box's index.
// - canopy_trace_all: with CANOPY_ALL_HITS defined before the include, every hit in (tmin,
//   tmax), in no set order, handed to the application's
//     bool canopy_on_hit(uint ray_id, float t, uint triangle, vec2 uv)
//   (declared here, defined by the application), which returns true to stop the walk.
#ifndef CANOPY_TRACE_INCLUDE
#define CANOPY_TRACE_INCLUDE
#define CANOPY_FOREIGN_STAGE
#include "../common/ray.glsl"
#include "../bvh/format.glsl"
#include "../bvh/walk.glsl"
#include "../bvh/walk_instances.glsl"

// A hit as canopy_trace_closest returns it.
struct CanopyHit {
    float t;       // along the ray's direction; tmax for a miss
    uint triangle; // the triangle's id, MISS for none
    vec2 uv;       // weights of its second and third vertices
};

// A two-level BVH (TwoLevelBvh) as its TwoLevelBvh::shader_view gives it.
struct CanopyInstances {
    uint64_t top_nodes;  // the top tree's BvhNode array
    uint64_t top_leaves; // its LeafTriangle array (a leaf's id names an instance)
    uint64_t instances;  // the BvhInstance records
    uint instance_count; // instances in the top tree; 0: every ray misses
    uint ray_mask;       // instances sharing no bit with it are skipped
};

#ifdef CANOPY_ALL_HITS
// The ray being walked: its id, as canopy_trace_all hands it to canopy_on_hit.
uint canopy_ray_id;
bool canopy_on_hit(uint ray_id, float t, uint triangle, vec2 uv);
#endif

#ifdef CANOPY_BOX_PRIMITIVES
// The application's intersection of its primitive inside box `box` (the box's index in the
// tree's build) with the ray: whether the ray meets it at a t in (tmin, t), that t then
// written to t.
bool canopy_intersect_box(uint box, vec3 origin, vec3 direction, float tmin, inout float t);
// Whether the walk is in a tree of boxes, and its ray.
bool canopy_walking_boxes = false;
Ray canopy_box_ray;
#endif

// The walk's leaf test: the leaf's triangle, or in a tree of boxes the application's
// primitive in the leaf's box; in BVH_ALL mode every hit goes to the application's callback
// and t stays as it was.
bool bvh_leaf_hit(RayQuery q, LeafTriangles leaves, uint leaf, uint mode, inout float t,
                  inout uint triangle, inout vec2 uv) {
    LeafTriangle l = leaves.v[leaf];
    uint id = floatBitsToUint(l.a.w);
    float candidate = t;
    vec2 weights = vec2(0.0);
#ifdef CANOPY_BOX_PRIMITIVES
    if (canopy_walking_boxes) {
        if (!canopy_intersect_box(id, canopy_box_ray.origin, canopy_box_ray.direction, q.tmin,
                                  candidate)) {
            return false;
        }
    } else
#endif
    if (!intersect_triangle(q, l.a.xyz, l.b.xyz, l.c.xyz, candidate, weights)) {
        return false;
    }
#ifdef CANOPY_ALL_HITS
    if (mode == BVH_ALL) {
        return canopy_on_hit(canopy_ray_id, candidate, id, weights);
    }
#endif
    t = candidate;
    triangle = id;
    uv = weights;
    return true;
}

// The tree's walk for one ray in `mode`.
CanopyHit canopy_walk(uint64_t nodes, uint64_t leaves, uint primitive_count, vec3 origin,
                      vec3 direction, float tmin, float tmax, uint mode) {
    CanopyHit hit = CanopyHit(tmax, MISS, vec2(0.0));
    if (primitive_count != 0u) {
        RayWork unused = RayWork(0u, 0u);
        bvh_walk(BvhNodes(nodes), LeafTriangles(leaves),
                 ray_query(Ray(origin, tmin, direction, tmax)), mode, false, hit.t,
                 hit.triangle, hit.uv, unused);
    }
    return hit;
}

CanopyHit canopy_trace_closest(uint64_t nodes, uint64_t leaves, uint primitive_count,
                               vec3 origin, vec3 direction, float tmin, float tmax) {
    return canopy_walk(nodes, leaves, primitive_count, origin, direction, tmin, tmax, BVH_CLOSEST);
}

bool canopy_trace_any(uint64_t nodes, uint64_t leaves, uint primitive_count, vec3 origin,
                      vec3 direction, float tmin, float tmax) {
    return canopy_walk(nodes, leaves, primitive_count, origin, direction, tmin, tmax, BVH_ANY)
               .triangle != MISS;
}

// The two-level walk's leaf test: the leaf's triangle, numbered in its instance's range.
bool bvh_instance_leaf_hit(RayQuery q, LeafTriangles leaves, uint leaf, uint first_triangle,
                           inout float t, inout uint triangle, inout vec2 uv) {
    LeafTriangle l = leaves.v[leaf];
    float candidate = t;
    vec2 weights;
    if (!intersect_triangle(q, l.a.xyz, l.b.xyz, l.c.xyz, candidate, weights)) {
        return false;
    }
    t = candidate;
    triangle = first_triangle + floatBitsToUint(l.a.w);
    uv = weights;
    return true;
}

// The two-level walk for one ray in `mode` (BVH_CLOSEST or BVH_ANY).
CanopyHit canopy_walk_instances(CanopyInstances scene, vec3 origin, vec3 direction, float tmin,
                                float tmax, uint mode) {
    CanopyHit hit = CanopyHit(tmax, MISS, vec2(0.0));
    if (scene.instance_count != 0u) {
        RayWork unused = RayWork(0u, 0u);
        bvh_walk_instances(BvhNodes(scene.top_nodes), LeafTriangles(scene.top_leaves),
                           BvhInstances(scene.instances), Ray(origin, tmin, direction, tmax),
                           scene.ray_mask, mode, false, hit.t, hit.triangle, hit.uv, unused);
    }
    return hit;
}

CanopyHit canopy_trace_instances_closest(CanopyInstances scene, vec3 origin, vec3 direction,
                                         float tmin, float tmax) {
    return canopy_walk_instances(scene, origin, direction, tmin, tmax, BVH_CLOSEST);
}

bool canopy_trace_instances_any(CanopyInstances scene, vec3 origin, vec3 direction, float tmin,
                                float tmax) {
    return canopy_walk_instances(scene, origin, direction, tmin, tmax, BVH_ANY).triangle != MISS;
}

#ifdef CANOPY_ALL_HITS
void canopy_trace_all(uint64_t nodes, uint64_t leaves, uint primitive_count, uint ray_id,
                      vec3 origin, vec3 direction, float tmin, float tmax) {
    canopy_ray_id = ray_id;
    canopy_walk(nodes, leaves, primitive_count, origin, direction, tmin, tmax, BVH_ALL);
}
#endif

#ifdef CANOPY_BOX_PRIMITIVES
// The walk of a tree of boxes (BoxTreeBuilder) for one ray in `mode`: a hit's triangle is the
// box's index, its uv zero.
CanopyHit canopy_walk_boxes(uint64_t nodes, uint64_t leaves, uint box_count, vec3 origin,
                            vec3 direction, float tmin, float tmax, uint mode) {
    canopy_walking_boxes = true;
    canopy_box_ray = Ray(origin, tmin, direction, tmax);
    CanopyHit hit = canopy_walk(nodes, leaves, box_count, origin, direction, tmin, tmax, mode);
    canopy_walking_boxes = false;
    return hit;
}

CanopyHit canopy_trace_boxes_closest(uint64_t nodes, uint64_t leaves, uint box_count,
                                     vec3 origin, vec3 direction, float tmin, float tmax) {
    return canopy_walk_boxes(nodes, leaves, box_count, origin, direction, tmin, tmax,
                             BVH_CLOSEST);
}

bool canopy_trace_boxes_any(uint64_t nodes, uint64_t leaves, uint box_count, vec3 origin,
                            vec3 direction, float tmin, float tmax) {
    return canopy_walk_boxes(nodes, leaves, box_count, origin, direction, tmin, tmax, BVH_ANY)
               .triangle != MISS;
}

#ifdef CANOPY_ALL_HITS
void canopy_trace_boxes_all(uint64_t nodes, uint64_t leaves, uint box_count, uint ray_id,
                            vec3 origin, vec3 direction, float tmin, float tmax) {
    canopy_ray_id = ray_id;
    canopy_walk_boxes(nodes, leaves, box_count, origin, direction, tmin, tmax, BVH_ALL);
}
#endif
#endif

#endif
