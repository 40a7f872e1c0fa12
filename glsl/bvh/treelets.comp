#version 460
// One treelet pass over a binary BVH (Karras & Aila, HPG 2013): every internal node of at
// least MIN_LEAVES leaves, once both of its children are final, has the treelet of up to
// TREELET_LEAVES leaves below it rebuilt in the shape of least SAH cost. That lowers the cost
// of a tree built fast from Morton codes to within a few percent of a full-sweep SAH build.
// Invocation k starts at leaf k's parent and climbs: at each node an atomic count lets the
// first child's invocation stop and the second go on, so a node is handled once, after its
// whole subtree, and the choices do not depend on the order invocations run in (no
// invocation ever waits). The workgroup restructures its invocations' treelets together, one
// at a time, in shared memory: one invocation grows the treelet at node p from p's two
// children by opening the leaf of largest area that is an internal node; with one triangle
// per leaf every tree over the treelet's leaves holds the same leaves, so a dynamic program
// over the subsets of the leaves weighs internal nodes only: a subset costs its box's half
// area plus its cheapest split in two, and the invocations solve the subsets of each size in
// parallel, smallest first. When the best tree is strictly cheaper than the treelet as it
// stands, one invocation rewrites the treelet's internal nodes in that shape (p stays its
// root) and updates the parents of its leaves. Every node leaves its subtree's height for the nodes above it; the root writes its
// height for the host. The arrival counts are left zero for the next pass.
// src/accel/bvh/treelet.rs is the reference.
#include "../common/prelude.glsl"
#include "bvh/format.glsl"
#include "../common/geometry.glsl"
#include "../common/workgroup_any.glsl"

// The fewest leaves below a node whose treelet is restructured (at least 3).
layout(constant_id = 3) const uint MIN_LEAVES = 8;

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

// The node whose treelet the workgroup restructures, chosen among its invocations' nodes.
shared uint owner;
shared uint treelet_root;
shared BvhNode treelet_root_node;
// The treelet: its leaves (child references, boxes and leaf counts), its internal nodes in the
// order they were opened, its size and the cost of its internal nodes as they stand.
shared uint leaf_ref[TREELET_LEAVES];
shared vec3 leaf_lo[TREELET_LEAVES];
shared vec3 leaf_hi[TREELET_LEAVES];
shared uint leaf_leaves[TREELET_LEAVES];
shared uint internals[TREELET_LEAVES - 1u];
shared uint treelet_size;
shared float treelet_cost;
// Per subset of the leaves: the least cost of its internal nodes, and in that tree the part
// holding its lowest leaf (bits 0-7) and the tree's height (bits 8-).
shared float subset_cost[SUBSETS];
shared uint subset_shape[SUBSETS];

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

// The height of a child's subtree: 0 for a leaf, else what the pass wrote for it.
uint child_height(uint child) {
    return (child & LEAF_BIT) != 0u ? 0u : CoherentU32s(pc.heights_address).v[child];
}

// Makes `child` (with box lo..hi) leaf `slot` of the treelet.
void set_leaf(uint slot, uint child, vec3 lo, vec3 hi) {
    leaf_ref[slot] = child;
    leaf_lo[slot] = lo;
    leaf_hi[slot] = hi;
}

