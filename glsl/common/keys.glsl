// Sort keys of the Morton-ordered builders: u32 (30-bit codes) or u64 (63-bit codes) as the
// includer's constant_id 2 says, read as u64 either way.
#ifndef CANOPY_KEYS
#define CANOPY_KEYS
#include "prelude.glsl"

layout(constant_id = 2) const bool KEYS64 = false;
const int KEY_BITS = KEYS64 ? 64 : 32;

uint64_t key_at(uint64_t keys_address, uint i) {
    if (KEYS64) {
        return U64s(keys_address).v[i];
    }
    return uint64_t(U32s(keys_address).v[i]);
}

#endif
