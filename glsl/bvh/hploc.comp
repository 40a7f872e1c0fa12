#version 460
// The whole BVH over Morton-sorted leaves in one dispatch: H-PLOC (Benthin et al., HPG 2024),
// with Apetrei's agglomerative LBVH (2014) as the case MERGE_THRESHOLD = 1. Invocation k starts
// at leaf k, copies its triangle in leaf order for traversal, and climbs the binary radix tree
// of the sorted codes without building it: a range [L, R] merges with the neighbour across
// whichever end has the longer common code prefix (δ, with equal codes split by index), and
// at that boundary's slot an atomic exchange lets the first range to arrive stop and the
// second continue with the union of both. Each range keeps its clusters (subtrees built so
// far) at positions L.. of the cluster array, in Morton order. When a range holds more than
// MERGE_THRESHOLD leaves (and always at the root), its clusters are reduced by PLOC
// (Meister & Bittner 2018) to at most MERGE_THRESHOLD (one at the root): every cluster finds
// the neighbour within SEARCH_RADIUS positions whose union with it has the least surface
// area (equal areas: the nearer, then the pair starting at an even position), mutual pairs
// merge into new nodes, the rest keep their order. With a threshold above
// one, the whole workgroup reduces one range at a time in shared memory, so a range's list
// never holds more than 2 * MERGE_THRESHOLD <= WORKGROUP_SIZE clusters; with a threshold of
// one, each invocation merges its own pair. A node's index comes from the id its merge
// retires (make_node), so the numbering is the same on every run. The boundary slots are
// left as found (all NO_PARENT) for the next build. The root's height is written for the
// host, which checks it against the traversal's stack (a clustered tree's height has no
// bound; the radix tree's is at most KEY_BITS + 32). src/accel/bvh/ploc.rs is the reference.
#include "../common/prelude.glsl"
#include "bvh/format.glsl"
#include "../common/geometry.glsl"
#include "../common/keys.glsl"
#include "../common/workgroup_any.glsl"
#include "../common/workgroup_scan.glsl"

// Whether the whole workgroup loops until its last invocation has stopped climbing. Set on
// devices that end an invocation reaching a memory barrier in divergent control flow
// (lavapipe); with a threshold above one the workgroup always loops together.
layout(constant_id = 3) const bool UNIFORM_CLIMB = false;
// The most clusters a range below the root keeps.
layout(constant_id = 4) const uint MERGE_THRESHOLD = 1;
// How many positions either side of a cluster its nearest-neighbour search looks.
layout(constant_id = 5) const uint SEARCH_RADIUS = 8;
// Whether each leaf's parent is written, for the treelet passes that follow (treelets.comp).
layout(constant_id = 6) const bool WRITES_LEAF_PARENTS = false;
const bool WORKGROUP_LOOP = UNIFORM_CLIMB || MERGE_THRESHOLD > 1u;

layout(push_constant, scalar) uniform Push {
    uint64_t keys_address;            // sorted u32 or u64 keys
    uint64_t positions_address;       // vec3 per vertex
    uint64_t triangles_address;       // uvec3 per triangle
    uint64_t leaf_primitives_address; // u32 per leaf: triangle id in Morton order
    uint64_t nodes_address;           // out: BvhNode per internal node
    uint64_t leaf_triangles_address;  // out: LeafTriangle per leaf
    uint64_t clusters_address;        // Cluster per leaf position
    uint64_t cluster_counts_address;  // u32 per leaf position: clusters of the range starting there
    uint64_t slots_address;           // u32 per boundary, NO_PARENT on entry and exit
    uint64_t height_address;          // out: u32, the root's height (host-visible)
    uint64_t leaf_parents_address;    // out: u32 per leaf, its parent (WRITES_LEAF_PARENTS)
    uint host_count;
} pc;

// A subtree built so far: its box, its reference (LEAF_BIT | k or an internal node) and a
// tag. With MERGE_THRESHOLD = 1 the tag is its height (internal nodes on its longest path down
// to a leaf; its id is its range's first leaf). Above, the tag is its id: its least leaf
// position, kept in Morton order by every list.
struct Cluster {
    vec3 lo;
    uint ref;
    vec3 hi;
    uint tag;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) coherent buffer Clusters { Cluster v[]; };

