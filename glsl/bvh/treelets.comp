#version 460
// One treelet pass over a binary BVH (Karras & Aila, HPG 2013): every internal node of at
// least MIN_LEAVES leaves, once both of its children are final, has the treelet of up to
// TREELET_LEAVES leaves below it rebuilt in the shape of least SAH cost. That lowers the cost
// of a tree built fast from Morton codes to within a few percent of a full-sweep SAH build.
// Invocation k starts at leaf k's parent and climbs: at each node an atomic count lets the
// first child's invocation stop and the second go on, so a node is handled once, after its
// whole subtree, and the choices do not depend on the order invocations run in (no
// invocation ever waits). At node p the treelet grows from p's two children by opening the
// leaf of largest area that is an internal node. With one triangle per leaf every tree over
// the treelet's leaves holds the same leaves, so a dynamic program over the subsets of the
// leaves weighs internal nodes only: a subset costs its box's half area plus its cheapest
// split in two. When that is strictly cheaper than the treelet as it stands, the treelet's
// internal nodes are rewritten in that shape (p stays its root) and the parents of its leaves
// updated. Every node leaves its subtree's height for the nodes above it; the root writes its
// height for the host. The arrival counts are left zero for the next pass.
// src/accel/bvh/treelet.rs is the reference.
#include "../common/prelude.glsl"
#include "bvh/format.glsl"
#include "../common/geometry.glsl"
#include "../common/workgroup_any.glsl"

// Whether the whole workgroup loops until its last invocation has stopped climbing (devices
// that end an invocation reaching a memory barrier in divergent control flow: lavapipe).
layout(constant_id = 3) const bool UNIFORM_CLIMB = false;
// The fewest leaves below a node whose treelet is restructured.
layout(constant_id = 4) const uint MIN_LEAVES = 3;

const uint TREELET_LEAVES = 7u;
const uint SUBSETS = 1u << TREELET_LEAVES;

layout(push_constant, scalar) uniform Push {
    uint64_t nodes_address;        // BvhNode per internal node, restructured in place
    uint64_t leaf_parents_address; // u32 per leaf: its parent, kept up to date
    uint64_t heights_address;      // u32 per internal node: its subtree's height, written
    uint64_t arrivals_address;     // u32 per internal node, zero on entry and exit
    uint64_t height_address;       // out: u32, the root's height (host-visible)
    uint host_count;               // leaves, at least 3
} pc;

// The treelet at the node being handled: its leaves (child references, boxes and subtree
// heights) and its internal nodes in the order they were opened.
uint leaf_ref[TREELET_LEAVES];
vec3 leaf_lo[TREELET_LEAVES];
vec3 leaf_hi[TREELET_LEAVES];
uint leaf_height[TREELET_LEAVES];
uint internals[TREELET_LEAVES - 1u];
// Per subset of the leaves: the least cost of its internal nodes, and in that tree the part
// holding its lowest leaf (bits 0-7) and the tree's height (bits 8-).
float subset_cost[SUBSETS];
uint subset_shape[SUBSETS];

float half_area(vec3 lo, vec3 hi) {
    precise vec3 d = hi - lo;
    precise float area = d.x * d.y + d.y * d.z + d.z * d.x;
    return area;
}

// The box of a subset of the treelet's leaves.
void subset_box(uint s, out vec3 lo, out vec3 hi) {
    lo = vec3(INF);
    hi = vec3(-INF);
    for (uint k = 0u; k < TREELET_LEAVES; ++k) {
        if ((s >> k & 1u) != 0u) {
            lo = min(lo, leaf_lo[k]);
            hi = max(hi, leaf_hi[k]);
        }
    }
}

// Makes `child` (with box lo..hi) leaf `slot` of the treelet.
void set_leaf(uint slot, uint child, vec3 lo, vec3 hi) {
    leaf_ref[slot] = child;
    leaf_lo[slot] = lo;
    leaf_hi[slot] = hi;
    leaf_height[slot] = (child & LEAF_BIT) != 0u ? 0u : CoherentU32s(pc.heights_address).v[child];
}

