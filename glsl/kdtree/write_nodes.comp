#version 460
// Output stage, top-down addresses (Zhou et al. 2008 Alg. 5): each tree entry finds its
// preorder address by walking up to the root (a left child follows its parent; a right child
// follows its parent's left subtree of 2l - 1 nodes) and writes its KdNode there, an internal
// node with its right child's address. The walks are independent, so one dispatch lays out the
// whole tree.
#include "../common/prelude.glsl"
#include "kdtree/build.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t refs_address;
} pc;

void main() {
    BuildRefs b = BuildRefsRef(pc.refs_address).v;
    uint k = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    uint count = min(Status(b.status).v.entries, b.entry_capacity);
    if (k >= count) {
        return;
    }
    Entries entries = Entries(b.entries);
    Entry entry = entries.v[k];
    uint address = 0;
    uint link = entry.parent;
    while (link != NO_PARENT) {
        uint parent = link & ~RIGHT_SIDE;
        address += 1u;
        if ((link & RIGHT_SIDE) != 0u) {
            address += 2u * entries.v[parent].leaves - 1u;
        }
        link = entries.v[parent].parent;
    }
    uint word0 = entry.word0;
    if ((word0 & 3u) != KD_LEAF) {
        word0 |= (address + 2u * entry.leaves) << 2;
    }
    KdNodes(b.tree_nodes).v[address] = KdNode(word0, entry.word1);
}
