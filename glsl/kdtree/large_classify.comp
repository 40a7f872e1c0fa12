#version 460
// Large-node stage, step 3 (Chang et al. 2013 §13.2.1.2, one kernel): one workgroup per chunk
// sorts its records into the node's two children. Each record goes left when its box starts
// before the plane (or lies in it) and right when it ends after it. A record on both sides is
// clipped to each child's cell (Sutherland-Hodgman on the triangle, against the cell grown by a
// few ulps so no part of the triangle is lost) and gets the tight box of each clipped polygon;
// a side its polygon does not reach is dropped. Offsets within the chunk come from subgroup
// ballots and popcounts, and one atomic add per child and workgroup reserves the chunk's run in
// the child's range (order among chunks does not matter). The node's last chunk to finish
// routes the node's children (kdtree/route.glsl).
#include "../common/prelude.glsl"
#include "kdtree/build.glsl"
#include "kdtree/route.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t refs_address;
    uint64_t positions_address;
    uint64_t triangles_address;
    uint level;
} pc;

shared uint subgroup_counts[2][SUBGROUPS_PER_WORKGROUP];
shared uint child_base[2];

// The box of triangle (a, b, c) clipped to the box [lo, hi]; false when nothing is left.
bool clip_triangle(vec3 a, vec3 b, vec3 c, vec3 lo, vec3 hi, out vec3 out_lo, out vec3 out_hi) {
    vec3 polygon[9];
    vec3 clipped[9];
    polygon[0] = a;
    polygon[1] = b;
    polygon[2] = c;
    uint n = 3;
    // Unrolled, each plane's axis and side are constants. This decides the large stage's speed
    // on an NVIDIA H100 through the code the driver makes for the whole kernel: the rolled loop
    // took the stage at 5M triangles from 28.3 to 36.6 ms once the small roots' mask loop left
    // it, and the unrolled one runs it in 22.9 ms (BENCHMARKS.md, the kd-tree's scratch).
    [[unroll]] for (uint plane = 0; plane < 6; ++plane) {
        uint axis = plane % 3u;
        bool low = plane < 3u;
        float bound = low ? lo[axis] : hi[axis];
        uint m = 0;
        for (uint i = 0; i < n; ++i) {
            vec3 p = polygon[i];
            vec3 q = polygon[(i + 1u) % n];
            float dp = low ? p[axis] - bound : bound - p[axis];
            float dq = low ? q[axis] - bound : bound - q[axis];
            if (dp >= 0.0) {
                clipped[m++] = p;
            }
            if ((dp >= 0.0) != (dq >= 0.0)) {
                vec3 x = p + (q - p) * (dp / (dp - dq));
                x[axis] = bound;
                clipped[m++] = x;
            }
        }
        n = m;
        if (n == 0u) {
            return false;
        }
        for (uint i = 0; i < n; ++i) {
            polygon[i] = clipped[i];
        }
    }
    out_lo = polygon[0];
    out_hi = polygon[0];
    for (uint i = 1; i < n; ++i) {
        out_lo = min(out_lo, polygon[i]);
        out_hi = max(out_hi, polygon[i]);
    }
    return true;
}

// The record's box within a child's cell: the clipped polygon's box grown back by the slack
// the clipping box had, kept inside the record's box and the cell. False when the polygon
// does not reach the (grown) cell.
bool clip_to_cell(vec3 a, vec3 b, vec3 c, Record r, vec3 cell_lo, vec3 cell_hi,
                  out vec3 lo, out vec3 hi) {
    vec3 slack = max(abs(cell_lo), abs(cell_hi)) * 4.0e-7 + 1.0e-30;
    if (!clip_triangle(a, b, c, cell_lo - slack, cell_hi + slack, lo, hi)) {
        return false;
    }
    lo = max(lo - slack, max(r.lo, cell_lo));
    hi = min(hi + slack, min(r.hi, cell_hi));
    return true;
}

void main() {
    BuildRefs b = BuildRefsRef(pc.refs_address).v;
    uint parity = pc.level & 1u;
    uint chunk_index = flat_workgroup_id();
    if (chunk_index >= chunk_count(b, pc.level)) {
        return;
    }
    Chunk chunk = Chunks(b.chunks[parity]).v[chunk_index];
    LargeNode node = LargeNodes(b.large_nodes[parity]).v[chunk.node];
    if (node.split_axis == NOT_SPLIT) {
        return;
    }
    LargeNodes children = LargeNodes(b.children);
    uint left_child = 2u * chunk.node;
    uint k = chunk.first + gl_LocalInvocationIndex;
    bool valid = k < node.first + node.count;
    Record r;
    bool left = false;
    bool right = false;
    Record left_record;
    Record right_record;
    if (valid) {
        r = Records(b.records[parity]).v[k];
        uint axis = node.split_axis;
        left = goes_left(r.lo[axis], r.hi[axis], node.split);
        right = goes_right(r.hi[axis], node.split);
        left_record = r;
        right_record = r;
        if (left && right) {
            uvec3 t = UVec3s(pc.triangles_address).v[r.triangle];
            Vec3s positions = Vec3s(pc.positions_address);
            vec3 a = positions.v[t.x];
            vec3 bv = positions.v[t.y];
            vec3 c = positions.v[t.z];
            LargeNode lc = children.v[left_child];
            LargeNode rc = children.v[left_child + 1u];
            bool reaches_left = clip_to_cell(a, bv, c, r, lc.cell_lo, lc.cell_hi,
                                             left_record.lo, left_record.hi);
            bool reaches_right = clip_to_cell(a, bv, c, r, rc.cell_lo, rc.cell_hi,
                                              right_record.lo, right_record.hi);
            if (reaches_left || reaches_right) {
                left = reaches_left;
                right = reaches_right;
            } else {
                // Rounding lost both (cannot happen for a triangle inside the cell): keep
                // both sides with the record's box cut at the plane.
                left_record.hi[axis] = node.split;
                right_record.lo[axis] = node.split;
            }
        }
    }
    uvec4 left_ballot = subgroupBallot(left);
    uvec4 right_ballot = subgroupBallot(right);
    if (subgroupElect()) {
        subgroup_counts[0][gl_SubgroupID] = subgroupBallotBitCount(left_ballot);
        subgroup_counts[1][gl_SubgroupID] = subgroupBallotBitCount(right_ballot);
    }
    barrier();
    if (gl_LocalInvocationIndex == 0) {
        for (uint side = 0; side < 2; ++side) {
            uint total = 0;
            for (uint s = 0; s < gl_NumSubgroups; ++s) {
                uint count = subgroup_counts[side][s];
                subgroup_counts[side][s] = total;
                total += count;
            }
            child_base[side] = total == 0u ? 0u : atomicAdd(children.v[left_child + side].count, total);
        }
    }
    barrier();
    Records next = Records(b.records[parity ^ 1u]);
    if (left) {
        uint slot = child_base[0] + subgroup_counts[0][gl_SubgroupID]
            + subgroupBallotExclusiveBitCount(left_ballot);
        next.v[children.v[left_child].first + slot] = left_record;
    }
    if (right) {
        uint slot = child_base[1] + subgroup_counts[1][gl_SubgroupID]
            + subgroupBallotExclusiveBitCount(right_ballot);
        next.v[children.v[left_child + 1u].first + slot] = right_record;
    }
    if (last_chunk_of(LargeNodes(b.large_nodes[parity]), chunk.node, 1u)) {
        route_node(b, pc.level, chunk.node);
    }
}