// Handles node p, whose children's subtrees are final.
void restructure(uint p) {
    CoherentBvhNodes nodes = CoherentBvhNodes(pc.nodes_address);
    CoherentU32s heights = CoherentU32s(pc.heights_address);
    BvhNode root = nodes.v[p];
    set_leaf(0u, root.left, root.left_lo, root.left_hi);
    set_leaf(1u, root.right, root.right_lo, root.right_hi);
    precise float current =
        half_area(min(root.left_lo, root.right_lo), max(root.left_hi, root.right_hi));
    uint height = max(leaf_height[0], leaf_height[1]) + 1u;

    // Grow the treelet: open the internal leaf of largest area (the first of equal ones).
    uint m = 2u;
    if (root.leaf_count >= MIN_LEAVES) {
        for (; m < TREELET_LEAVES; ++m) {
            uint opened = TREELET_LEAVES;
            float largest = 0.0;
            for (uint k = 0u; k < m; ++k) {
                float area = half_area(leaf_lo[k], leaf_hi[k]);
                if ((leaf_ref[k] & LEAF_BIT) == 0u &&
                    (opened == TREELET_LEAVES || area > largest)) {
                    opened = k;
                    largest = area;
                }
            }
            if (opened == TREELET_LEAVES) {
                break;
            }
            current += largest;
            uint q = leaf_ref[opened];
            internals[m - 2u] = q;
            BvhNode node = nodes.v[q];
            set_leaf(opened, node.left, node.left_lo, node.left_hi);
            set_leaf(m, node.right, node.right_lo, node.right_hi);
        }
    }
    if (m == 2u) {
        heights.v[p] = height;
        return;
    }

    // The cheapest tree over every subset, smaller subsets (lower numbers) first.
    uint full = (1u << m) - 1u;
    for (uint s = 1u; s <= full; ++s) {
        uint low = s & (0u - s);
        uint rest = s ^ low;
        if (rest == 0u) {
            subset_cost[s] = 0.0;
            subset_shape[s] = leaf_height[findLSB(s)] << 8;
            continue;
        }
        // Splits into `low | r` and the rest, r a proper subset of `rest` in increasing order.
        float least = INF;
        uint part = low;
        uint r = 0u;
        do {
            precise float cost = subset_cost[low | r] + subset_cost[s ^ (low | r)];
            if (cost < least) {
                least = cost;
                part = low | r;
            }
            r = (r - rest) & rest;
        } while (r != rest);
        vec3 lo, hi;
        subset_box(s, lo, hi);
        precise float cost = half_area(lo, hi) + least;
        subset_cost[s] = cost;
        uint tree_height = max(subset_shape[part] >> 8, subset_shape[s ^ part] >> 8) + 1u;
        subset_shape[s] = part | tree_height << 8;
    }
    if (!(subset_cost[full] < current)) {
        heights.v[p] = height;
        return;
    }

    // Leaf counts of the treelet's leaves.
    uint leaf_leaves[TREELET_LEAVES];
    for (uint k = 0u; k < m; ++k) {
        leaf_leaves[k] = (leaf_ref[k] & LEAF_BIT) != 0u ? 1u : nodes.v[leaf_ref[k]].leaf_count;
    }
    // Rebuild top down, depth first, left first: each node made takes the next of the
    // treelet's internal nodes for each child that is not a leaf, left then right.
    uint stack_set[TREELET_LEAVES];
    uint stack_node[TREELET_LEAVES];
    uint stack_parent[TREELET_LEAVES];
    stack_set[0] = full;
    stack_node[0] = p;
    stack_parent[0] = root.parent;
    uint depth = 1u;
    uint next_internal = 0u;
    while (depth > 0u) {
        --depth;
        uint s = stack_set[depth];
        uint index = stack_node[depth];
        uint parent = stack_parent[depth];
        uint sets[2] = uint[2](subset_shape[s] & 0xffu, s ^ (subset_shape[s] & 0xffu));
        uint refs[2];
        vec3 lo[2];
        vec3 hi[2];
        for (uint side = 0u; side < 2u; ++side) {
            if (bitCount(sets[side]) == 1) {
                refs[side] = leaf_ref[findLSB(sets[side])];
            } else {
                refs[side] = internals[next_internal++];
            }
            subset_box(sets[side], lo[side], hi[side]);
        }
        uint leaves = 0u;
        for (uint k = 0u; k < m; ++k) {
            leaves += (s >> k & 1u) * leaf_leaves[k];
        }
        nodes.v[index] = BvhNode(lo[0], refs[0], hi[0], refs[1], lo[1], parent, hi[1], leaves);
        heights.v[index] = subset_shape[s] >> 8;
        for (uint side = 2u; side-- > 0u;) {
            uint child = refs[side];
            if (bitCount(sets[side]) > 1) {
                stack_set[depth] = sets[side];
                stack_node[depth] = child;
                stack_parent[depth] = index;
                ++depth;
            } else if ((child & LEAF_BIT) != 0u) {
                U32s(pc.leaf_parents_address).v[child & ~LEAF_BIT] = index;
            } else {
                nodes.v[child].parent = index;
            }
        }
    }
}

void main() {
    uint n = pc.host_count;
    uint k = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    CoherentU32s arrivals = CoherentU32s(pc.arrivals_address);
    bool climbing = k < n;
    uint p = climbing ? U32s(pc.leaf_parents_address).v[k] : 0u;
    for (;;) {
        if (UNIFORM_CLIMB) {
            if (!workgroup_any(climbing)) {
                break;
            }
        } else if (!climbing) {
            break;
        }
        // This subtree's nodes are written before its arrival is announced.
        memoryBarrierBuffer();
        if (climbing) {
            climbing = atomicAdd(arrivals.v[p], 1u) == 1u;
            if (climbing) {
                arrivals.v[p] = 0u;
            }
        }
        // The sibling's subtree is read after its arrival was seen.
        memoryBarrierBuffer();
        if (climbing) {
            restructure(p);
            if (p == 0u) {
                U32s(pc.height_address).v[0] = CoherentU32s(pc.heights_address).v[0];
                climbing = false;
            } else {
                p = CoherentBvhNodes(pc.nodes_address).v[p].parent;
            }
        }
    }
}
