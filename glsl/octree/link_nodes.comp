#version 460
// The octree nodes of every radix-tree edge (Karras 2012 §4), at the offsets the scan of the
// edge counts allocated (after the root at index 0): a chain from the level below the parent's
// down to the radix node's own, each the parent of the next. The chain's top node hangs under
// the deepest octree node of the nearest ancestor edge that carries any, or under the root.
// Each node's prefix is its code's top 3 * level bits. The last radix node writes the total.
#include "../common/prelude.glsl"
#include "octree/format.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t keys_address;         // distinct sorted keys
    uint64_t nodes_address;        // radix tree internal nodes
    uint64_t leaf_parents_address; // radix tree leaf parents
    uint64_t count_address;        // u32: m, the number of distinct keys
    uint64_t edge_counts_address;  // u32 per radix node
    uint64_t offsets_address;      // u32 per radix node: exclusive scan of the counts
    uint64_t octree_address;       // out: OctreeNode per node, root first
    uint64_t octree_count_address; // out: u32, the number of octree nodes
    uint entries;
} pc;

void main() {
    int r = int(flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex);
    int m = int(U32s(pc.count_address).v[0]);
    if (r >= 2 * m - 1 || r >= int(pc.entries)) {
        return;
    }
    U32s counts = U32s(pc.edge_counts_address);
    U32s offsets = U32s(pc.offsets_address);
    OctreeNodes octree = OctreeNodes(pc.octree_address);
    if (r == 0) {
        octree.v[0] = OctreeNode(0ul, NO_PARENT, 0u);
    }
    if (r == 2 * m - 2) {
        U32s(pc.octree_count_address).v[0] = 1u + offsets.v[r] + counts.v[r];
    }
    uint count = counts.v[r];
    if (count == 0u) {
        return;
    }
    BvhNodes nodes = BvhNodes(pc.nodes_address);
    uint parent = 0u;
    uint above = m > 1 ? radix_parent(nodes, pc.leaf_parents_address, r, m) : NO_PARENT;
    while (above != NO_PARENT) {
        if (counts.v[above] != 0u) {
            parent = 1u + offsets.v[above] + counts.v[above] - 1u;
            break;
        }
        above = nodes.v[above].parent;
    }
    int key_index = r >= m - 1 ? r - (m - 1) : r;
    uint64_t key = key_at(pc.keys_address, uint(key_index));
    int deepest = radix_prefix(pc.keys_address, nodes, r, m) / 3;
    uint first = 1u + offsets.v[r];
    for (uint k = 0u; k < count; ++k) {
        uint level = uint(deepest) - (count - 1u - k);
        octree.v[first + k] = OctreeNode(key >> (3u * (uint(LEVELS) - level)), parent, level);
        parent = first + k;
    }
}
