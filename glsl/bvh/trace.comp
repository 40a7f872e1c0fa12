#version 460
// Closest-hit or any-hit queries of a batch of rays against a binary BVH (bvh/format.glsl).
// One invocation per ray walks the tree with a per-ray stack: at each node both child boxes
// are tested, leaves hit are intersected at once (watertight test, common/ray.glsl), and of
// two inner children the nearer is entered first while the farther is pushed with its entry
// distance, so it is skipped when a closer hit has been found by the time it is popped.
// Any-hit (occlusion) queries stop at the first hit, and push no distances: until then
// nothing pushed is culled. Every ray writes a Hit; a miss has
// triangle = MISS and t = tmax.
//
// With COUNT_WORK set, each ray also writes its RayWork: nodes visited, the internal nodes
// whose two child boxes were tested (the root always, in a tree with primitives; then each
// inner child entered directly or popped from the stack), and primitives tested, the
// ray/triangle tests run (one per leaf whose box was entered). Example: a ray that enters
// only the root's left box, whose node has leaves 3 and 4 as children, and there only leaf
// 4's box, visits 2 nodes and tests 1 primitive. With COUNT_WORK false (the fast path) the
// driver folds the constant and drops the counting. src/accel/bvh/traverse.rs trace_bvh walks the tree
// in the same order and counts the same way.
//
// The stack bound: a ray holds at most one pushed node per level below the root. A radix tree
// over b-bit keys and n < 2^32 primitives is at most b + 32 levels deep (96 covers 63-bit
// codes); a clustered tree is checked against MAX_TRAVERSAL_HEIGHT after its build.
#include "../common/prelude.glsl"
#include "bvh/format.glsl"
#include "../common/ray.glsl"
#include "bvh/leaf_hit.glsl"

layout(constant_id = 2) const bool ANY_HIT = false;
layout(constant_id = 3) const bool COUNT_WORK = false;
const uint STACK_SIZE = 96;

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

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= element_count(pc.count_address, pc.host_count)) {
        return;
    }
    Ray ray = Rays(pc.rays_address).v[i];
    RayQuery q = ray_query(ray);
    float t = ray.tmax;
    uint triangle = MISS;
    vec2 uv = vec2(0.0);

    BvhNodes nodes = BvhNodes(pc.nodes_address);
    LeafTriangles leaves = LeafTriangles(pc.leaf_triangles_address);
    uint stack_node[STACK_SIZE];
    float stack_t[STACK_SIZE];
    uint depth = 0;
    uint node = 0;
    RayWork work = RayWork(0u, 0u);
    bool searching = pc.primitive_count != 0u;
    while (searching) {
        if (COUNT_WORK) {
            ++work.nodes_visited;
        }
        BvhNode n = nodes.v[node];
        float t_left = box_entry(q, n.left_lo, n.left_hi, t);
        float t_right = box_entry(q, n.right_lo, n.right_hi, t);
        bool enter_left = t_left != INF;
        bool enter_right = t_right != INF;
        if (enter_left && (n.left & LEAF_BIT) != 0u) {
            enter_left = false;
            if (COUNT_WORK) {
                ++work.primitives_tested;
            }
            if (hit_leaf(q, leaves, n.left & ~LEAF_BIT, pc.cutouts_address, t, triangle, uv) && ANY_HIT) {
                break;
            }
        }
        if (enter_right && (n.right & LEAF_BIT) != 0u) {
            enter_right = false;
            if (COUNT_WORK) {
                ++work.primitives_tested;
            }
            if (hit_leaf(q, leaves, n.right & ~LEAF_BIT, pc.cutouts_address, t, triangle, uv) && ANY_HIT) {
                break;
            }
        }
        if (enter_left && enter_right) {
            bool left_first = t_left <= t_right;
            node = left_first ? n.left : n.right;
            // A tree too deep for the stack is reported by its build and never traced
            // (Bvh::fits_traversal_stack); the guard keeps the stack in bounds regardless.
            if (depth < STACK_SIZE) {
                stack_node[depth] = left_first ? n.right : n.left;
                if (!ANY_HIT) {
                    stack_t[depth] = left_first ? t_right : t_left;
                }
                ++depth;
            }
        } else if (enter_left) {
            node = n.left;
        } else if (enter_right) {
            node = n.right;
        } else {
            // Pop the next node still nearer than the closest hit. An any-hit query's t is
            // its tmax until the hit that ends it, so it takes the top without comparing.
            searching = false;
            while (depth > 0u) {
                --depth;
                if (ANY_HIT || stack_t[depth] < t) {
                    node = stack_node[depth];
                    searching = true;
                    break;
                }
            }
        }
    }
    Hits(pc.hits_address).v[i] = Hit(t, triangle, uv.x, uv.y);
    if (COUNT_WORK) {
        RayWorks(pc.work_address).v[i] = work;
    }
}
