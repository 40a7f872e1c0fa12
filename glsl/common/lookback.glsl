// Decoupled look-back (Merrill & Garland 2016): tiles of a single-pass scan publish their
// aggregate, then find their exclusive prefix by walking back over their predecessors'
// descriptors until one holds an inclusive prefix. A descriptor is one 64-bit word,
// (flag << 32) | value, read and written atomically, so no other memory ordering is needed.
// Tiles must take their index from an atomic ticket in arrival order (`acquire_tile`), so a
// tile only ever waits for tiles that have already started: no deadlock on any scheduler.
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

#endif
