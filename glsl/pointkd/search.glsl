// The range search every point kd-tree query is made of: the points within squared distance
// r2 of q, found depth first with a stack, skipping nodes whose box lies beyond the radius.
// The including kernel says what to do with each point found by defining
//     void visit_point(vec4 entry, float d2);   // entry: position and index bits
// (knn.comp: histograms and the k-nearest list; glsl/photons/estimate.comp: the photons'
// power). The walk counts its work in search_count_* for the kernels' counters.
#ifndef CANOPY_POINTKD_SEARCH
#define CANOPY_POINTKD_SEARCH
#include "pointkd/format.glsl"

uint search_count_walks = 0;
uint search_count_nodes = 0;
uint search_count_points = 0;

void visit_point(vec4 entry, float d2);

// Every point within squared distance r2 of q, each visited once; returns how many there are.
uint range_search(uint64_t nodes_address, uint64_t entries_address, vec3 q, float r2) {
    PointKdNodes nodes = PointKdNodes(nodes_address);
    PointEntries entries = PointEntries(entries_address);
    uint stack[POINT_KD_STACK_SIZE];
    uint top = 0;
    uint node = 0;
    uint count = 0;
    search_count_walks += 1;
    while (true) {
        PointKdNode n = nodes.v[node];
        search_count_nodes += 1;
        if (box_distance2(q, n.lo, n.hi) < r2) {
            if ((n.word0 & 3u) == POINT_KD_LEAF) {
                uint end = n.word1 + (n.word0 >> 2);
                search_count_points += end - n.word1;
                for (uint e = n.word1; e < end; ++e) {
                    vec4 entry = entries.v[e];
                    float d2 = distance2(entry.xyz, q);
                    if (d2 < r2) {
                        count += 1;
                        visit_point(entry, d2);
                    }
                }
            } else {
                stack[top++] = (n.word0 >> 2) + 1;
                node = n.word0 >> 2;
                continue;
            }
        }
        if (top == 0) {
            break;
        }
        node = stack[--top];
    }
    return count;
}

#endif
