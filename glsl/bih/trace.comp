#version 460
// Closest-hit or any-hit queries of a batch of rays against a bounding interval hierarchy
// (bih/format.glsl), with the interval clipping of Wächter & Keller 2006: the ray is clipped
// to the scene box, and at each internal node the two planes give each child its own part of
// the ray's interval (for a ray going up the axis: the left child while the coordinate is at
// most clip.x, the right child from clip.y on; reversed for a ray going down; a ray parallel
// to the axis goes to the children whose side holds its origin). The near child is visited
// first and the far one pushed with its interval. A clip node narrows the ray's interval to
// the part between its two planes (Wächter & Keller's empty-space cut) and goes on to its one
// child. Intervals are widened by BOX_T_SLACK
// (2^-16, relative) so rounding never culls a child holding a hit. In a leaf every triangle is
// tested (common/leaf_list.glsl, reading each entry one test ahead); pushed intervals starting
// beyond the closest hit are dropped. Any-hit queries stop at the first hit. Every ray writes a Hit (triangle = MISS,
// t = tmax when nothing is hit).
//
// With COUNT_WORK set, each ray also writes its RayWork: nodes visited (every node the loop
// reads) and primitives tested, as src/accel/bih/cpu.rs trace_bih counts them.
//
// The stack bound: a tree of depth D pushes at most D entries; BihTreeGpu::upload refuses
// trees deeper than STACK_SIZE (MAX_DEPTH in src/accel/bih/trace.rs).
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "bih/format.glsl"
#include "../common/ray.glsl"
#include "../common/cutout.glsl"

layout(constant_id = 2) const bool ANY_HIT = false;
layout(constant_id = 3) const bool COUNT_WORK = false;
#include "../common/leaf_list.glsl"
const uint STACK_SIZE = 64;
const float BOX_T_SLACK = 1.0 / 65536.0;

layout(push_constant, scalar) uniform Push {
    uint64_t nodes_address;           // BihNode per node, the root first
    uint64_t leaf_primitives_address; // u32 triangle ids, each leaf's a run
    uint64_t positions_address;       // vec3 per vertex
    uint64_t triangles_address;       // uvec3 per triangle
    uint64_t rays_address;            // Ray per query
    uint64_t hits_address;            // out: Hit per query
    uint64_t bounds_address;          // Aabb: the scene box the root covers
    uint64_t count_address;           // ray count on the device, or 0
    uint host_count;                  // ray count from the host
    uint primitive_count;             // primitives in the tree (0: every ray misses)
    uint64_t work_address;            // out: RayWork per query, with COUNT_WORK
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
    if (pc.primitive_count > 0u && interval.x <= interval.y) {
        BihNodes nodes = BihNodes(pc.nodes_address);
        U32s leaves = U32s(pc.leaf_primitives_address);
        Vec3s positions = Vec3s(pc.positions_address);
        UVec3s triangles = UVec3s(pc.triangles_address);
        uint stack_node[STACK_SIZE];
        vec2 stack_span[STACK_SIZE];
        uint depth = 0;
        uint node = 0;
        vec2 span = interval;
        bool searching = true;
        while (searching) {
            searching = false;
            if (COUNT_WORK) {
                ++work.nodes_visited;
            }
            BihNode n = nodes.v[node];
            if ((n.word0 & 3u) == BIH_LEAF) {
                bool found = test_leaf_list(q, leaves, triangles, positions, n.word1, n.word0 >> 2,
                                            pc.cutouts_address, t, triangle, uv, work);
                if (found && ANY_HIT) {
                    break;
                }
            } else if (n.word1 == BIH_CLIP) {
                uint axis = n.word0 & 3u;
                float origin = ray.origin[axis];
                float t_a = (n.clip.x - origin) * q.inv_direction[axis];
                float t_b = (n.clip.y - origin) * q.inv_direction[axis];
                bool finite = !(isinf(t_a) || isnan(t_a) || isinf(t_b) || isnan(t_b));
                if (q.parallel[axis] || !finite) {
                    if (!(n.clip.x <= origin && origin <= n.clip.y)) {
                        span = vec2(INF, -INF);
                    }
                } else {
                    float near = min(t_a, t_b);
                    float far = max(t_a, t_b);
                    span = vec2(max(span.x, near - abs(near) * BOX_T_SLACK), min(span.y, far + abs(far) * BOX_T_SLACK));
                }
                if (span.x <= span.y) {
                    node = n.word0 >> 2;
                    searching = true;
                    continue;
                }
            } else {
                uint axis = n.word0 & 3u;
                uint left = n.word0 >> 2;
                float origin = ray.origin[axis];
                vec2 left_span;
                vec2 right_span;
                float t_left = (n.clip.x - origin) * q.inv_direction[axis];
                float t_right = (n.clip.y - origin) * q.inv_direction[axis];
                bool finite = !(isinf(t_left) || isnan(t_left) || isinf(t_right) || isnan(t_right));
                if (q.parallel[axis] || !finite) {
                    // Parallel to the axis (or so nearly that the distances overflow): the
                    // children whose side holds the origin, over the whole interval.
                    left_span = origin <= n.clip.x ? span : vec2(INF, -INF);
                    right_span = origin >= n.clip.y ? span : vec2(INF, -INF);
                } else {
                    float left_slack = abs(t_left) * BOX_T_SLACK;
                    float right_slack = abs(t_right) * BOX_T_SLACK;
                    if (ray.direction[axis] > 0.0) {
                        left_span = vec2(span.x, min(span.y, t_left + left_slack));
                        right_span = vec2(max(span.x, t_right - right_slack), span.y);
                    } else {
                        left_span = vec2(max(span.x, t_left - left_slack), span.y);
                        right_span = vec2(span.x, min(span.y, t_right + right_slack));
                    }
                }
                bool up = ray.direction[axis] >= 0.0;
                uint near = up ? left : left + 1u;
                uint far = up ? left + 1u : left;
                vec2 near_span = up ? left_span : right_span;
                vec2 far_span = up ? right_span : left_span;
                bool near_open = near_span.x <= near_span.y;
                bool far_open = far_span.x <= far_span.y;
                if (near_open) {
                    if (far_open && depth < STACK_SIZE) {
                        stack_node[depth] = far;
                        stack_span[depth] = far_span;
                        ++depth;
                    }
                    node = near;
                    span = near_span;
                    searching = true;
                    continue;
                }
                if (far_open) {
                    node = far;
                    span = far_span;
                    searching = true;
                    continue;
                }
            }
            // The next pushed interval that starts before the closest hit so far.
            while (depth > 0u) {
                --depth;
                if (stack_span[depth].x <= t + abs(t) * BOX_T_SLACK) {
                    node = stack_node[depth];
                    span = stack_span[depth];
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
