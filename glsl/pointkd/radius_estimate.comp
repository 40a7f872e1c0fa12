#version 460
// ESTIMATERADIUS (seed 000 Alg. 7), one invocation per query q: down the tree from the root
// along q's side of every split, the least |q - C_i| + R_i over the nodes with a radius R_i
// (radius_store.comp). The ball of radius R_i about C_i holds k points and lies within the
// ball of that radius about q, so the estimate is never below q's k-th neighbour distance
// for any node on any path (widened by a relative 1e-5 against rounding). Where q's side is an
// empty node (an empty-space cut, which a query away from the cloud often meets) the path
// takes the other side: a point's own path never meets one, and every path to a leaf with
// points meets a chosen node, so every query gets an estimate; only an empty tree leaves the
// tree's R.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "pointkd/radius.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t nodes_address;    // PointKdNode
    uint64_t header_address;   // PointKdHeader
    uint64_t node_radii_address; // float per node: R_i, or INF
    uint64_t entries_address;  // the tree's entries
    uint64_t queries_address;  // vec3 per query, or 0: the tree's points in leaf order
    uint64_t radii_address;    // out: float per query (per point index for the tree's points)
    uint64_t count_address;    // device query count, or 0
    uint host_count;
    uint pad;
} pc;

const float ROUNDING_SLACK = 1e-5;

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= element_count(pc.count_address, pc.host_count)) {
        return;
    }
    PointKdHeader header = PointKdHeaders(pc.header_address).h;
    vec3 q;
    uint slot = i;
    if (pc.queries_address == 0ul) {
        vec4 entry = PointEntries(pc.entries_address).v[i];
        q = entry.xyz;
        slot = floatBitsToUint(entry.w);
    } else {
        q = Vec3s(pc.queries_address).v[i];
    }
    float r = INF;
    uint node = 0;
    while (header.node_count > 0) {
        PointKdNode n = PointKdNodes(pc.nodes_address).v[node];
        float ri = F32s(pc.node_radii_address).v[node];
        if (ri < INF) {
            r = min(r, (distance(q, node_centre(n)) + ri) * (1.0 + ROUNDING_SLACK));
        }
        if ((n.word0 & 3u) == POINT_KD_LEAF) {
            break;
        }
        uint axis = n.word0 & 3u;
        uint side = q[axis] < uintBitsToFloat(n.word1) ? 0u : 1u;
        if (node_is_empty(PointKdNodes(pc.nodes_address).v[(n.word0 >> 2) + side])) {
            side ^= 1u;
        }
        node = (n.word0 >> 2) + side;
    }
    F32s(pc.radii_address).v[slot] = r < INF ? r : header.query_radius;
}
