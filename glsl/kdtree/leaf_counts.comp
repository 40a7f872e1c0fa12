#version 460
// Output stage, bottom-up pass (Zhou et al. 2008 Alg. 5): the number of leaves under the left
// child of every internal tree entry, from which preorder addresses follow (a subtree of l
// leaves has 2l - 1 nodes). Invocation k starts at entry k if it is a leaf and climbs the
// parent links. At each parent the child adds (its subtree's leaves << 1) | 1 to the parent's
// `leaves` word with one atomic: the first child to arrive finds bit 0 clear and stops; the
// second finds the first's count in the old value, stores the left child's count there for
// write_nodes.comp, and climbs on with the sum. So each entry is visited once, after both of
// its children, and the count travels in the atomic itself: no memory barrier, and one word
// per entry where a count per side and an arrival counter took three.
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
    if ((entries.v[k].word0 & 3u) != KD_LEAF) {
        return;
    }
    uint child = k;
    uint leaves = 1;
    uint link = entries.v[child].parent;
    while (link != NO_PARENT) {
        uint parent = link & ~RIGHT_SIDE;
        uint other = atomicAdd(entries.v[parent].leaves, (leaves << 1) | 1u);
        if ((other & 1u) == 0u) {
            return; // the first child to arrive: the second goes on
        }
        other >>= 1;
        entries.v[parent].leaves = (link & RIGHT_SIDE) != 0u ? other : leaves;
        leaves += other;
        child = parent;
        link = entries.v[child].parent;
    }
}
