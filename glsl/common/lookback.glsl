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

// Publishes `aggregate` for `tile` and returns the sum of all earlier tiles' aggregates.
// Called by all lanes of one subgroup; they read SUBGROUP_SIZE predecessors at a time.
uint subgroup_lookback(uint64_t status_address, uint tile, uint aggregate) {
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
        uint64_t d;
        do {
            d = predecessor >= 0 ? atomicAdd(status.v[predecessor], 0ul) : lookback_pack(LOOKBACK_PREFIX, 0);
        } while (!subgroupAll(lookback_flag(d) != LOOKBACK_NOT_READY));
        uvec4 prefix_lanes = subgroupBallot(lookback_flag(d) == LOOKBACK_PREFIX);
        if (subgroupAny(lookback_flag(d) == LOOKBACK_PREFIX)) {
            uint nearest = subgroupBallotFindLSB(prefix_lanes);
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
