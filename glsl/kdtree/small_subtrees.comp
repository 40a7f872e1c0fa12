#version 460
// Small-node stage (Zhou et al. 2008 Alg. 4) in one dispatch: one workgroup per small root
// builds the root's whole subtree depth first, from a stack of nodes in shared memory, one
// invocation per record of the root. The workgroup first makes the root's split candidates
// (§3.2's preprocessing): each record's six box faces, with the masks of the root's records
// left and right of each plane. Invocation t keeps record t's box and its six candidates'
// masks in registers for the whole subtree (only the chosen candidate's masks are ever needed
// by another invocation), so no list of masks lives in device memory and the workgroup's
// shared memory stays small. For each node, each member record's faces inside the cell are
// candidates; the records left and right of a candidate are its masks ANDed with the node's
// members, so the exact SAH cost of every candidate takes two popcounts. The cheapest
// candidate (ties to the lowest index) splits the node when it costs less than making it a
// leaf and the depth limit allows; the children's members are the two masks (no clipping in
// this stage), an empty child becomes an empty leaf, and the others go on the stack (the right
// child under the left). Otherwise the node becomes a leaf of its members. A subtree of at most
// MAX_SMALL records never needs more stack than its depth limit allows, and no small node ever
// leaves its workgroup: the stage records one dispatch where a dispatch per level needed as
// many as the depth limit.
#include "../common/prelude.glsl"
#include "kdtree/build.glsl"
#include "workgroup_steps.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t refs_address;
} pc;

shared float subgroup_cost[SUBGROUPS_PER_WORKGROUP];
shared uint subgroup_candidate[SUBGROUPS_PER_WORKGROUP];
// The subtree's nodes still to split: a node at depth d pushes at most two and is popped
// first, so a root of depth >= 0 under a depth limit of MAX_DEPTH holds at most MAX_DEPTH + 1.
shared SmallNode stack[MAX_DEPTH + 1];
shared uint stack_size;
// The root's records' boxes, while the candidates' masks are made.
shared vec3 root_lo[MAX_SMALL];
shared vec3 root_hi[MAX_SMALL];
// The chosen candidate's plane and masks, handed by its record's invocation to invocation 0.
shared float chosen_plane;
shared uint64_t chosen_left;
shared uint64_t chosen_right;

// This invocation's record (when t < the root's records) and its candidates' masks: bit u of
// candidate_left[face] (candidate_right[face]) says that the root's record u goes left (right)
// of the plane of the record's box face `face` (lo x, y, z, then hi x, y, z).
Record record;
uint64_t candidate_left[CANDIDATES];
uint64_t candidate_right[CANDIDATES];

float face_plane(uint face) {
    return face < 3u ? record.lo[face] : record.hi[face - 3u];
}

// Reads the root's records and makes this invocation's candidates' masks.
void make_candidates(BuildRefs b, SmallNode root) {
    uint t = gl_LocalInvocationIndex;
    uint count = root.root_count;
    if (t < count) {
        record = Records(b.small_records).v[root.root_first + t];
        root_lo[t] = record.lo;
        root_hi[t] = record.hi;
    }
    barrier();
    if (t < count) {
        [[unroll]] for (uint face = 0; face < CANDIDATES; ++face) {
            uint axis = face % 3u;
            float plane = face_plane(face);
            uint64_t left = 0ul;
            uint64_t right = 0ul;
            for (uint u = 0; u < count; ++u) {
                if (goes_left(root_lo[u][axis], root_hi[u][axis], plane)) {
                    left |= 1ul << u;
                }
                if (goes_right(root_hi[u][axis], plane)) {
                    right |= 1ul << u;
                }
            }
            candidate_left[face] = left;
            candidate_right[face] = right;
        }
    }
}

