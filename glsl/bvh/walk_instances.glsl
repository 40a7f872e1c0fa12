// One ray's walk through a two-level BVH (src/accel/bvh/instances.rs) in one loop with one
// stack: the top tree over the instances' world boxes, and below each instance its mesh's
// binary BVH (bvh/format.glsl). The loop is bvh/walk.glsl's (both child boxes tested at each
// node, the nearer child entered first, the farther pushed with its entry distance and skipped
// when popped if a closer hit has been found since), with one difference between the levels:
// - in the top tree, a leaf is an instance: it is ordered and pushed like an inner node, and
//   entering it takes the ray into the instance's object space (its world-to-object transform;
//   the direction is not normalized, so t means the same in both spaces) and the walk into the
//   mesh's tree from its root; the stack's depth at that moment is kept;
// - in a mesh's tree, a leaf's triangle is tested at once by the includer's leaf test
//   bvh_instance_leaf_hit (declared below), which reports it as the instance's first_triangle +
//   its id in the mesh and returns whether it hit; an instance flagged
//   BVH_INSTANCE_SWAP_WEIGHTS reports the hit's weights swapped (u for the third vertex).
// When the stack falls back to the kept depth the mesh is done: the walk returns to the world
// ray and the top tree's entries. One loop rather than a walk nested in a walk, and the world
// ray's query made again on the way back rather than kept, keep the loop's registers few: on
// an H200 the first cut the two levels' time by 17-45%, the second by 3-20% more (BENCHMARKS.md,
// "Two levels"). Instances whose mask shares no bit with `ray_mask` are skipped. BVH_CLOSEST
// finds the closest hit, BVH_ANY stops at the first.
//
// With `count_work`, `work` counts the nodes visited in both levels and the primitives tested:
// triangles and instances entered alike.
#ifndef CANOPY_BVH_WALK_INSTANCES
#define CANOPY_BVH_WALK_INSTANCES
#include "bvh/format.glsl"
#include "bvh/instance_format.glsl"
#include "../common/ray.glsl"

// A stack deep enough for the tallest top tree and the tallest mesh tree traversal takes
// (MAX_TRAVERSAL_HEIGHT each).
const uint BVH_INSTANCE_STACK_SIZE = 192;
// The kept depth while the walk is in the top tree.
const uint BVH_IN_TOP_TREE = 0xffffffffu;

bool bvh_instance_leaf_hit(RayQuery q, LeafTriangles leaves, uint leaf, uint first_triangle,
                           inout float t, inout uint triangle, inout vec2 uv);

// `ray` taken into `instance`'s object space.
Ray bvh_object_ray(BvhInstance instance, Ray ray) {
    Ray local = ray;
    for (int row = 0; row < 3; ++row) {
        vec4 m = instance.world_to_object[row];
        local.origin[row] = dot(m.xyz, ray.origin) + m.w;
        local.direction[row] = dot(m.xyz, ray.direction);
    }
    return local;
}

// Walks the top tree `top_nodes`/`top_leaves` (at least one instance) over `instances` and
// the instances' meshes for `world_ray` in `mode`; updates t, triangle and uv.
void bvh_walk_instances(BvhNodes top_nodes, LeafTriangles top_leaves, BvhInstances instances,
                        Ray world_ray, uint ray_mask, uint mode, bool count_work,
                        inout float t, inout uint triangle, inout vec2 uv, inout RayWork work) {
    uint stack_node[BVH_INSTANCE_STACK_SIZE];
    float stack_t[BVH_INSTANCE_STACK_SIZE];
    uint depth = 0;
    RayQuery q = ray_query(world_ray);
    BvhNodes nodes = top_nodes;
    LeafTriangles leaves = top_leaves;
    uint first_triangle = 0;
    bool swap_weights = false;
    uint instance_depth = BVH_IN_TOP_TREE;
    uint node = 0;
    while (true) {
        bool walking = true;
        if (instance_depth == BVH_IN_TOP_TREE && (node & LEAF_BIT) != 0u) {
            // An instance reached: into its mesh, unless its mask hides it.
            if (count_work) {
                ++work.primitives_tested;
            }
            uint index = floatBitsToUint(top_leaves.v[node & ~LEAF_BIT].a.w);
            BvhInstance instance = instances.v[index];
            walking = (instance.mask & ray_mask) != 0u;
            if (walking) {
                q = ray_query(bvh_object_ray(instance, world_ray));
                nodes = BvhNodes(instance.nodes_address);
                leaves = LeafTriangles(instance.leaves_address);
                first_triangle = instance.first_triangle;
                swap_weights = (instance.flags & BVH_INSTANCE_SWAP_WEIGHTS) != 0u;
                instance_depth = depth;
                node = 0;
            }
        }
        if (walking) {
            if (count_work) {
                ++work.nodes_visited;
            }
            BvhNode n = nodes.v[node];
            float t_left = box_entry(q, n.left_lo, n.left_hi, t);
            float t_right = box_entry(q, n.right_lo, n.right_hi, t);
            bool enter_left = t_left != INF;
            bool enter_right = t_right != INF;
            if (instance_depth != BVH_IN_TOP_TREE) {
                if (enter_left && (n.left & LEAF_BIT) != 0u) {
                    enter_left = false;
                    if (count_work) {
                        ++work.primitives_tested;
                    }
                    if (bvh_instance_leaf_hit(q, leaves, n.left & ~LEAF_BIT, first_triangle, t,
                                              triangle, uv)) {
                        uv = swap_weights ? uv.yx : uv;
                        if (mode == BVH_ANY) {
                            return;
                        }
                    }
                }
                if (enter_right && (n.right & LEAF_BIT) != 0u) {
                    enter_right = false;
                    if (count_work) {
                        ++work.primitives_tested;
                    }
                    if (bvh_instance_leaf_hit(q, leaves, n.right & ~LEAF_BIT, first_triangle, t,
                                              triangle, uv)) {
                        uv = swap_weights ? uv.yx : uv;
                        if (mode == BVH_ANY) {
                            return;
                        }
                    }
                }
            }
            if (enter_left && enter_right) {
                bool left_first = t_left <= t_right;
                node = left_first ? n.left : n.right;
                if (depth < BVH_INSTANCE_STACK_SIZE) {
                    stack_node[depth] = left_first ? n.right : n.left;
                    if (mode == BVH_CLOSEST) {
                        stack_t[depth] = left_first ? t_right : t_left;
                    }
                    ++depth;
                }
                continue;
            }
            if (enter_left || enter_right) {
                node = enter_left ? n.left : n.right;
                continue;
            }
        }
        // Pop the next entry still nearer than the closest hit (BVH_ANY takes the top: its
        // t is the ray's tmax), back in the top tree once the mesh's entries are done.
        bool popped = false;
        while (depth > 0u) {
            if (depth == instance_depth) {
                q = ray_query(world_ray);
                nodes = top_nodes;
                leaves = top_leaves;
                instance_depth = BVH_IN_TOP_TREE;
            }
            --depth;
            if (mode != BVH_CLOSEST || stack_t[depth] < t) {
                node = stack_node[depth];
                popped = true;
                break;
            }
        }
        if (!popped) {
            return;
        }
    }
}

#endif
