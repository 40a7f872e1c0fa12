#version 460
// k-nearest-neighbour queries through a point kd-tree in one walk per query, one invocation
// per query: the classic kd-tree search (Friedman, Bentley and Finkel 1977) on seed 000's
// tree. The walk goes down the nearer child first and keeps the farther one on a stack with
// its box's squared distance; the list of the k nearest so far (knn.glsl's heap in (squared
// distance, index) order, as knn.comp's) bounds it: until the list is full a point or a box
// counts when it lies within the starting radius r0, after that when it lies no farther than
// the list's farthest entry (a point at that distance enters with a lower index, so the
// answer is the exact, deterministic k nearest, whatever the order of the walk). A popped box
// that the list has since outgrown is skipped. Where r0 held fewer than k points the walk runs
// again bounded by max_radius alone (INF for plain KNN), so any r0 costs time, never
// exactness. Against Alg. 6 (knn.comp) this is one walk instead of three range searches, and
// no histogram in shared memory.
//
// Example, k = 2, r0 = 1: the walk reaches the query's leaf first and keeps its two points at
// d2 0.04 and 0.09; from then on only boxes within d2 0.09 are opened, and a point at d2 0.01
// found later pushes the 0.09 out and tightens the bound to 0.04.
//
// Writes per query: the k (or fewer) nearest indices and squared distances (MISS and INF
// past the last); the final radius (the k-th neighbour's distance rounded up, so that its
// square is at least the k-th squared distance, or the bound where fewer than k lie within
// it) and the neighbours found. With a counters address it adds the work done (walks, boxes
// and points tested), one atomic per subgroup.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "pointkd/knn.glsl"

uint count_walks = 0;
uint count_nodes = 0;
uint count_points = 0;

// The farthest squared distance a point or a box may lie at and still count: below the
// bound's square until the list is full, then the list's farthest squared distance.
float reach2 = 0.0;

void take_point(vec4 entry, vec3 q) {
    float d2 = distance2(entry.xyz, q);
    uint id = floatBitsToUint(entry.w);
    if (d2 <= reach2 && list_takes(d2, id)) {
        list_insert(d2, id);
        if (kept == limit) {
            reach2 = best_d2[0];
        }
    }
}

// The k nearest to q with squared distance below r2, into the list.
void nearest_walk(vec3 q, float r2) {
    PointKdNodes nodes = PointKdNodes(pc.nodes_address);
    PointEntries entries = PointEntries(pc.entries_address);
    kept = 0;
    // The float below r2: `d2 <= reach2` is `d2 < r2`.
    reach2 = r2 > 0.0 ? uintBitsToFloat(floatBitsToUint(r2) - 1u) : -1.0;
    count_walks += 1;
    uint stack_node[POINT_KD_STACK_SIZE];
    float stack_d2[POINT_KD_STACK_SIZE];
    uint top = 0;
    PointKdNode n = nodes.v[0];
    count_nodes += 1;
    bool open = box_distance2(q, n.lo, n.hi) <= reach2;
    while (true) {
        if (open) {
            if ((n.word0 & 3u) == POINT_KD_LEAF) {
                uint end = n.word1 + (n.word0 >> 2);
                count_points += end - n.word1;
                for (uint e = n.word1; e < end; ++e) {
                    take_point(entries.v[e], q);
                }
            } else {
                uint left = n.word0 >> 2;
                PointKdNode a = nodes.v[left];
                PointKdNode b = nodes.v[left + 1];
                count_nodes += 2;
                float da = box_distance2(q, a.lo, a.hi);
                float db = box_distance2(q, b.lo, b.hi);
                bool left_first = da <= db;
                float near_d2 = left_first ? da : db;
                float far_d2 = left_first ? db : da;
                if (near_d2 <= reach2) {
                    if (far_d2 <= reach2) {
                        stack_node[top] = left_first ? left + 1 : left;
                        stack_d2[top] = far_d2;
                        top += 1;
                    }
                    n = left_first ? a : b;
                    continue;
                }
            }
        }
        // The next farther child still within reach, or the end of the walk.
        while (top > 0 && stack_d2[top - 1] > reach2) {
            top -= 1;
        }
        if (top == 0) {
            break;
        }
        top -= 1;
        n = nodes.v[stack_node[top]];
        open = true;
    }
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= element_count(pc.count_address, pc.host_count)) {
        return;
    }
    vec3 q;
    uint slot;
    knn_query(i, q, slot);
    PointKdHeader header = PointKdHeaders(pc.header_address).h;
    limit = min(pc.k, K_MAX);
    uint wanted = min(limit, header.point_count);
    float r = starting_radius(header, slot);
    if (wanted > 0) {
        nearest_walk(q, r * r);
        if (kept < wanted && r < pc.max_radius) {
            r = pc.max_radius;
            nearest_walk(q, r * r);
        }
    }
    if (kept == wanted && kept > 0) {
        // The k-th distance, rounded up until its square holds the k-th squared distance.
        // `precise`: without it NVIDIA's compiler may take sqrt(x)^2 for x and end the loop
        // a few ulps short.
        float last = best_d2[0];
        precise float k_th = sqrt(last);
        precise float square = k_th * k_th;
        while (square < last) {
            k_th = uintBitsToFloat(floatBitsToUint(k_th) + 1u);
            square = k_th * k_th;
        }
        r = min(k_th, r);
    }
    write_answers(slot, kept, r);
    add_work(count_walks, count_nodes, count_points);
}
