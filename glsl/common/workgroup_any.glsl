// A vote over the whole workgroup, for loops that must stay workgroup-uniform on devices that
// end an invocation reaching a memory barrier in divergent control flow (lavapipe): the
// bottom-up climbs of the LBVH boxes and the kd-tree leaf counts. Call it from
// workgroup-uniform control flow.
#ifndef CANOPY_WORKGROUP_ANY
#define CANOPY_WORKGROUP_ANY
#include "prelude.glsl"

shared bool subgroup_any_votes[SUBGROUPS_PER_WORKGROUP];

// Whether `value` holds in any invocation of the workgroup.
bool workgroup_any(bool value) {
    bool any_in_subgroup = subgroupAny(value);
    barrier();
    if (subgroupElect()) {
        subgroup_any_votes[gl_SubgroupID] = any_in_subgroup;
    }
    barrier();
    bool result = false;
    for (uint s = 0; s < gl_NumSubgroups; ++s) {
        result = result || subgroup_any_votes[s];
    }
    return result;
}

#endif
