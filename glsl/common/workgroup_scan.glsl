// Workgroup-wide reductions and exclusive scans of u32 built from subgroup operations, correct
// for any subgroup size that divides the workgroup size (8 on lavapipe, 32 on NVIDIA, 64 on AMD).
// The subgroup totals are scanned by the first subgroup in chunks of SUBGROUP_SIZE, carrying
// the running sum, so workgroups may hold more subgroups than a subgroup has lanes.
#ifndef CANOPY_WORKGROUP_SCAN
#define CANOPY_WORKGROUP_SCAN
#include "prelude.glsl"

shared uint wg_scan_partials[SUBGROUPS_PER_WORKGROUP + 1];

// Exclusive prefix sum of `x` over the workgroup in invocation order; `total` receives the sum.
// Every invocation of the workgroup must call it (it holds two barriers).
uint workgroup_exclusive_add(uint x, out uint total) {
    uint inclusive = subgroupInclusiveAdd(x);
    if (gl_SubgroupInvocationID == gl_SubgroupSize - 1) {
        wg_scan_partials[gl_SubgroupID] = inclusive;
    }
    barrier();
    if (gl_SubgroupID == 0) {
        uint carry = 0;
        for (uint base = 0; base < gl_NumSubgroups; base += gl_SubgroupSize) {
            uint i = base + gl_SubgroupInvocationID;
            uint v = i < gl_NumSubgroups ? wg_scan_partials[i] : 0;
            uint incl = subgroupInclusiveAdd(v);
            if (i < gl_NumSubgroups) {
                wg_scan_partials[i] = carry + incl - v;
            }
            carry += subgroupShuffle(incl, gl_SubgroupSize - 1);
        }
        if (gl_SubgroupInvocationID == 0) {
            wg_scan_partials[gl_NumSubgroups] = carry;
        }
    }
    barrier();
    total = wg_scan_partials[gl_NumSubgroups];
    uint result = wg_scan_partials[gl_SubgroupID] + inclusive - x;
    barrier(); // the partials may be reused by the next call
    return result;
}

#endif
