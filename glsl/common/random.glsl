// Counter-based random numbers: a draw is a hash of (seed, stream, draw index), so any
// invocation gets its numbers without state and a frame is reproducible; src/rng.rs
// random_unit computes the same bits on the CPU. The hash is PCG's output permutation (Jarzynski
// and Olano, "Hash Functions for GPU Rendering", JCGT 2020).
#ifndef CANOPY_RANDOM
#define CANOPY_RANDOM

uint pcg_hash(uint v) {
    uint state = v * 747796405u + 2891336453u;
    uint word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// A uniform number in [0, 1), 24 bits, for draw `draw` of stream `stream` under `seed`.
float random_unit(uint seed, uint stream, uint draw) {
    uint h = pcg_hash(seed ^ pcg_hash(stream ^ pcg_hash(draw)));
    return float(h >> 8) * (1.0 / 16777216.0);
}

#endif
