#version 460
// Counts how many elements fall in each of `bins` bins (bin ids given per element): the sizes
// of a multi-split's output ranges. As in Patidar 2008, each workgroup counts its tile into a
// shared-memory histogram and adds it to the global one with one atomic per non-zero bin; when
// the bins do not fit in shared memory (SHARED_BINS == 0) it counts with global atomics.
// Ids outside 0..bins are counted in an overflow slot at index `bins` so nothing is lost.
#include "../common/prelude.glsl"

layout(constant_id = 2) const uint SHARED_BINS = 1024; // bins + 1 when they fit, else 0: global atomics
layout(constant_id = 3) const uint ITEMS_PER_INVOCATION = 16;
const uint TILE = WORKGROUP_SIZE * ITEMS_PER_INVOCATION;

layout(push_constant, scalar) uniform Push {
    uint64_t bin_ids_address;
    uint64_t counts_address;    // bins + 1 u32, zeroed
    uint64_t count_address;
    uint host_count;
    uint bins;
} pc;

shared uint local_counts[SHARED_BINS + 1];

void main() {
    uint n = element_count(pc.count_address, pc.host_count);
    uint tile = flat_workgroup_id();
    if (tile * TILE >= n) {
        return;
    }
    U32s counts = U32s(pc.counts_address);
    U32s bin_ids = U32s(pc.bin_ids_address);
    uint end = min(n, (tile + 1) * TILE);
    if (SHARED_BINS == 0) {
        for (uint i = tile * TILE + gl_LocalInvocationIndex; i < end; i += WORKGROUP_SIZE) {
            atomicAdd(counts.v[min(bin_ids.v[i], pc.bins)], 1u);
        }
        return;
    }
    for (uint b = gl_LocalInvocationIndex; b <= pc.bins; b += WORKGROUP_SIZE) {
        local_counts[b] = 0;
    }
    barrier();
    for (uint i = tile * TILE + gl_LocalInvocationIndex; i < end; i += WORKGROUP_SIZE) {
        atomicAdd(local_counts[min(bin_ids.v[i], pc.bins)], 1u);
    }
    barrier();
    for (uint b = gl_LocalInvocationIndex; b <= pc.bins; b += WORKGROUP_SIZE) {
        uint c = local_counts[b];
        if (c != 0) {
            atomicAdd(counts.v[b], c);
        }
    }
}
