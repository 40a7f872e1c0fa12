// Large-node stage, the split of one node (Zhou et al. 2008 Alg. 2, "split large nodes"), run
// by the workgroup of the node's last chunk to finish its box (large_boxes.comp). With the
// node's records' box known, each side of the cell whose empty part exceeds Ce of the cell's
// extent is cut off (a node with an empty leaf child, chained), then the rest is split at the
// spatial median of its longest axis. The chain's entries and the children's record ranges (n
// per child, for the atomic appends of large_classify) are reserved with one atomic each. Nodes
// of at most T records become small roots instead, and nodes at the depth limit (or that
// cannot get space) become leaves. The root's cell is unbounded: it takes the records' box,
// which is the scene box. Called by the whole workgroup in uniform control flow.
#ifndef CANOPY_KDTREE_SPLIT
#define CANOPY_KDTREE_SPLIT
#include "kdtree/build.glsl"
#include "kdtree/workgroup_steps.glsl"

void split_node(BuildRefs b, uint level, uint index) {
    uint parity = level & 1u;
    CoherentLargeNodes nodes = CoherentLargeNodes(b.large_nodes[parity]);
    LargeNode node = nodes.v[index];
    Records records = Records(b.records[parity]);
    vec3 tight_lo;
    vec3 tight_hi;
    for (uint axis = 0; axis < 3; ++axis) {
        tight_lo[axis] = uintBitsToFloat(ordered_to_float(node.tight_lo[axis]));
        tight_hi[axis] = uintBitsToFloat(ordered_to_float(node.tight_hi[axis]));
    }
    vec3 lo = node.cell_lo;
    vec3 hi = node.cell_hi;
    if (level == 0u) {
        lo = tight_lo;
        hi = tight_hi;
        if (gl_LocalInvocationIndex == 0) {
            Aabbs(b.tree_bounds).v[0] = Aabb(lo, 0, hi, 0);
        }
    }
    if (node.count <= b.small_threshold) {
        small_root(b, node.entry, lo, hi, records, node.first, node.count, node.depth);
        return;
    }
    if (node.depth >= b.max_depth) {
        leaf_from_records(b, node.entry, records, node.first, node.count);
        return;
    }

    // Empty space cuts, each a chain node, within the depth left for the median split.
    uint cut_axis[6];
    uint cut_side[6]; // the empty child's side
    float cut_plane[6];
    uint cuts = 0;
    uint budget = b.max_depth - node.depth - 1u;
    for (uint axis = 0; axis < 3; ++axis) {
        float extent = hi[axis] - lo[axis];
        if (cuts < budget && tight_lo[axis] - lo[axis] > b.empty_cut * extent) {
            cut_axis[cuts] = axis;
            cut_side[cuts] = 0;
            cut_plane[cuts] = tight_lo[axis];
            lo[axis] = tight_lo[axis];
            ++cuts;
        }
        if (cuts < budget && hi[axis] - tight_hi[axis] > b.empty_cut * extent) {
            cut_axis[cuts] = axis;
            cut_side[cuts] = 1;
            cut_plane[cuts] = tight_hi[axis];
            hi[axis] = tight_hi[axis];
            ++cuts;
        }
    }
    vec3 extent = hi - lo;
    uint axis = extent.x >= extent.y && extent.x >= extent.z ? 0u : (extent.y >= extent.z ? 1u : 2u);
    float plane = 0.5 * (lo[axis] + hi[axis]);

    uint entries = NO_PARENT;
    uint records_first = NO_PARENT;
    if (gl_LocalInvocationIndex == 0 && lo[axis] < plane && plane < hi[axis]) {
        // Records first: reserved entries must all be written (the output passes read them).
        uint64_t counter = level_counter_address(b, level) + LEVEL_RECORDS;
        records_first = reserve(b, counter, 2u * node.count, b.record_capacity, OVERFLOW_RECORDS);
        if (records_first != NO_PARENT) {
            // Below the record arrays, which share the entries' buffer (build.glsl).
            entries = reserve(b, status_field(b, 0), 2u * cuts + 2u, b.large_entry_capacity,
                              OVERFLOW_ENTRIES);
        }
    }
    entries = broadcast(entries);
    if (entries == NO_PARENT) {
        // No plane separates anything, or no space: the node stays a leaf.
        leaf_from_records(b, node.entry, records, node.first, node.count);
        return;
    }
    if (gl_LocalInvocationIndex != 0) {
        return;
    }
    uint parent = node.entry;
    uint next = entries;
    for (uint c = 0; c < cuts; ++c) {
        write_internal_entry(b, parent, cut_axis[c], cut_plane[c]);
        uint empty = next;
        uint rest = next + 1u;
        next += 2u;
        link_child(b, empty, parent, cut_side[c]);
        write_leaf_entry(b, empty, 0, 0);
        link_child(b, rest, parent, 1u - cut_side[c]);
        parent = rest;
    }
    write_internal_entry(b, parent, axis, plane);
    link_child(b, next, parent, 0);
    link_child(b, next + 1u, parent, 1);
    LargeNodes children = LargeNodes(b.children);
    uint depth = node.depth + cuts + 1u;
    vec3 left_hi = hi;
    left_hi[axis] = plane;
    vec3 right_lo = lo;
    right_lo[axis] = plane;
    children.v[2u * index] = LargeNode(lo, records_first, left_hi, 0, uvec3(~0u), next,
                                       uvec3(0u), depth, NOT_SPLIT, 0.0, node.stalls, 0);
    children.v[2u * index + 1u] = LargeNode(right_lo, records_first + node.count, hi, 0,
                                            uvec3(~0u), next + 1u, uvec3(0u), depth, NOT_SPLIT,
                                            0.0, node.stalls, 0);
    nodes.v[index].split_axis = axis;
    nodes.v[index].split = plane;
}

#endif
