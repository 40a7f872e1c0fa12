#version 460
// Octree nodes per radix-tree edge (Karras 2012 §4): a radix node with prefix length δ under a
// parent with prefix length δp stands for the octree nodes at levels floor(δp/3)+1 ..
// floor(δ/3), so its edge carries floor(δ/3) - floor(δp/3) of them (the root's parent counts as
// δp = 0: level 0 is the octree root itself). Entries past the 2m - 1 radix nodes (m, the
// distinct codes, is known only on the GPU) up to the 2n - 1 of the n points are zeroed, so the
// scan that follows can run over 2n - 1 entries. Each internal node also gets its
// point k-d tree split: axis δ mod 3, plane at the boundary between the two half-cells its first
// differing bit separates.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "octree/format.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t keys_address;         // distinct sorted keys
    uint64_t nodes_address;        // radix tree internal nodes
    uint64_t leaf_parents_address; // radix tree leaf parents
    uint64_t bounds_address;       // Aabb: the points' bounds (the Morton grid)
    uint64_t count_address;        // u32: m, the number of distinct keys
    uint64_t edge_counts_address;  // out: u32 per radix node (2n - 1 entries)
    uint64_t splits_address;       // out: KdSplit {uint axis; float plane} per internal node
    uint entries;                  // 2n - 1 for the n points of this build
} pc;

void main() {
    int r = int(flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex);
    if (r >= int(pc.entries)) {
        return;
    }
    int m = int(U32s(pc.count_address).v[0]);
    U32s counts = U32s(pc.edge_counts_address);
    if (r >= 2 * m - 1) {
        counts.v[r] = 0u;
        return;
    }
    BvhNodes nodes = BvhNodes(pc.nodes_address);
    int prefix = radix_prefix(pc.keys_address, nodes, r, m);
    int parent_prefix = 0;
    uint parent = radix_parent(nodes, pc.leaf_parents_address, r, m);
    if (parent != NO_PARENT && m > 1) {
        parent_prefix = radix_prefix(pc.keys_address, nodes, int(parent), m);
    }
    counts.v[r] = uint(prefix / 3 - parent_prefix / 3);
    if (r < m - 1) {
        int axis = prefix % 3;
        int level = prefix / 3;
        Aabb bounds = Aabbs(pc.bounds_address).v[0];
        float scale = morton_scale(bounds.hi - bounds.lo, uint(LEVELS))[axis];
        uint coordinate = compact_bits21(key_at(pc.keys_address, uint(r)) >> (2 - axis));
        uint cell = coordinate >> (LEVELS - level);
        float boundary = float((cell * 2u + 1u) << (LEVELS - level - 1));
        KdSplits(pc.splits_address).v[r] = KdSplit(uint(axis), bounds.lo[axis] + boundary / scale);
    }
}
