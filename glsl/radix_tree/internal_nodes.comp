#version 460
// The whole binary radix tree over n sorted keys in one dispatch (Karras 2012 §4, Fig. 4):
// invocation i builds internal node i. It finds the direction d of its range from the longer
// common prefix with a neighbour, the range's other end j by an exponential then binary
// search, and the split γ by a binary search for the first key differing in the range's
// highest differing bit. Equal keys compare by index instead (δ = key bits + common-prefix
// length of the indices), so duplicate codes still give a valid tree. Children get their
// parent links, and the node's visit counter for the bottom-up box pass is zeroed.
//
// Worked example (keys 00001 00010 00100 00101 10011 10011, n = 6): node 0 spans [0,5] and
// splits after key 3 (the top bit first differs there); node 4 spans [4,5] of equal keys and
// splits by index into leaves 4 and 5.
//
// One primitive: node 0 gets leaf 0 on the left and no right child (INVALID_CHILD, empty box).
// src/accel/bvh/cpu.rs is the reference.
#include "../common/prelude.glsl"
#include "bvh/format.glsl"
#include "../common/geometry.glsl"
#include "../common/morton.glsl"
#include "../common/keys.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t keys_address;         // sorted u32 or u64 keys
    uint64_t nodes_address;        // out: BvhNode per internal node (children, parent, count)
    uint64_t leaf_parents_address; // out: u32 per leaf
    uint64_t counters_address;     // out: u32 per internal node, zeroed
    uint64_t count_address;
    uint host_count;
} pc;

// Length of the common prefix of keys i and j; -1 when j is outside [0, n).
int delta(int i, uint64_t key_i, int j, int n) {
    if (j < 0 || j >= n) {
        return -1;
    }
    uint64_t key_j = key_at(pc.keys_address, uint(j));
    if (key_i == key_j) {
        return KEY_BITS + clz64(uint64_t(uint(i) ^ uint(j))) - 32;
    }
    return clz64(key_i ^ key_j) - (64 - KEY_BITS);
}

void set_child(BvhNodes nodes, uint parent, uint child, bool is_left) {
    if (is_left) {
        nodes.v[parent].left = child;
    } else {
        nodes.v[parent].right = child;
    }
    if ((child & LEAF_BIT) != 0u) {
        U32s(pc.leaf_parents_address).v[child & ~LEAF_BIT] = parent;
    } else {
        nodes.v[child].parent = parent;
    }
}

void main() {
    int n = int(element_count(pc.count_address, pc.host_count));
    int i = int(flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex);
    BvhNodes nodes = BvhNodes(pc.nodes_address);
    if (n == 1 && i == 0) {
        Aabb empty = empty_aabb();
        nodes.v[0].right_lo = empty.lo;
        nodes.v[0].right_hi = empty.hi;
        nodes.v[0].right = INVALID_CHILD;
        nodes.v[0].parent = NO_PARENT;
        nodes.v[0].leaf_count = 1u;
        U32s(pc.counters_address).v[0] = 0u;
        set_child(nodes, 0u, LEAF_BIT, true);
        return;
    }
    if (i >= n - 1) {
        return;
    }
    uint64_t key_i = key_at(pc.keys_address, uint(i));
    int d = delta(i, key_i, i + 1, n) > delta(i, key_i, i - 1, n) ? 1 : -1;
    int delta_min = delta(i, key_i, i - d, n);
    int l_max = 2;
    while (delta(i, key_i, i + l_max * d, n) > delta_min) {
        l_max *= 2;
    }
    int l = 0;
    for (int t = l_max / 2; t >= 1; t /= 2) {
        if (delta(i, key_i, i + (l + t) * d, n) > delta_min) {
            l += t;
        }
    }
    int j = i + l * d;
    int delta_node = delta(i, key_i, j, n);
    int s = 0;
    for (int div = 2;; div *= 2) {
        int t = (l + div - 1) / div;
        if (delta(i, key_i, i + (s + t) * d, n) > delta_node) {
            s += t;
        }
        if (t == 1) {
            break;
        }
    }
    int gamma = i + s * d + min(d, 0);
    int first = min(i, j);
    int last = max(i, j);
    uint left = first == gamma ? (LEAF_BIT | uint(gamma)) : uint(gamma);
    uint right = last == gamma + 1 ? (LEAF_BIT | uint(gamma + 1)) : uint(gamma + 1);
    set_child(nodes, uint(i), left, true);
    set_child(nodes, uint(i), right, false);
    nodes.v[i].leaf_count = uint(last - first + 1);
    if (i == 0) {
        nodes.v[0].parent = NO_PARENT;
    }
    U32s(pc.counters_address).v[i] = 0u;
}