// The workgroup's list of the range being reduced.
shared vec3 list_lo[WORKGROUP_SIZE];
shared vec3 list_hi[WORKGROUP_SIZE];
shared uint list_ref[WORKGROUP_SIZE];
shared uint list_tag[WORKGROUP_SIZE];
shared uint list_nearest[WORKGROUP_SIZE];
// The range being reduced, published by the invocation that owns it.
shared uint owner;
shared uvec3 owned_range; // L, split (first leaf of the right child), R

// δ between keys i and i + 1: the length of their common prefix, past KEY_BITS by the
// indices' common prefix where the keys are equal. Larger is closer.
int boundary_delta(uint i) {
    uint64_t a = key_at(pc.keys_address, i);
    uint64_t b = key_at(pc.keys_address, i + 1u);
    if (a == b) {
        return KEY_BITS + 31 - findMSB(i ^ (i + 1u));
    }
    uint64_t x = a ^ b;
    uint high = uint(x >> 32);
    int msb = high != 0u ? 32 + findMSB(high) : findMSB(uint(x));
    return KEY_BITS - 1 - msb;
}

// Half the surface area of the union of two boxes, in the reference's order of operations.
float union_half_area(vec3 lo_a, vec3 hi_a, vec3 lo_b, vec3 hi_b) {
    precise vec3 d = max(hi_a, hi_b) - min(lo_a, lo_b);
    precise float area = d.x * d.y + d.y * d.z + d.z * d.x;
    return area;
}

// Leaves below a cluster of a range's list: one for a leaf, else what its node says.
uint leaf_count(Cluster c) {
    return (c.ref & LEAF_BIT) != 0u ? 1u : CoherentBvhNodes(pc.nodes_address).v[c.ref].leaf_count;
}

// The height of a cluster of a range's list: 0 for a leaf; a node keeps its height in its
// parent link until its parent is made.
uint list_height(Cluster c) {
    return (c.ref & LEAF_BIT) != 0u ? 0u : CoherentBvhNodes(pc.nodes_address).v[c.ref].parent;
}

// Records `parent` as the parent of `child` where it is a leaf (with WRITES_LEAF_PARENTS).
void link_leaf(uint child, uint parent) {
    if (WRITES_LEAF_PARENTS && (child & LEAF_BIT) != 0u) {
        U32s(pc.leaf_parents_address).v[child & ~LEAF_BIT] = parent;
    }
}

// Moves the node at index 0 to index `to`, for the root (over clusters a and b) to take
// index 0: the moved node's children and its parent (one of a and b, or a node) follow it.
void move_first_node(uint to, inout Cluster a, inout Cluster b) {
    CoherentBvhNodes nodes = CoherentBvhNodes(pc.nodes_address);
    BvhNode moved = nodes.v[0];
    nodes.v[to] = moved;
    if ((moved.left & LEAF_BIT) == 0u) {
        nodes.v[moved.left].parent = to;
    }
    if ((moved.right & LEAF_BIT) == 0u) {
        nodes.v[moved.right].parent = to;
    }
    link_leaf(moved.left, to);
    link_leaf(moved.right, to);
    if (a.ref == 0u) {
        a.ref = to;
    } else if (b.ref == 0u) {
        b.ref = to;
    } else if (nodes.v[moved.parent].left == 0u) {
        nodes.v[moved.parent].left = to;
    } else {
        nodes.v[moved.parent].right = to;
    }
}

