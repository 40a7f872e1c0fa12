#version 460
// Flags the first of each run of equal sorted keys (Karras 2012 §4: points sharing a Morton
// cell are one octree leaf), for the compaction that removes the duplicates.
#include "../common/prelude.glsl"
#include "../common/keys.glsl"


layout(push_constant, scalar) uniform Push {
    uint64_t keys_address;  // sorted u32 or u64 keys
    uint64_t flags_address; // out: u32 per key, 1 for the first of its run
    uint count;
} pc;

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= pc.count) {
        return;
    }
    bool first = i == 0u;
    if (!first) {
        first = key_at(pc.keys_address, i) != key_at(pc.keys_address, i - 1u);
    }
    U32s(pc.flags_address).v[i] = first ? 1u : 0u;
}
