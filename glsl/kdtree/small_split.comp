#version 460
// Small-node stage (Zhou et al. 2008 Alg. 4), one level: one workgroup per small node, one
// invocation per record of its small root. Each member record's six box faces inside the cell
// are split candidates; the records left and right of a candidate are the root's precomputed
// masks ANDed with the node's members, so the exact SAH cost of every candidate takes two
// popcounts. The cheapest candidate (ties to the lowest index) splits the node when it costs
// less than making it a leaf and the depth limit allows; the children's members are the two
// masks (no clipping in this stage), an empty child becomes an empty leaf, and the others join
// the next small level. Otherwise the node becomes a leaf of its members.
#include "../common/prelude.glsl"
#include "kdtree/build.glsl"
#include "workgroup_steps.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t refs_address;
    uint level;
} pc;

shared float subgroup_cost[SUBGROUPS_PER_WORKGROUP];
shared uint subgroup_candidate[SUBGROUPS_PER_WORKGROUP];

void main() {
    BuildRefs b = BuildRefsRef(pc.refs_address).v;
    uint parity = pc.level & 1u;
    uint index = flat_workgroup_id();
    if (index >= small_node_count(b, pc.level)) {
        return;
    }
    SmallNode node = SmallNodes(b.small_nodes[parity]).v[index];
    uint member_count = popcount64(node.members);
    vec3 extent = node.cell_hi - node.cell_lo;
    SplitMaskArray masks = SplitMaskArray(b.small_masks);

    uint t = gl_LocalInvocationIndex;
    float best_cost = INF;
    uint best = NO_PARENT;
    if (t < node.root_count && ((node.members >> t) & 1ul) != 0ul && box_area(extent) > 0.0) {
        Record r = Records(b.small_records).v[node.root_first + t];
        for (uint face = 0; face < CANDIDATES; ++face) {
            uint axis = face % 3u;
            float plane = face < 3u ? r.lo[axis] : r.hi[axis];
            if (node.cell_lo[axis] < plane && plane < node.cell_hi[axis]) {
                SplitMasks m = masks.v[(node.root_first + t) * CANDIDATES + face];
                float cost = split_cost(b, extent, axis, plane - node.cell_lo[axis],
                                        popcount64(m.left & node.members),
                                        popcount64(m.right & node.members));
                if (cost < best_cost) {
                    best_cost = cost;
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
    bool split = best != NO_PARENT && node.depth < b.max_depth
        && best_cost < b.intersection_cost * float(member_count);

    uint entries = NO_PARENT;
    if (split && gl_LocalInvocationIndex == 0) {
        entries = reserve(b, status_field(b, 0), 2, b.entry_capacity, OVERFLOW_ENTRIES);
    }
    entries = broadcast(entries);
    if (entries == NO_PARENT) {
        leaf_from_members(b, node.entry, node.root_first, node.root_count, node.members);
        return;
    }
    uint axis = (best % CANDIDATES) % 3u;
    Record r = Records(b.small_records).v[node.root_first + best / CANDIDATES];
    float plane = best % CANDIDATES < 3u ? r.lo[axis] : r.hi[axis];
    SplitMasks m = masks.v[node.root_first * CANDIDATES + best];
    if (gl_LocalInvocationIndex == 0) {
        write_internal_entry(b, node.entry, axis, plane);
    }
    for (uint side = 0; side < 2; ++side) {
        uint entry = entries + side;
        uint64_t child_members = (side == 0u ? m.left : m.right) & node.members;
        vec3 lo = node.cell_lo;
        vec3 hi = node.cell_hi;
        if (side == 0u) {
            hi[axis] = plane;
        } else {
            lo[axis] = plane;
        }
        uint slot = NO_PARENT;
        if (gl_LocalInvocationIndex == 0) {
            link_child(b, entry, node.entry, side);
            if (child_members == 0ul) {
                write_leaf_entry(b, entry, 0, 0);
            } else {
                uint64_t counter = small_level_counter_address(b, pc.level + 1u);
                slot = reserve_dispatched(b, counter, counter + SMALL_LEVEL_NODE_GRID, 1,
                                          b.small_node_capacity, OVERFLOW_SMALL_NODES);
                if (slot != NO_PARENT) {
                    SmallNodes(b.small_nodes[parity ^ 1u]).v[slot] = SmallNode(
                        lo, node.root_first, hi, node.root_count, child_members, entry,
                        node.depth + 1u);
                }
            }
        }
        slot = broadcast(slot);
        if (slot == NO_PARENT && child_members != 0ul) {
            leaf_from_members(b, entry, node.root_first, node.root_count, child_members);
        }
    }
}
