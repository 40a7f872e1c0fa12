#version 460
// The small-node stage, one invocation per node of at most T points (32): its whole subtree,
// depth first with a stack, each node a 32-bit mask of the node's points. A node's box comes
// from the first and last of its points in each axis's sorted order; its split is the plane
// of least VVH cost among its points' coordinates, scanned in sorted order with the left count
// running (the paper's bit masks over sorted lists), kept only when it costs less than testing
// every point, exactly as src/accel/pointkd/cpu.rs prices it (products and sums only), for R
// when it was given, else for the radius holding k_estimate points at the task's own density
// (its cell and points). Children are allocated as pairs; leaves write their points as
// consecutive runs over the node's own entries.
#include "pointkd/build.glsl"

const uint MAX_SMALL = 32;
const uint STACK = 64;

void main() {
    load_refs();
    uint s = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    PointKdBuildStates state = build_state();
    if (s >= min(state.v[0].small_tasks, refs.small_capacity)) {
        return;
    }
    PointKdTask task = PointKdTasks(refs.small).v[s];
    // The radius the whole subtree prices for: R when it was given, else the task's own.
    float radius = refs.radius;
    if (refs.local_radius != 0u) {
        radius = density_radius(max(task.cell_hi - task.cell_lo, vec3(0.0)), task.end - task.begin);
    }
    U32s lists = U32s(refs.lists[state.v[0].parity]);
    uint n = min(task.end - task.begin, MAX_SMALL);
    // Local points in list-0 order; each axis's sorted order as local indices.
    uint ids[MAX_SMALL];
    vec3 points[MAX_SMALL];
    uint order[3][MAX_SMALL];
    for (uint j = 0; j < n; ++j) {
        ids[j] = lists.v[task.begin + j];
        points[j] = point(ids[j]);
    }
    for (uint a = 0; a < 3; ++a) {
        for (uint k = 0; k < n; ++k) {
            uint id = lists.v[a * refs.stride + task.begin + k];
            uint local_index = 0;
            while (local_index < n - 1 && ids[local_index] != id) {
                local_index += 1;
            }
            order[a][k] = local_index;
        }
    }
    uint stack_node[STACK];
    uint stack_mask[STACK];
    uint stack_depth[STACK];
    vec3 stack_lo[STACK];
    vec3 stack_hi[STACK];
    uint top = 1;
    stack_node[0] = task.node;
    stack_mask[0] = n == 32 ? 0xffffffffu : (1u << n) - 1u;
    stack_depth[0] = task.depth;
    stack_lo[0] = task.cell_lo;
    stack_hi[0] = task.cell_hi;
    uint cursor = task.begin;
    PointKdNodes nodes = PointKdNodes(refs.nodes);
    while (top > 0) {
        top -= 1;
        uint node = stack_node[top];
        uint mask = stack_mask[top];
        uint depth = stack_depth[top];
        vec3 cell_lo = stack_lo[top];
        vec3 cell_hi = stack_hi[top];
        uint count = bitCount(mask);
        vec3 lo = vec3(INF);
        vec3 hi = vec3(-INF);
        for (uint a = 0; a < 3; ++a) {
            for (uint k = 0; k < n; ++k) {
                if ((mask & (1u << order[a][k])) != 0) {
                    float x = points[order[a][k]][a];
                    lo[a] = min(lo[a], x);
                    hi[a] = max(hi[a], x);
                }
            }
        }
        // The split of least VVH cost, if any beats a leaf. The cost Cts + (n_L V_L + n_R V_R)
        // / V is compared without its division, which Vulkan lets a device round by up to 2.5
        // ulps: a split beats the leaf when n_L V_L + n_R V_R < (n - Cts) V, and the least
        // such sum wins, as src/accel/pointkd/cpu.rs prices them.
        uint best_axis = NO_SPLIT;
        float best_plane = 0.0;
        if (!(count <= refs.max_leaf || depth >= refs.max_depth || lo == hi)) {
            float parent = grown_volume(cell_lo, cell_hi, radius);
            precise float best = (float(count) - refs.traversal_cost) * parent;
            for (uint a = 0; a < 3; ++a) {
                uint left = 0;
                float previous = 0.0;
                for (uint k = 0; k < n; ++k) {
                    uint j = order[a][k];
                    if ((mask & (1u << j)) == 0) {
                        continue;
                    }
                    float x = points[j][a];
                    if (left > 0 && x != previous) {
                        vec3 left_hi = cell_hi;
                        left_hi[a] = x;
                        vec3 right_lo = cell_lo;
                        right_lo[a] = x;
                        precise float weighted = float(left) * grown_volume(cell_lo, left_hi, radius)
                            + float(count - left) * grown_volume(right_lo, cell_hi, radius);
                        if (weighted < best) {
                            best = weighted;
                            best_axis = a;
                            best_plane = x;
                        }
                    }
                    previous = x;
                    left += 1;
                }
            }
        }
        if (best_axis == NO_SPLIT || top + 2 > STACK) {
            nodes.v[node] = PointKdNode(lo, POINT_KD_LEAF | (count << 2), hi, cursor);
            for (uint j = 0; j < n; ++j) {
                if ((mask & (1u << j)) != 0) {
                    lists.v[cursor] = ids[j];
                    cursor += 1;
                }
            }
            continue;
        }
        uint children = atomicAdd(state.v[0].node_count, 2);
        if (children + 2 > refs.node_capacity) {
            atomicOr(state.v[0].overflow, 1);
            return;
        }
        nodes.v[node] = PointKdNode(lo, best_axis | (children << 2), hi, floatBitsToUint(best_plane));
        uint left_mask = 0;
        for (uint j = 0; j < n; ++j) {
            if ((mask & (1u << j)) != 0 && points[j][best_axis] < best_plane) {
                left_mask |= 1u << j;
            }
        }
        vec3 left_hi = cell_hi;
        left_hi[best_axis] = best_plane;
        vec3 right_lo = cell_lo;
        right_lo[best_axis] = best_plane;
        // The right child below the left on the stack: the left's leaves come first.
        stack_node[top] = children + 1;
        stack_mask[top] = mask & ~left_mask;
        stack_depth[top] = depth + 1;
        stack_lo[top] = right_lo;
        stack_hi[top] = cell_hi;
        stack_node[top + 1] = children;
        stack_mask[top + 1] = left_mask;
        stack_depth[top + 1] = depth + 1;
        stack_lo[top + 1] = cell_lo;
        stack_hi[top + 1] = left_hi;
        top += 2;
    }
}