// Writes the node over clusters a (left) and b (right), with `leaves` leaves and `height`
// levels, and returns its index. Every merge retires the larger id of its two clusters, the
// right one's, so ids 1..n-1 name the n - 1 nodes once each and the node's index is
// `retired` - 1, with no counter to contend for; the root takes index 0 from the node there.
// A node is written whole with its height in its parent link, which its parent overwrites.
uint make_node(Cluster a, Cluster b, uint retired, uint leaves, uint height, bool root) {
    CoherentBvhNodes nodes = CoherentBvhNodes(pc.nodes_address);
    uint index = retired - 1u;
    uint parent = height;
    if (root) {
        U32s(pc.height_address).v[0] = height;
        if (index != 0u) {
            move_first_node(index, a, b);
        }
        index = 0u;
        parent = NO_PARENT;
    }
    nodes.v[index] = BvhNode(a.lo, a.ref, a.hi, b.ref, b.lo, parent, b.hi, leaves);
    if ((a.ref & LEAF_BIT) == 0u) {
        nodes.v[a.ref].parent = index;
    }
    if ((b.ref & LEAF_BIT) == 0u) {
        nodes.v[b.ref].parent = index;
    }
    link_leaf(a.ref, index);
    link_leaf(b.ref, index);
    return index;
}

// Clusters of the range of `size` leaves starting at `first`.
uint cluster_count(uint first, uint size) {
    return size <= MERGE_THRESHOLD ? size : CoherentU32s(pc.cluster_counts_address).v[first];
}

// Copies leaf k's triangle in leaf order and returns it as a cluster.
Cluster leaf_cluster(uint k) {
    uint triangle = U32s(pc.leaf_primitives_address).v[k];
    uvec3 t = UVec3s(pc.triangles_address).v[triangle];
    Vec3s positions = Vec3s(pc.positions_address);
    vec3 a = positions.v[t.x];
    vec3 b = positions.v[t.y];
    vec3 c = positions.v[t.z];
    LeafTriangles(pc.leaf_triangles_address).v[k] =
        LeafTriangle(vec4(a, uintBitsToFloat(triangle)), vec4(b, 0.0), vec4(c, 0.0));
    uint tag = MERGE_THRESHOLD == 1u ? 0u : k;
    return Cluster(min(a, min(b, c)), LEAF_BIT | k, max(a, max(b, c)), tag);
}

void load_list(uint i, out Cluster c) {
    c = Cluster(list_lo[i], list_ref[i], list_hi[i], list_tag[i]);
}

void store_list(uint i, Cluster c) {
    list_lo[i] = c.lo;
    list_hi[i] = c.hi;
    list_ref[i] = c.ref;
    list_tag[i] = c.tag;
}

// The workgroup reduces range [L, R], whose right child starts at `split`, by PLOC. Called
// from workgroup-uniform control flow with the same arguments in every invocation.
void reduce_range(uint L, uint split, uint R, uint n) {
    uint lane = gl_LocalInvocationIndex;
    Clusters clusters = Clusters(pc.clusters_address);
    bool root = R - L + 1u == n;
    uint left_count = cluster_count(L, split - L);
    uint count = left_count + cluster_count(split, R + 1u - split);
    if (lane < count) {
        uint from = lane < left_count ? L + lane : split + lane - left_count;
        store_list(lane, clusters.v[from]);
    }
    barrier();
    uint target = root ? 1u : MERGE_THRESHOLD;
    while (count > target) {
        Cluster mine;
        bool holds = lane < count;
        if (holds) {
            load_list(lane, mine);
            uint nearest = lane;
            float best = INF;
            uint best_tie = 0xffffffffu;
            uint first = lane > SEARCH_RADIUS ? lane - SEARCH_RADIUS : 0u;
            uint last = min(count - 1u, lane + SEARCH_RADIUS);
            for (uint j = first; j <= last; ++j) {
                if (j != lane) {
                    float area = union_half_area(mine.lo, mine.hi, list_lo[j], list_hi[j]);
                    // Equal areas: the nearer pair, then the one starting at an even position.
                    uint tie = 2u * (max(j, lane) - min(j, lane)) + (min(j, lane) & 1u);
                    if (area < best || (area == best && tie < best_tie)) {
                        best = area;
                        best_tie = tie;
                        nearest = j;
                    }
                }
            }
            list_nearest[lane] = nearest;
        }
        barrier();
        bool keeps = holds;
        if (holds) {
            uint nearest = list_nearest[lane];
            if (list_nearest[nearest] == lane) {
                if (lane < nearest) {
                    Cluster other;
                    load_list(nearest, other);
                    uint leaves = leaf_count(mine) + leaf_count(other);
                    uint height = max(list_height(mine), list_height(other)) + 1u;
                    uint index = make_node(mine, other, other.tag, leaves, height,
                                           root && count == 2u);
                    mine = Cluster(min(mine.lo, other.lo), index, max(mine.hi, other.hi),
                                   mine.tag);
                } else {
                    keeps = false;
                }
            }
        }
        uint kept;
        uint position = workgroup_exclusive_add(keeps ? 1u : 0u, kept);
        if (keeps) {
            store_list(position, mine);
        }
        count = kept;
        barrier();
    }
    if (lane < count) {
        Cluster c;
        load_list(lane, c);
        clusters.v[L + lane] = c;
    }
    if (lane == 0u && !root) {
        CoherentU32s(pc.cluster_counts_address).v[L] = count;
    }
    memoryBarrierBuffer();
    barrier();
}

