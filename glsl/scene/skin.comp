#version 460
// Poses a glTF scene's vertices for one frame, one invocation per vertex: the rest position
// plus its part's morph targets' offsets weighted by the frame's morph weights (MORPH), then
// linear blend skinning by up to 8 joint influences (INFLUENCE_GROUPS groups of 4: 16-bit
// palette indices, float weights), the palette holding each skin's joint matrices and each
// rigid part's node matrix for the frame. Only the palette and the morph weights change from
// frame to frame; positions never leave the GPU. src/scene/rig.rs posed_positions is the CPU
// reference.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"

layout(constant_id = 2) const uint INFLUENCE_GROUPS = 1;
layout(constant_id = 3) const bool MORPH = false;

layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Mat4s { mat4 v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Vec4s { vec4 v[]; };

// A part with morph targets, as src/scene/animated/skin.rs MorphPart.
struct MorphPart {
    uint first_vertex;
    uint vertex_count;
    uint targets;
    uint first_offset; // its offsets, target-major
    uint first_weight; // its weights in the frame's morph weights
    uint pad;
};
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer MorphParts { MorphPart v[]; };

layout(push_constant, scalar) uniform Push {
    uint64_t rest_address;          // vec3 per vertex
    uint64_t joints_address;        // 2 u32 (4 16-bit palette indices) per vertex and group
    uint64_t weights_address;       // vec4 per vertex and group
    uint64_t palette_address;       // mat4 per entry, this frame's
    uint64_t out_address;           // out: vec3 per vertex
    uint64_t part_of_vertex_address;// u32 per vertex (MORPH)
    uint64_t parts_address;         // MorphPart per part (MORPH)
    uint64_t offsets_address;       // vec3 per target and vertex (MORPH)
    uint64_t morph_weights_address; // float per target and part, this frame's (MORPH)
    uint vertex_count;
    uint pad;
} pc;

void main() {
    uint v = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (v >= pc.vertex_count) {
        return;
    }
    vec3 p = Vec3s(pc.rest_address).v[v];
    if (MORPH) {
        MorphPart part = MorphParts(pc.parts_address).v[U32s(pc.part_of_vertex_address).v[v]];
        uint local = v - part.first_vertex;
        for (uint t = 0; t < part.targets; t++) {
            float w = F32s(pc.morph_weights_address).v[part.first_weight + t];
            if (w != 0.0) {
                p += w * Vec3s(pc.offsets_address).v[part.first_offset + t * part.vertex_count + local];
            }
        }
    }
    Mat4s palette = Mat4s(pc.palette_address);
    mat4 skin = mat4(0.0);
    [[unroll]] for (uint g = 0; g < INFLUENCE_GROUPS; g++) {
        uint group = v * INFLUENCE_GROUPS + g;
        uvec2 packed = uvec2(U32s(pc.joints_address).v[2 * group], U32s(pc.joints_address).v[2 * group + 1]);
        vec4 w = Vec4s(pc.weights_address).v[group];
        uint joints[4] = uint[4](packed.x & 0xffffu, packed.x >> 16, packed.y & 0xffffu, packed.y >> 16);
        [[unroll]] for (uint k = 0; k < 4; k++) {
            if (w[k] != 0.0) {
                skin += palette.v[joints[k]] * w[k];
            }
        }
    }
    Vec3s(pc.out_address).v[v] = (skin * vec4(p, 1.0)).xyz;
}
