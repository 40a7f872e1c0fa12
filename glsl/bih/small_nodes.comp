#version 460
// The BIH build's small-node stage: one workgroup per small task (a node of at most the
// large-node threshold's primitives, or any node left when the large-node rounds end) builds
// that node's whole subtree, after the binned-SAH builder of seed 004 and the CPU reference
// src/accel/bih/cpu.rs build_bih, whose arithmetic it repeats. The workgroup keeps the
// subtree's pending nodes on a stack in shared memory, so it never waits on another workgroup
// and the stage is one dispatch. For each node:
// 1. The node's primitives are read from its run and their boxes made from the triangles; the
//    workgroup reduces the box of their centroids and of the primitives themselves (subgroup
//    min/max, then shared atomics on order-preserving uints). The root (when the whole tree
//    is small) writes the scene box, which is its region; every other node's task carries its
//    region (the scene box cut by its ancestors' planes).
// 2. A node of at most max_leaf primitives, or at the depth limit, is a leaf. Otherwise the
//    primitives are binned and priced (bih/binned_sah.glsl) and the node becomes a split, a
//    clip node or a leaf.
// 3. A leaf copies its run into the leaf primitive list (at its own offset: runs never
//    overlap). A split reserves its two children with one atomic add on the node counter
//    (adjacent), a clip node its one child; the children go on the stack, and the run is
//    partitioned stably into the other index buffer at the same positions: the left side
//    first, each side in the run's order (a workgroup scan per tile of WORKGROUP_SIZE
//    primitives). A clip node's run is copied.
// Capacities are exact (src/accel/bih/mod.rs max_nodes), so nothing can overflow; the stack
// holds at most one pending sibling per level, so max_depth + 2 entries.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "../common/workgroup_scan.glsl"
#include "bih/format.glsl"
#include "bih/queue.glsl"
#include "bih/binned_sah.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address;       // vec3 per vertex
    uint64_t triangles_address;       // uvec3 per triangle
    uint64_t first_indices_address;   // u32 per primitive: runs (the first index buffer)
    uint64_t second_indices_address;  // u32 per primitive: runs (the second index buffer)
    uint64_t leaf_primitives_address; // out: the leaves' runs
    uint64_t nodes_address;           // out: BihNode per node
    uint64_t tasks_address;           // BihTask per small task
    uint64_t counters_address;        // u32: [0] nodes, [1] small tasks
    uint64_t bounds_address;          // out: Aabb, the scene box (written by a small root)
    uint max_depth;                   // nodes this deep are leaves
    uint max_leaf;                    // nodes of at most this many primitives are leaves
    float traversal_cost;             // Ct
    float intersection_cost;          // Ci
    uint clip_nodes;                  // 1 when clip nodes may be made
    uint pad;
} pc;

const uint STACK_SIZE = 66u;

shared BihTask stack[STACK_SIZE];
shared uint stack_size;
shared uint node_box[12]; // centroid lo, centroid hi, box lo, box hi: ordered uints
shared Decision decision;

Aabb primitive_box(uint primitive) {
    return triangle_box(pc.positions_address, pc.triangles_address, primitive);
}

