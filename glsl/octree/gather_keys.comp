#version 460
// unique_keys[j] = keys[indices[j]] for the `count` (a device count) indices that the
// compaction of the duplicate flags kept: the distinct sorted keys, contiguous.
#include "../common/prelude.glsl"
#include "../common/keys.glsl"


layout(push_constant, scalar) uniform Push {
    uint64_t keys_address;        // sorted u32 or u64 keys
    uint64_t indices_address;     // u32 per kept key
    uint64_t unique_keys_address; // out: u32 or u64 per kept key
    uint64_t count_address;       // u32: number kept
} pc;

void main() {
    uint j = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (j >= U32s(pc.count_address).v[0]) {
        return;
    }
    uint i = U32s(pc.indices_address).v[j];
    if (KEYS64) {
        U64s(pc.unique_keys_address).v[j] = U64s(pc.keys_address).v[i];
    } else {
        U32s(pc.unique_keys_address).v[j] = U32s(pc.keys_address).v[i];
    }
}
