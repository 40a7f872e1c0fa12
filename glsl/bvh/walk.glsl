// One ray's walk through a binary BVH (bvh/format.glsl), shared by canopy's trace kernel
// (bvh/trace.comp) and applications' own shaders (include/canopy_trace.glsl). At each node
// both child boxes are tested; a leaf whose box the ray enters is handed to the includer's
// leaf test at once; of two inner children entered, the nearer is walked first and the farther
// pushed on a per-ray stack with its entry distance, and skipped when popped if a closer hit
// has been found since. What a leaf test does depends on the walk's mode:
// - BVH_CLOSEST: it takes a closer hit by lowering t; the walk goes on to the end.
// - BVH_ANY: the first hit it reports ends the walk. No distances are pushed: until that hit t
//   is the ray's tmax, so nothing pushed could be culled.
// - BVH_ALL: it reports every hit without lowering t (so every leaf the ray meets before tmax
//   is visited); a true return ends the walk early.
//
// The includer defines the leaf test bvh_leaf_hit declared below, which tests leaf `leaf` and
// returns whether it hit (BVH_ALL: whether to stop).
//
// With `count_work`, `work` counts the nodes visited (the internal nodes whose two child boxes
// were tested: the root, then each inner child entered directly or popped from the stack) and
// the leaf tests run. src/accel/bvh/traverse.rs trace_bvh walks in the same order and counts
// the same way.
//
// The stack bound: a ray holds at most one pushed node per level below the root. A radix tree
// over b-bit keys and n < 2^32 primitives is at most b + 32 levels deep (96 covers 63-bit
// codes); a clustered tree is checked against MAX_TRAVERSAL_HEIGHT after its build, and one too
// deep is never traced (Bvh::fits_traversal_stack); the guard below keeps the stack in bounds
// regardless.
#ifndef CANOPY_BVH_WALK
#define CANOPY_BVH_WALK
#include "bvh/format.glsl"
#include "../common/ray.glsl"

const uint BVH_STACK_SIZE = 96;

bool bvh_leaf_hit(RayQuery q, LeafTriangles leaves, uint leaf, uint mode, inout float t,
                  inout uint triangle, inout vec2 uv);

// Walks the tree of internal nodes `nodes` and leaves `leaves` (at least one primitive) from
// its root for ray `q` in `mode`; the leaf test updates t, triangle and uv.
void bvh_walk(BvhNodes nodes, LeafTriangles leaves, RayQuery q, uint mode, bool count_work,
              inout float t, inout uint triangle, inout vec2 uv, inout RayWork work) {
    uint stack_node[BVH_STACK_SIZE];
    float stack_t[BVH_STACK_SIZE];
    uint depth = 0;
    uint node = 0;
    bool ends_on_hit = mode != BVH_CLOSEST;
    while (true) {
        if (count_work) {
            ++work.nodes_visited;
        }
        BvhNode n = nodes.v[node];
        float t_left = box_entry(q, n.left_lo, n.left_hi, t);
        float t_right = box_entry(q, n.right_lo, n.right_hi, t);
        bool enter_left = t_left != INF;
        bool enter_right = t_right != INF;
        if (enter_left && (n.left & LEAF_BIT) != 0u) {
            enter_left = false;
            if (count_work) {
                ++work.primitives_tested;
            }
            if (bvh_leaf_hit(q, leaves, n.left & ~LEAF_BIT, mode, t, triangle, uv) && ends_on_hit) {
                return;
            }
        }
        if (enter_right && (n.right & LEAF_BIT) != 0u) {
            enter_right = false;
            if (count_work) {
                ++work.primitives_tested;
            }
            if (bvh_leaf_hit(q, leaves, n.right & ~LEAF_BIT, mode, t, triangle, uv) && ends_on_hit) {
                return;
            }
        }
        if (enter_left && enter_right) {
            bool left_first = t_left <= t_right;
            node = left_first ? n.left : n.right;
            if (depth < BVH_STACK_SIZE) {
                stack_node[depth] = left_first ? n.right : n.left;
                if (mode == BVH_CLOSEST) {
                    stack_t[depth] = left_first ? t_right : t_left;
                }
                ++depth;
            }
        } else if (enter_left) {
            node = n.left;
        } else if (enter_right) {
            node = n.right;
        } else {
            // Pop the next node still nearer than the closest hit (any other mode takes the
            // top: its t is the ray's tmax).
            bool popped = false;
            while (depth > 0u) {
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
}

#endif
