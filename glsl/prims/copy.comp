#version 460
// Copies `count` u32 words (a multiple of 4) from one device buffer to another with 16-byte
// loads and stores: the device-local bandwidth yardstick of `canopy bench prims` and
// `canopy bench dispatch`, since vkCmdCopyBuffer runs several times below the memory's
// bandwidth on some drivers.
#include "../common/prelude.glsl"

layout(constant_id = 2) const uint VECTORS_PER_INVOCATION = 4;

layout(push_constant, scalar) uniform Push {
    uint64_t src_address;
    uint64_t dst_address;
    uint vector_count;
} pc;

void main() {
    U32x4s src = U32x4s(pc.src_address);
    U32x4s dst = U32x4s(pc.dst_address);
    uint base = flat_workgroup_id() * WORKGROUP_SIZE * VECTORS_PER_INVOCATION + gl_LocalInvocationID.x;
    [[unroll]] for (uint k = 0; k < VECTORS_PER_INVOCATION; ++k) {
        uint i = base + k * WORKGROUP_SIZE;
        if (i < pc.vector_count) {
            dst.v[i] = src.v[i];
        }
    }
}
