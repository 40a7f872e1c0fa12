#version 460
// Closest-hit or any-hit queries of a batch of rays against an 8-wide compressed BVH
// (bvh/wide_format.glsl). One invocation per ray walks the tree with a per-ray stack: at each node
// every child's box is tested against the closest hit so far (its planes taken straight to
// distances along the ray, PlaneDistances below; the decoded box's slab test for rays with a zero
// direction component), then the leaves entered are intersected in slot order (watertight test,
// common/ray.glsl). Nodes are 80 bytes, so one read tests eight children where the binary tree's
// 64-byte node tests two. The slot loop is unrolled, so the node's words, the slot's planes and
// the children entered stay in registers; the triangle test runs in its own loop, one copy in
// the code. Every ray writes a Hit; a miss has triangle = MISS and t = tmax.
//
// Closest-hit queries keep the nearest internal child entered (the lower slot on ties) in
// registers and visit it next if it is still nearer than the closest hit once the node's leaves
// are tested; the node's other children entered are pushed in slot order with their entry
// distances (a child that was the nearest until a later slot's is pushed then), to be popped
// only while nearer than the closest hit. Ordering every child (by a sorting network in
// registers, or by insertion on the stack) measured slower on camera rays.
//
// Any-hit (occlusion) queries stop at the first hit, so their order buys nothing: a node's
// internal children entered are visited in slot order, depth first, and the stack holds one
// entry per node whose children are not all visited yet (the first child's index and a mask of
// those left), where closest-hit queries push each child.
//
// With COUNT_WORK set, each ray also writes its RayWork: nodes read, and ray/triangle tests
// run (one per leaf whose box was entered). src/accel/bvh/wide/cpu.rs trace_wide walks the
// tree in the same order and counts the same way.
//
// The stack bound: a node with k internal children entered pushes at most k - 1 entries
// (closest hit) or one (any hit), so a ray holds at most the tree's stack need, which its build
// records; a tree needing more than STACK_SIZE is traced through the binary tree instead
// (WideBvh::fits_traversal_stack).
#include "../common/prelude.glsl"
#include "bvh/wide_format.glsl"
#include "../common/ray.glsl"
#include "bvh/leaf_hit.glsl"

layout(constant_id = 2) const bool ANY_HIT = false;
layout(constant_id = 3) const bool COUNT_WORK = false;
const uint STACK_SIZE = 128;
const uint INVALID_NODE = 0xffffffffu;

layout(push_constant, scalar) uniform Push {
    uint64_t nodes_address;          // WideNode per node
    uint64_t leaf_triangles_address; // LeafTriangle per leaf, in the wide tree's order
    uint64_t rays_address;           // Ray per query
    uint64_t hits_address;           // out: Hit per query
    uint64_t count_address;          // ray count on the device, or 0
    uint host_count;                 // ray count from the host
    uint primitive_count;            // 0: every ray misses
    uint64_t work_address;           // out: RayWork per query, with COUNT_WORK
    uint64_t cutouts_address;        // the scene's appearance where materials cut out, or 0
} pc;

// A node's planes in ray space, for rays with no zero direction component: plane q of axis k
// is at distance fma(q, scale[k], offset[k]) along the ray (one multiply-add, where decoding
// the plane and then the slab test take four operations). Rounding in scale, offset and the
// fused sum stays within a few ulps of the largest magnitude involved on that axis (the
// node's and the ray's coordinates and the node's extent, in ray units); `slack[k]`, 2^-20 of
// it, widens every box's interval on axis k by more, so none is missed where the decoded box
// would be entered.
struct PlaneDistances {
    vec3 scale;
    vec3 offset;
    vec3 slack;
};

PlaneDistances plane_distances(RayQuery q, vec3 origin, vec3 steps) {
    PlaneDistances d;
    d.scale = steps * q.inv_direction;
    d.offset = (origin - q.origin) * q.inv_direction;
    vec3 magnitude = (abs(origin) + abs(q.origin) + 255.0 * steps) * abs(q.inv_direction);
    d.slack = magnitude * (1.0 / 1048576.0);
    return d;
}

float plane_distance(PlaneDistances d, uint axis, uint plane) {
    precise float distance = fma(float(plane), d.scale[axis], d.offset[axis]);
    return distance;
}

