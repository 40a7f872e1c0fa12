// Decoupled look-back with a bounded wait and a fallback (Merrill & Garland 2016 §4.4; Levien's
// "decoupled fallback"): tiles publish their aggregate and walk back over their predecessors'
// descriptors (lookback.glsl) until one holds an inclusive prefix, but a predecessor that has
// not published its aggregate after LOOKBACK_SPIN_LIMIT polls is not waited for any longer: the
// subgroup computes that tile's aggregate itself from the input, through
// `lookback_fallback_aggregate(tile)`, which the includer defines before including this file
// (called by all lanes of one subgroup with a subgroup-uniform tile; it must return exactly the
// aggregate that tile publishes). The fallback reads the predecessor's input, so the input must
// not be overwritten by the same dispatch: no in-place use.
//
// Why not spin until ready: Mesa's lavapipe caps the loop iterations of one shader execution
// (LP_MAX_TGSI_LOOP_ITERATIONS = 65535, one budget shared by every loop of the shader) and
// then silently leaves every loop. A spinning tile whose predecessor's thread was preempted by
// the OS (a loaded CPU) used up that budget in a few milliseconds and left the wait with a
// NOT_READY descriptor, losing that tile's aggregate from the prefix (seen about once in a few
// hundred 1M-element scans on 2 cores). Bounding the wait keeps the total iteration count per
// tile small (LOOKBACK_SPIN_LIMIT per window of SUBGROUP_SIZE predecessors, plus the fallback
// reduction), so the result is correct on any scheduler; on GPUs predecessors publish within
// microseconds and the fallback practically never runs.
#ifndef CANOPY_LOOKBACK_FALLBACK
#define CANOPY_LOOKBACK_FALLBACK
#include "lookback.glsl"

// Polls of a window of predecessors before falling back; an includer may define it first (e.g.
// as a specialization constant, so tests can force the fallback with 1).
#ifndef LOOKBACK_SPIN_LIMIT
#define LOOKBACK_SPIN_LIMIT 1024u
#endif

// Publishes `aggregate` for `tile` and returns the sum of all earlier tiles' aggregates.
// Called by all lanes of one subgroup; they read SUBGROUP_SIZE predecessors at a time.
uint subgroup_lookback_fallback(uint64_t status_address, uint tile, uint aggregate) {
    CoherentU64s status = CoherentU64s(status_address);
    if (subgroupElect()) {
        atomicExchange(status.v[tile], lookback_pack(tile == 0 ? LOOKBACK_PREFIX : LOOKBACK_AGGREGATE, aggregate));
    }
    if (tile == 0) {
        return 0;
    }
    uint exclusive = 0;
    int window_end = int(tile) - 1;
    while (true) {
        int predecessor = window_end - int(gl_SubgroupInvocationID);
        uint64_t d = lookback_pack(predecessor >= 0 ? LOOKBACK_NOT_READY : LOOKBACK_PREFIX, 0);
        for (uint poll = 0; poll < LOOKBACK_SPIN_LIMIT; ++poll) {
            if (predecessor >= 0) {
                d = atomicAdd(status.v[predecessor], 0ul);
            }
            if (subgroupAll(lookback_flag(d) != LOOKBACK_NOT_READY)) {
                break;
            }
        }
        // The nearest predecessor holding an inclusive prefix ends the look-back; those before it
        // that are still not ready are reduced here, one at a time.
        uvec4 prefix_lanes = subgroupBallot(lookback_flag(d) == LOOKBACK_PREFIX);
        bool found = subgroupAny(lookback_flag(d) == LOOKBACK_PREFIX);
        uint nearest = found ? subgroupBallotFindLSB(prefix_lanes) : gl_SubgroupSize;
        uvec4 waiting = subgroupBallot(lookback_flag(d) == LOOKBACK_NOT_READY && gl_SubgroupInvocationID < nearest);
        uint pending = subgroupBallotBitCount(waiting);
        for (uint k = 0; k < pending; ++k) {
            uint lane = subgroupBallotFindLSB(waiting);
            uint value = lookback_fallback_aggregate(uint(window_end) - lane);
            if (gl_SubgroupInvocationID == lane) {
                d = lookback_pack(LOOKBACK_AGGREGATE, value);
            }
            waiting = subgroupBallot(lookback_flag(d) == LOOKBACK_NOT_READY && gl_SubgroupInvocationID < nearest);
        }
        if (found) {
            exclusive += subgroupAdd(gl_SubgroupInvocationID <= nearest ? lookback_value(d) : 0u);
            break;
        }
        exclusive += subgroupAdd(lookback_value(d));
        window_end -= int(gl_SubgroupSize);
    }
    if (subgroupElect()) {
        atomicExchange(status.v[tile], lookback_pack(LOOKBACK_PREFIX, exclusive + aggregate));
    }
    return exclusive;
}

#endif
