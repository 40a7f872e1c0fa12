#version 460
// Closest-hit or any-hit queries of a batch of rays against a kd-tree (kdtree/format.glsl),
// stack-based as in Zhou et al. 2008 §4: the ray is clipped to the scene box, then at each
// internal node the distance to the split plane decides whether only the near child, only the
// far child, or both are visited (near first, the far child pushed with the rest of the
// interval). The ray's origin, direction and inverse along the node's axis are selected with
// conditionals rather than indexed by the axis, and each case is a flag, so the one push (a
// single 16-byte entry: node, enter, exit) is written in one place. In a leaf every triangle is
// tested (common/leaf_list.glsl, reading each entry one test ahead); pushed intervals
// starting beyond the closest hit are dropped, so a hit within a leaf ends the search (a ray
// lying in a split plane visits both children over the same interval).
// Any-hit queries stop at the first hit. Every ray writes a Hit (triangle = MISS, t = tmax
// when nothing is hit).
//
// With COUNT_WORK set, each ray also writes its RayWork: nodes visited, the nodes the
// traversal loop reads, internal and leaf (0 for a ray that misses the scene box), and
// primitives tested, the ray/triangle tests run in the leaves reached (a triangle in two
// leaves reached is tested twice). Example: a closest-hit ray that crosses the root's plane
// and finds its hit in the near child, a leaf of 3 triangles, visits 2 nodes and tests 3
// primitives; the far child pushed is dropped. With COUNT_WORK false (the fast path) the
// driver folds the constant and drops the counting. src/accel/kdtree/cpu.rs trace_kdtree walks the
// tree in the same order and counts the same way.
//
// The stack bound: a tree of depth D pushes at most D entries; KdTreeGpu::upload refuses trees
// deeper than STACK_SIZE (MAX_DEPTH in src/accel/kdtree/mod.rs).
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "kdtree/format.glsl"
#include "../common/ray.glsl"
#include "../common/cutout.glsl"

layout(constant_id = 2) const bool ANY_HIT = false;
layout(constant_id = 3) const bool COUNT_WORK = false;
#include "../common/leaf_list.glsl"
const uint STACK_SIZE = 64;

layout(push_constant, scalar) uniform Push {
    uint64_t nodes_address;          // KdNode per node, preorder
    uint64_t leaf_triangles_address; // u32 triangle ids, each leaf's a run
    uint64_t positions_address;      // vec3 per vertex
    uint64_t triangles_address;      // uvec3 per triangle
    uint64_t rays_address;           // Ray per query
    uint64_t hits_address;           // out: Hit per query
    uint64_t bounds_address;         // Aabb: the scene box the root covers
    uint64_t count_address;          // ray count on the device, or 0
    uint host_count;                 // ray count from the host
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
    RayWork work = RayWork(0u, 0u);

    Aabb bounds = Aabbs(pc.bounds_address).v[0];
    vec2 interval = box_interval(q, bounds.lo, bounds.hi, ray.tmax);
    if (interval.x <= interval.y) {
        float t_enter = interval.x;
        float t_exit = interval.y;
        KdNodes nodes = KdNodes(pc.nodes_address);
        U32s leaves = U32s(pc.leaf_triangles_address);
        Vec3s positions = Vec3s(pc.positions_address);
        UVec3s triangles = UVec3s(pc.triangles_address);
        // One 16-byte entry per pushed node: (node, enter bits, exit bits, unused).
        uvec4 stack[STACK_SIZE];
        uint depth = 0;
        uint node = 0;
        bool searching = true;
        while (searching) {
            if (COUNT_WORK) {
                ++work.nodes_visited;
            }
            KdNode n = nodes.v[node];
            while ((n.word0 & 3u) != KD_LEAF) {
                uint axis = n.word0 & 3u;
                float split = uintBitsToFloat(n.word1);
                // The ray's components along the axis, selected rather than indexed.
                bool x = axis == 0u;
                bool y = axis == 1u;
                float origin = x ? ray.origin.x : (y ? ray.origin.y : ray.origin.z);
                float direction = x ? ray.direction.x : (y ? ray.direction.y : ray.direction.z);
                float inv = x ? q.inv_direction.x : (y ? q.inv_direction.y : q.inv_direction.z);
                bool parallel = x ? q.parallel.x : (y ? q.parallel.y : q.parallel.z);
                bool below_first = origin < split || (origin == split && direction <= 0.0);
                uint right = n.word0 >> 2;
                uint near = below_first ? node + 1u : right;
                uint far = below_first ? right : node + 1u;
                float t_split = (split - origin) * inv;
                // Parallel to the plane: the origin's side, or both when the ray lies in it
                // (over the same interval). Starting in the plane: the side behind it over the
                // one point t = 0 (where a triangle lying in the plane, kept on that side, is
                // met), then the side ahead over the whole interval. Otherwise near only, far
                // only, or near with far pushed over the rest of the interval.
                bool in_plane_start = !parallel && t_split == 0.0 && t_enter <= 0.0;
                bool crossing = !parallel && !in_plane_start;
                bool near_only = crossing && (t_split > t_exit || t_split <= 0.0);
                bool far_only = crossing && !near_only && t_split < t_enter;
                bool both = crossing && !near_only && !far_only;
                bool push = both || in_plane_start || (parallel && origin == split);
                if (push && depth < STACK_SIZE) {
                    float enter = both ? t_split : t_enter;
                    stack[depth] = uvec4(in_plane_start ? near : far, floatBitsToUint(enter),
                                         floatBitsToUint(t_exit), 0u);
                    ++depth;
                }
                node = (in_plane_start || far_only) ? far : near;
                t_exit = in_plane_start ? 0.0 : (both ? t_split : t_exit);
                if (COUNT_WORK) {
                    ++work.nodes_visited;
                }
                n = nodes.v[node];
            }
            bool found = test_leaf_list(q, leaves, triangles, positions, n.word1, n.word0 >> 2,
                                        pc.cutouts_address, t, triangle, uv, work);
            if (found && ANY_HIT) {
                break;
            }
            // The next pushed interval that starts before the closest hit so far: once a hit
            // lies within this leaf, every pushed interval starts beyond it and the search ends.
            searching = false;
            while (depth > 0u) {
                --depth;
                uvec4 entry = stack[depth];
                if (uintBitsToFloat(entry.y) < t) {
                    node = entry.x;
                    t_enter = uintBitsToFloat(entry.y);
                    t_exit = uintBitsToFloat(entry.z);
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