// The entry distance of a slot whose planes lie at t_lo and t_hi along the ray, clipped to
// [tmin, tmax], each axis widened by its slack; INF when the ray misses it.
float slot_entry(RayQuery q, PlaneDistances d, vec3 t_lo, vec3 t_hi, float tmax) {
    vec3 near = min(t_lo, t_hi) - d.slack;
    vec3 far = max(t_lo, t_hi) + d.slack;
    float enter = max(max(near.x, near.y), max(near.z, q.tmin));
    float leave = min(min(far.x, far.y), min(far.z, tmax));
    return enter <= leave ? enter : INF;
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= element_count(pc.count_address, pc.host_count)) {
        return;
    }
    Ray ray = Rays(pc.rays_address).v[i];
    RayQuery q = ray_query(ray);
    bool parallel_ray = any(q.parallel);
    float t = ray.tmax;
    uint triangle = MISS;
    vec2 uv = vec2(0.0);

    WideNodeWords nodes = WideNodeWords(pc.nodes_address);
    LeafTriangles leaves = LeafTriangles(pc.leaf_triangles_address);
    // Closest hit: (node, entry distance bits); any hit: (first child, mask of children left).
    uvec2 stack[STACK_SIZE];
    uint depth = 0;
    uint node = 0;
    // Any hit: the children of the latest node not visited yet, as stacked.
    uvec2 siblings = uvec2(0u);
    RayWork work = RayWork(0u, 0u);
    bool searching = pc.primitive_count != 0u;
    while (searching) {
        if (COUNT_WORK) {
            ++work.nodes_visited;
        }
        // The node as five 16-byte words; every index below is a constant once the slot loop
        // is unrolled, so the node and the children entered stay in registers.
        uvec4 header = nodes.v[5u * node];
        uvec4 bases = nodes.v[5u * node + 1u];
        uvec4 planes[3] = uvec4[3](nodes.v[5u * node + 2u], nodes.v[5u * node + 3u],
                                   nodes.v[5u * node + 4u]);
        vec3 origin = uintBitsToFloat(header.xyz);
        vec3 steps = node_steps(header.w);
        PlaneDistances distances = plane_distances(q, origin, steps);
        uint internal_mask = header.w >> 24;
        uint slot_mask = internal_mask | bases.z;
        uint leaves_entered = 0u;
        // Any hit: the internal children entered, by rank among the node's internal children.
        uint children_entered = 0u;
        // Closest hit: the nearest internal child entered.
        float nearest_t = INF;
        uint nearest_node = INVALID_NODE;
        [[unroll]] for (uint j = 0u; j < WIDE_WIDTH; ++j) {
            if (((slot_mask >> j) & 1u) == 0u) {
                continue;
            }
            float entry;
            if (parallel_ray) {
                vec3 lo;
                vec3 hi;
                [[unroll]] for (uint k = 0u; k < 3u; ++k) {
                    lo[k] = decode_plane(origin[k], steps[k], plane_of(planes, k, j));
                    hi[k] = decode_plane(origin[k], steps[k], plane_of(planes, 3u + k, j));
                }
                entry = box_entry(q, lo, hi, t);
            } else {
                vec3 t_lo;
                vec3 t_hi;
                [[unroll]] for (uint k = 0u; k < 3u; ++k) {
                    t_lo[k] = plane_distance(distances, k, plane_of(planes, k, j));
                    t_hi[k] = plane_distance(distances, k, plane_of(planes, 3u + k, j));
                }
                entry = slot_entry(q, distances, t_lo, t_hi, t);
            }
            if (entry == INF) {
                continue;
            }
            if (((internal_mask >> j) & 1u) != 0u) {
                uint child = bases.x + bitCount(internal_mask & ((1u << j) - 1u));
                if (ANY_HIT) {
                    children_entered |= 1u << (child - bases.x);
                } else {
                    uvec2 farther = uvec2(child, floatBitsToUint(entry));
                    if (entry < nearest_t) {
                        farther = uvec2(nearest_node, floatBitsToUint(nearest_t));
                        nearest_t = entry;
                        nearest_node = child;
                    }
                    if (farther.x != INVALID_NODE && depth < STACK_SIZE) {
                        stack[depth] = farther;
                        ++depth;
                    }
                }
            } else {
                leaves_entered |= 1u << j;
            }
        }
        if (ANY_HIT && children_entered != 0u) {
            if (siblings.y != 0u && depth < STACK_SIZE) {
                stack[depth] = siblings;
                ++depth;
            }
            siblings = uvec2(bases.x, children_entered);
        }
        // The leaves entered, in slot order: one copy of the triangle test.
        bool found = false;
        while (leaves_entered != 0u && !found) {
            uint j = findLSB(leaves_entered);
            leaves_entered &= leaves_entered - 1u;
            if (COUNT_WORK) {
                ++work.primitives_tested;
            }
            uint k = bases.y + bitCount(bases.z & ((1u << j) - 1u));
            found = hit_leaf(q, leaves, k, 0u, pc.cutouts_address, t, triangle, uv) && ANY_HIT;
        }
        if (found) {
            break;
        }
        if (ANY_HIT) {
            // The next child of the latest node with children left.
            if (siblings.y == 0u && depth > 0u) {
                --depth;
                siblings = stack[depth];
            }
            searching = siblings.y != 0u;
            node = siblings.x + uint(findLSB(siblings.y));
            siblings.y &= siblings.y - 1u;
        } else if (nearest_t < t) {
            // The nearest child entered, still nearer than the closest hit.
            node = nearest_node;
        } else {
            // Pop the next node still nearer than the closest hit.
            searching = false;
            while (depth > 0u) {
                --depth;
                if (uintBitsToFloat(stack[depth].y) < t) {
                    node = stack[depth].x;
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