// The cheapest split candidate of `node`, agreed by the whole workgroup: its index
// (record * CANDIDATES + face) and cost, NO_PARENT and INF when none lies inside the cell.
uint cheapest_candidate(BuildRefs b, SmallNode node, out float cost) {
    vec3 extent = node.cell_hi - node.cell_lo;
    uint t = gl_LocalInvocationIndex;
    float best_cost = INF;
    uint best = NO_PARENT;
    if (t < node.root_count && ((node.members >> t) & 1ul) != 0ul && box_area(extent) > 0.0) {
        [[unroll]] for (uint face = 0; face < CANDIDATES; ++face) {
            uint axis = face % 3u;
            float plane = face_plane(face);
            if (node.cell_lo[axis] < plane && plane < node.cell_hi[axis]) {
                float c = split_cost(b, extent, axis, plane - node.cell_lo[axis],
                                     popcount64(candidate_left[face] & node.members),
                                     popcount64(candidate_right[face] & node.members));
                if (c < best_cost) {
                    best_cost = c;
                    best = t * CANDIDATES + face;
                }
            }
        }
    }
    float subgroup_best = subgroupMin(best_cost);
    uint candidate = subgroupMin(best_cost == subgroup_best ? best : NO_PARENT);
    if (subgroupElect()) {
        subgroup_cost[gl_SubgroupID] = subgroup_best;
        subgroup_candidate[gl_SubgroupID] = candidate;
    }
    barrier();
    best_cost = subgroup_cost[0];
    best = subgroup_candidate[0];
    for (uint s = 1; s < gl_NumSubgroups; ++s) {
        if (subgroup_cost[s] < best_cost
            || (subgroup_cost[s] == best_cost && subgroup_candidate[s] < best)) {
            best_cost = subgroup_cost[s];
            best = subgroup_candidate[s];
        }
    }
    barrier(); // the partials may be rewritten for the next node
    cost = best_cost;
    return best;
}

void main() {
    BuildRefs b = BuildRefsRef(pc.refs_address).v;
    uint index = flat_workgroup_id();
    if (index >= small_root_count(b)) {
        return;
    }
    if (gl_LocalInvocationIndex == 0) {
        stack[0] = SmallNodes(b.small_roots).v[index];
        stack_size = 1u;
    }
    barrier();
    make_candidates(b, stack[0]);
    while (stack_size > 0u) {
        SmallNode node = stack[stack_size - 1u];
        barrier();
        if (gl_LocalInvocationIndex == 0) {
            stack_size -= 1u;
        }
        float best_cost;
        uint best = cheapest_candidate(b, node, best_cost);
        uint member_count = popcount64(node.members);
        bool split = best != NO_PARENT && node.depth < b.max_depth
            && best_cost < b.intersection_cost * float(member_count);

        uint entries = NO_PARENT;
        if (split && gl_LocalInvocationIndex == 0) {
            entries = reserve(b, status_field(b, 0), 2, b.entry_capacity, OVERFLOW_ENTRIES);
        }
        if (split && gl_LocalInvocationIndex == best / CANDIDATES) {
            [[unroll]] for (uint face = 0; face < CANDIDATES; ++face) {
                if (face == best % CANDIDATES) {
                    chosen_plane = face_plane(face);
                    chosen_left = candidate_left[face];
                    chosen_right = candidate_right[face];
                }
            }
        }
        entries = broadcast(entries);
        if (entries == NO_PARENT) {
            leaf_from_members(b, node.entry, node.root_first, node.root_count, node.members);
            continue;
        }
        uint axis = (best % CANDIDATES) % 3u;
        if (gl_LocalInvocationIndex == 0) {
            float plane = chosen_plane;
            write_internal_entry(b, node.entry, axis, plane);
            // Right first, so the left child is split next.
            for (int side = 1; side >= 0; --side) {
                uint entry = entries + uint(side);
                uint64_t child_members = (side == 0 ? chosen_left : chosen_right) & node.members;
                link_child(b, entry, node.entry, uint(side));
                if (child_members == 0ul) {
                    write_leaf_entry(b, entry, 0, 0);
                } else {
                    vec3 lo = node.cell_lo;
                    vec3 hi = node.cell_hi;
                    if (side == 0) {
                        hi[axis] = plane;
                    } else {
                        lo[axis] = plane;
                    }
                    stack[stack_size] = SmallNode(lo, node.root_first, hi, node.root_count,
                                                  child_members, entry, node.depth + 1u);
                    stack_size += 1u;
                }
            }
        }
        barrier();
    }
}
