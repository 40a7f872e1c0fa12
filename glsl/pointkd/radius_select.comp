#version 460
// PRECOMPUTERADIUS's choice of nodes (seed 000 Alg. 7), one invocation per node: the nodes of
// at most `top_points` points whose parent holds more (the top of the work list), with their
// descendants down to `levels` levels in all, are appended to a list of node queries (the
// node and its box's centre, with a starting radius short of its k-th neighbour's, below)
// whose k-th neighbour radius knn.comp then finds. The paper
// chooses by radius against a global R; a count follows the cloud's local density, so
// clusters and sparse regions get nodes of the same few tens of points. A leaf of more points
// is appended alone, so that every point's path from the root meets a chosen node and every
// point gets a conservative estimate. Nodes without points are skipped. Each invocation looks
// at its children (the root's invocation at the root too), so the parent's count is at hand;
// a node's points are the entries from its leftmost leaf's first to its rightmost leaf's end.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "pointkd/radius.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t nodes_address;    // PointKdNode
    uint64_t header_address;   // PointKdHeader: node count, R
    uint64_t centres_address;  // out: vec3 per chosen node
    uint64_t chosen_address;   // out: node index per chosen node
    uint64_t count_address;    // out: chosen nodes (zeroed before)
    uint64_t radii_address;    // out: starting radius per chosen node
    uint top_points;
    uint levels;               // 1 to MAX_LEVELS
    uint k;
    uint pad;
} pc;

const uint MAX_LEVELS = 4;
const uint MAX_CHOSEN = (1u << MAX_LEVELS) - 1u;

uint point_count(uint node);

void choose(uint node) {
    PointKdNode n = PointKdNodes(pc.nodes_address).v[node];
    if (node_is_empty(n)) {
        return;
    }
    uint at = atomicAdd(U32s(pc.count_address).v[0], 1u);
    Vec3s(pc.centres_address).v[at] = node_centre(n);
    U32s(pc.chosen_address).v[at] = node;
    // Short of the k-th neighbour rather than past it: half the box's half diagonal, scaled
    // by the square root of k over the node's points (as if they covered the box as a
    // surface does). Too small a radius costs a cheap doubling; too large a first pass can
    // sweep a dense cluster beside the node (photons around a caustic).
    float half_diagonal = 0.5 * length(n.hi - n.lo);
    float radius = 0.5 * half_diagonal * sqrt(min(float(pc.k) / float(point_count(node)), 1.0));
    // Points all at one place: the tree's R (a radius of 0 would double from nothing).
    if (!(radius > 0.0)) {
        radius = PointKdHeaders(pc.header_address).h.query_radius;
    }
    F32s(pc.radii_address).v[at] = radius;
}

// `top` and its descendants down to `levels` levels, breadth first.
void choose_levels(uint top) {
    uint queue[MAX_CHOSEN];
    uint level_end[MAX_LEVELS];
    uint head = 0;
    uint tail = 1;
    queue[0] = top;
    for (uint level = 0; level < pc.levels; ++level) {
        uint end = tail;
        for (; head < end; ++head) {
            uint node = queue[head];
            choose(node);
            PointKdNode n = PointKdNodes(pc.nodes_address).v[node];
            if (level + 1 < pc.levels && (n.word0 & 3u) != POINT_KD_LEAF) {
                queue[tail++] = n.word0 >> 2;
                queue[tail++] = (n.word0 >> 2) + 1;
            }
        }
    }
}

// The points under `node`: from its leftmost leaf's first entry to its rightmost leaf's end.
uint point_count(uint node) {
    PointKdNodes nodes = PointKdNodes(pc.nodes_address);
    uint left = node;
    while ((nodes.v[left].word0 & 3u) != POINT_KD_LEAF) {
        left = nodes.v[left].word0 >> 2;
    }
    uint right = node;
    while ((nodes.v[right].word0 & 3u) != POINT_KD_LEAF) {
        right = (nodes.v[right].word0 >> 2) + 1;
    }
    PointKdNode last = nodes.v[right];
    return last.word1 + (last.word0 >> 2) - nodes.v[left].word1;
}

// Child `c` of a node of more than top_points points (or the root, which has no parent).
void consider(uint c) {
    PointKdNode n = PointKdNodes(pc.nodes_address).v[c];
    if (point_count(c) <= pc.top_points) {
        choose_levels(c);
    } else if ((n.word0 & 3u) == POINT_KD_LEAF) {
        choose(c);
    }
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= PointKdHeaders(pc.header_address).h.node_count) {
        return;
    }
    if (i == 0) {
        consider(0);
    }
    PointKdNode n = PointKdNodes(pc.nodes_address).v[i];
    if ((n.word0 & 3u) != POINT_KD_LEAF && point_count(i) > pc.top_points) {
        consider(n.word0 >> 2);
        consider((n.word0 >> 2) + 1);
    }
}
