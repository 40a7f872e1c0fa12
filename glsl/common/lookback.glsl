// Decoupled look-back (Merrill & Garland 2016): tiles of a single-pass scan publish their
// aggregate, then find their exclusive prefix by walking back over their predecessors'
// descriptors until one holds an inclusive prefix. A descriptor is one 64-bit word,
// (flag << 32) | value, read and written atomically, so no other memory ordering is needed.
// Tiles must take their index from an atomic ticket in arrival order (`acquire_tile`), so a
// tile only ever waits for tiles that have already started: no deadlock on any scheduler.
// The scratch is [ticket, tiles finished, one descriptor per tile], zero before a use and left
// zero after it by the last tile to finish (`release_lookback`), so no fill runs between uses.
#ifndef CANOPY_LOOKBACK
#define CANOPY_LOOKBACK
#include "prelude.glsl"

const uint LOOKBACK_NOT_READY = 0;
const uint LOOKBACK_AGGREGATE = 1;
const uint LOOKBACK_PREFIX = 2;

uint64_t lookback_pack(uint flag, uint value) {
    return (uint64_t(flag) << 32) | uint64_t(value);
}
uint lookback_flag(uint64_t d) { return uint(d >> 32); }
uint lookback_value(uint64_t d) { return uint(d); }

shared uint lookback_tile_shared;

// The next tile index from the ticket counter at `ticket_address`; every invocation gets it.
uint acquire_tile(uint64_t ticket_address) {
    if (gl_LocalInvocationIndex == 0) {
        lookback_tile_shared = atomicAdd(U32s(ticket_address).v[0], 1u);
    }
    barrier();
    uint tile = lookback_tile_shared;
    barrier();
    return tile;
}

shared bool lookback_last_shared;

// Ends this workgroup's use of the look-back scratch at `scratch_address`, one of `tiles` tiles:
// the last tile to finish, after which no tile reads a descriptor any more, zeroes the
// descriptors and both counters for the next use. Called by the whole workgroup once its
// descriptor is published.
void release_lookback(uint64_t scratch_address, uint tiles) {
    barrier();
    memoryBarrierBuffer();
    CoherentU32s counters = CoherentU32s(scratch_address);
    if (gl_LocalInvocationIndex == 0) {
        lookback_last_shared = atomicAdd(counters.v[1], 1u) == tiles - 1u;
    }
    barrier();
    if (lookback_last_shared) {
        memoryBarrierBuffer();
        CoherentU64s status = CoherentU64s(scratch_address + 8);
        for (uint t = gl_LocalInvocationIndex; t < tiles; t += WORKGROUP_SIZE) {
            status.v[t] = 0ul;
        }
        if (gl_LocalInvocationIndex == 0) {
            counters.v[0] = 0u;
            counters.v[1] = 0u;
        }
    }
}

#endif