// One invocation grows the treelet at node p (`root`) from p's two children: it opens the
// internal leaf of largest area (the first of equal ones) until the treelet is full. Only the
// nodes opened are read here, one after the other; the leaves' heights and leaf counts are
// read afterwards by an invocation each.
void grow_treelet(uint p, BvhNode root) {
    CoherentBvhNodes nodes = CoherentBvhNodes(pc.nodes_address);
    set_leaf(0u, root.left, root.left_lo, root.left_hi);
    set_leaf(1u, root.right, root.right_lo, root.right_hi);
    precise float current =
        half_area(min(root.left_lo, root.right_lo), max(root.left_hi, root.right_hi));
    uint m = 2u;
    for (; m < TREELET_LEAVES; ++m) {
        uint opened = TREELET_LEAVES;
        float largest = 0.0;
        for (uint k = 0u; k < m; ++k) {
            float area = half_area(leaf_lo[k], leaf_hi[k]);
            if ((leaf_ref[k] & LEAF_BIT) == 0u && (opened == TREELET_LEAVES || area > largest)) {
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
    treelet_size = m;
    treelet_cost = current;
}

// The cheapest tree over every subset of `size` leaves, from those of the smaller subsets:
// each invocation takes every WORKGROUP_SIZE-th subset.
void solve_subsets(uint size, uint full) {
    for (uint s = gl_LocalInvocationIndex + 1u; s <= full; s += WORKGROUP_SIZE) {
        if (bitCount(s) != int(size)) {
            continue;
        }
        uint low = s & (0u - s);
        uint rest = s ^ low;
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
        uint height = max(subset_shape[part] >> 8, subset_shape[s ^ part] >> 8) + 1u;
        subset_shape[s] = part | height << 8;
    }
}

// One invocation rewrites the treelet at node p in the shape found for it, top down, depth
// first, left first: each node made takes the next of the treelet's internal nodes for each
// child that is not a leaf, left then right.
void rebuild_treelet(uint p, uint root_parent) {
    CoherentBvhNodes nodes = CoherentBvhNodes(pc.nodes_address);
    CoherentU32s heights = CoherentU32s(pc.heights_address);
    uint m = treelet_size;
    uint stack_set[TREELET_LEAVES];
    uint stack_node[TREELET_LEAVES];
    uint stack_parent[TREELET_LEAVES];
    stack_set[0] = (1u << m) - 1u;
    stack_node[0] = p;
    stack_parent[0] = root_parent;
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

// The workgroup restructures the treelet at node p. Called from workgroup-uniform control
// flow with the same p in every invocation.
void restructure(uint p) {
    uint lane = gl_LocalInvocationIndex;
    BvhNode root = treelet_root_node;
    if (lane == 0u) {
        grow_treelet(p, root);
    }
    barrier();
    // Each leaf's height and leaf count, read by an invocation each.
    if (lane < treelet_size) {
        uint child = leaf_ref[lane];
        bool leaf = (child & LEAF_BIT) != 0u;
        subset_shape[1u << lane] = child_height(child) << 8;
        subset_cost[1u << lane] = 0.0;
        leaf_leaves[lane] = leaf ? 1u : CoherentBvhNodes(pc.nodes_address).v[child].leaf_count;
    }
    barrier();
    uint full = (1u << treelet_size) - 1u;
    for (uint size = 2u; size <= treelet_size; ++size) {
        solve_subsets(size, full);
        barrier();
    }
    if (lane == 0u) {
        if (subset_cost[full] < treelet_cost) {
            rebuild_treelet(p, root.parent);
        } else {
            CoherentU32s(pc.heights_address).v[p] =
                max(child_height(root.left), child_height(root.right)) + 1u;
        }
    }
    memoryBarrierBuffer();
    barrier();
}

void main() {
    uint n = pc.host_count;
    uint k = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    CoherentU32s arrivals = CoherentU32s(pc.arrivals_address);
    CoherentBvhNodes nodes = CoherentBvhNodes(pc.nodes_address);
    bool climbing = k < n;
    uint p = climbing ? U32s(pc.leaf_parents_address).v[k] : 0u;
    // The whole workgroup loops until its last invocation has stopped climbing, since it
    // restructures its invocations' treelets together.
    while (workgroup_any(climbing)) {
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
        // Nodes of few leaves only record their height; the others' treelets are
        // restructured by the whole workgroup, one at a time.
        bool restructures = false;
        BvhNode node;
        if (climbing) {
            node = nodes.v[p];
            restructures = node.leaf_count >= MIN_LEAVES;
            if (!restructures) {
                CoherentU32s(pc.heights_address).v[p] =
                    max(child_height(node.left), child_height(node.right)) + 1u;
            }
        }
        while (workgroup_any(restructures)) {
            if (gl_LocalInvocationIndex == 0u) {
                owner = WORKGROUP_SIZE;
            }
            barrier();
            if (restructures) {
                atomicMin(owner, gl_LocalInvocationIndex);
            }
            barrier();
            if (owner == gl_LocalInvocationIndex) {
                treelet_root = p;
                treelet_root_node = node;
                restructures = false;
            }
            barrier();
            restructure(treelet_root);
        }
        if (climbing) {
            if (p == 0u) {
                U32s(pc.height_address).v[0] = CoherentU32s(pc.heights_address).v[0];
                climbing = false;
            } else {
                p = nodes.v[p].parent;
            }
        }
    }
}