// Builds the node of `task`, pushing its children (every invocation, uniformly).
void build_node(BihTask task) {
    uint lid = gl_LocalInvocationIndex;
    bool identity = (task.flags & TASK_IDENTITY) != 0u;
    uint in_buffer = (task.flags & TASK_RUN_IN_SECOND) != 0u ? 1u : 0u;
    U32s runs_in = U32s(in_buffer == 1u ? pc.second_indices_address : pc.first_indices_address);
    U32s runs_out = U32s(in_buffer == 1u ? pc.first_indices_address : pc.second_indices_address);
    uint depth = task.flags >> TASK_DEPTH_SHIFT;

    // 1. The centroid bounds and the node's box.
    if (lid < 12u) {
        node_box[lid] = (lid / 3u) % 2u == 0u ? 0xffffffffu : 0u;
    }
    clear_bins();
    barrier();
    vec3 c_lo = vec3(INF), c_hi = vec3(-INF), b_lo = vec3(INF), b_hi = vec3(-INF);
    for (uint k = lid; k < task.count; k += WORKGROUP_SIZE) {
        uint position = task.first + k;
        Aabb box = primitive_box(identity ? position : runs_in.v[position]);
        vec3 c = (box.lo + box.hi) * 0.5;
        c_lo = min(c_lo, c);
        c_hi = max(c_hi, c);
        b_lo = min(b_lo, box.lo);
        b_hi = max(b_hi, box.hi);
    }
    c_lo = subgroupMin(c_lo);
    c_hi = subgroupMax(c_hi);
    b_lo = subgroupMin(b_lo);
    b_hi = subgroupMax(b_hi);
    if (subgroupElect()) {
        for (uint a = 0; a < 3u; ++a) {
            atomicMin(node_box[a], ordered(c_lo[a]));
            atomicMax(node_box[3u + a], ordered(c_hi[a]));
            atomicMin(node_box[6u + a], ordered(b_lo[a]));
            atomicMax(node_box[9u + a], ordered(b_hi[a]));
        }
    }
    barrier();
    vec3 centroid_lo = vec3(unordered(node_box[0]), unordered(node_box[1]), unordered(node_box[2]));
    vec3 centroid_hi = vec3(unordered(node_box[3]), unordered(node_box[4]), unordered(node_box[5]));
    vec3 box_lo = vec3(unordered(node_box[6]), unordered(node_box[7]), unordered(node_box[8]));
    vec3 box_hi = vec3(unordered(node_box[9]), unordered(node_box[10]), unordered(node_box[11]));
    if (task.node == 0u) {
        task.region_lo = box_lo;
        task.region_hi = box_hi;
        if (lid == 0u) {
            Aabbs(pc.bounds_address).v[0] = Aabb(box_lo, 0u, box_hi, 0u);
        }
    }
    vec3 extent = centroid_hi - centroid_lo;
    vec3 scale = vec3(float(BINS)) / extent;
    bool may_split = task.count > pc.max_leaf && depth < pc.max_depth;

    // 2. The bins, the candidates' costs and the decision.
    if (may_split) {
        for (uint k = lid; k < task.count; k += WORKGROUP_SIZE) {
            uint position = task.first + k;
            Aabb box = primitive_box(identity ? position : runs_in.v[position]);
            vec3 c = (box.lo + box.hi) * 0.5;
            for (uint a = 0; a < 3u; ++a) {
                if (!splittable(extent[a])) {
                    continue;
                }
                uint bin = a * BINS + bin_of(c[a], centroid_lo[a], scale[a]);
                atomicAdd(bin_count[bin], 1u);
                atomicMin(bin_span[bin * 2u], ordered(box.lo[a]));
                atomicMax(bin_span[bin * 2u + 1u], ordered(box.hi[a]));
            }
        }
    }
    barrier();
    price_candidates(may_split, extent, task.region_lo, task.region_hi, vec2(pc.traversal_cost, pc.intersection_cost));
    barrier();
    select_candidate();
    barrier();
    if (lid == 0u) {
        bool may_clip = may_split && pc.clip_nodes != 0u && (task.flags & TASK_BELOW_CLIP) == 0u;
        Decision d = decide(task.count, may_clip, box_lo, box_hi, task.region_lo, task.region_hi,
                            vec2(pc.traversal_cost, pc.intersection_cost));
        decision = d;
        uint a = d.axis;
        uint child_flags = ((1u - in_buffer) == 1u ? TASK_RUN_IN_SECOND : 0u) | ((depth + 1u) << TASK_DEPTH_SHIFT);
        BihNodes nodes = BihNodes(pc.nodes_address);
        if (d.kind == CLIP) {
            uint child = atomicAdd(U32s(pc.counters_address).v[0], 1u);
            nodes.v[task.node] = BihNode(a | (child << 2), BIH_CLIP, d.planes);
            vec3 lo = task.region_lo;
            vec3 hi = task.region_hi;
            lo[a] = d.planes.x;
            hi[a] = d.planes.y;
            stack[stack_size] = BihTask(child, task.first, task.count, child_flags | TASK_BELOW_CLIP, lo, hi);
            stack_size += 1u;
        } else if (d.kind == SPLIT) {
            uint left = atomicAdd(U32s(pc.counters_address).v[0], 2u);
            nodes.v[task.node] = BihNode(a | (left << 2), BIH_SPLIT, d.planes);
            vec3 left_hi = task.region_hi;
            vec3 right_lo = task.region_lo;
            left_hi[a] = d.planes.x;
            right_lo[a] = d.planes.y;
            stack[stack_size] = BihTask(left + 1u, task.first + d.left_count, task.count - d.left_count, child_flags, right_lo, task.region_hi);
            stack[stack_size + 1u] = BihTask(left, task.first, d.left_count, child_flags, task.region_lo, left_hi);
            stack_size += 2u;
        } else {
            nodes.v[task.node] = BihNode(BIH_LEAF | (task.count << 2), task.first, vec2(0.0));
        }
    }
    barrier();

    // 3. A leaf's run, or the stable partition of a split's (a clip node's: a copy).
    Decision d = decision;
    if (d.kind == LEAF) {
        for (uint k = lid; k < task.count; k += WORKGROUP_SIZE) {
            uint position = task.first + k;
            U32s(pc.leaf_primitives_address).v[position] = identity ? position : runs_in.v[position];
        }
        return;
    }
    uint a = d.axis;
    uint left_base = 0u;
    uint right_base = 0u;
    for (uint tile = 0; tile < task.count; tile += WORKGROUP_SIZE) {
        uint k = tile + lid;
        bool valid = k < task.count;
        uint primitive = 0u;
        bool left = false;
        if (valid) {
            uint position = task.first + k;
            primitive = identity ? position : runs_in.v[position];
            Aabb box = primitive_box(primitive);
            float c = (box.lo[a] + box.hi[a]) * 0.5;
            left = d.kind == CLIP || bin_of(c, centroid_lo[a], scale[a]) < d.left_bins;
        }
        uint lefts;
        uint before = workgroup_exclusive_add(left ? 1u : 0u, lefts);
        if (valid) {
            uint position = left ? left_base + before : d.left_count + right_base + (lid - before);
            runs_out.v[task.first + position] = primitive;
        }
        uint in_tile = min(WORKGROUP_SIZE, task.count - tile);
        left_base += lefts;
        right_base += in_tile - lefts;
    }
}

void main() {
    uint task_index = flat_workgroup_id();
    if (task_index >= U32s(pc.counters_address).v[1]) {
        return;
    }
    if (gl_LocalInvocationIndex == 0u) {
        stack[0] = BihTasks(pc.tasks_address).v[task_index];
        stack_size = 1u;
    }
    barrier();
    while (stack_size > 0u) {
        BihTask task = stack[stack_size - 1u];
        barrier();
        if (gl_LocalInvocationIndex == 0u) {
            stack_size -= 1u;
        }
        build_node(task);
        barrier();
    }
}