void main() {
    uint n = pc.host_count;
    uint k = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (n == 1u) {
        if (k == 0u) {
            Cluster leaf = leaf_cluster(0u);
            Aabb empty = empty_aabb();
            BvhNodes(pc.nodes_address).v[0] = BvhNode(leaf.lo, leaf.ref, leaf.hi, INVALID_CHILD,
                                                      empty.lo, NO_PARENT, empty.hi, 1u);
            U32s(pc.height_address).v[0] = 1u;
        }
        return;
    }
    Clusters clusters = Clusters(pc.clusters_address);
    CoherentU32s slots = CoherentU32s(pc.slots_address);
    bool climbing = k < n;
    uint L = k;
    uint R = k;
    // The range's one cluster, while each range keeps one (MERGE_THRESHOLD = 1).
    Cluster mine;
    if (climbing) {
        mine = leaf_cluster(k);
        clusters.v[k] = mine;
    }
    for (;;) {
        if (WORKGROUP_LOOP) {
            if (!workgroup_any(climbing)) {
                break;
            }
        } else if (!climbing) {
            break;
        }
        // This range's clusters are written before its arrival is announced.
        memoryBarrierBuffer();
        bool reduces = false;
        bool merges_right = false; // this range is the left child
        uint split = 0u;
        if (climbing) {
            merges_right = L == 0u || (R != n - 1u && boundary_delta(R) > boundary_delta(L - 1u));
            uint slot = merges_right ? R : L - 1u;
            uint other = atomicExchange(slots.v[slot], merges_right ? L : R);
            climbing = other != NO_PARENT;
            if (climbing) {
                slots.v[slot] = NO_PARENT;
                split = merges_right ? R + 1u : L;
                L = merges_right ? L : other;
                R = merges_right ? other : R;
                reduces = R - L + 1u > MERGE_THRESHOLD || R - L + 1u == n;
            }
        }
        // The sibling's clusters are read after its arrival was seen.
        memoryBarrierBuffer();
        if (MERGE_THRESHOLD == 1u) {
            if (reduces) {
                Cluster sibling = clusters.v[merges_right ? split : L];
                Cluster left = merges_right ? mine : sibling;
                Cluster right = merges_right ? sibling : mine;
                uint height = max(left.tag, right.tag) + 1u;
                uint index = make_node(left, right, split, R - L + 1u, height, R - L + 1u == n);
                mine = Cluster(min(left.lo, right.lo), index, max(left.hi, right.hi), height);
                clusters.v[L] = mine;
            }
        } else {
            while (workgroup_any(reduces)) {
                if (gl_LocalInvocationIndex == 0u) {
                    owner = WORKGROUP_SIZE;
                }
                barrier();
                if (reduces) {
                    atomicMin(owner, gl_LocalInvocationIndex);
                }
                barrier();
                if (owner == gl_LocalInvocationIndex) {
                    owned_range = uvec3(L, split, R);
                    reduces = false;
                }
                barrier();
                uvec3 range = owned_range;
                reduce_range(range.x, range.y, range.z, n);
            }
        }
        if (climbing && R - L + 1u == n) {
            climbing = false;
        }
    }
}
