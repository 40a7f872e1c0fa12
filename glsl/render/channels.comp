#version 460
// A frame's file channels converted on the GPU, so that readback carries what the file holds:
// each pixel's radiance sum (common/paths.glsl) and what its camera ray hit (PixelAovs, from
// aovs.comp) written as planes, one per channel in the order of the table, each in its own
// encoding: 32-bit float, 16-bit float, 32-bit integer (the object and instance ids), or 16-bit display
// values (the radiance clamped to [0, 1] and sRGB-encoded, other sources clamped, scaled to
// 65535, stored big-endian as PNG holds them). Planes of 16-bit values are padded to 4 bytes.
// One invocation per pair of pixels, so 16-bit planes are written a whole word at a time.
// src/render/channels.rs (ChannelSource::value, ChannelEncoding::encode) is the reference.
#include "../common/prelude.glsl"
#include "../common/paths.glsl"
#include "pixel_aovs.glsl"
#include "../common/srgb.glsl"

const uint MAX_CHANNELS = 16;
// Encodings, as ChannelEncoding in src/render/channels.rs.
const uint F32 = 0;
const uint F16 = 1;
const uint U32 = 2;
const uint DISPLAY16 = 3;
// Sources, as ChannelSource: 0-2 radiance R, G, B; 3 coverage; 4 depth; 5-7 normal; 8-10
// albedo; 11-13 position; 14 object id; 15 instance id.
const uint COVERAGE = 3;
const uint OBJECT_ID = 14;
const uint INSTANCE_ID = 15;

layout(push_constant, scalar) uniform Push {
    uint64_t radiance_address; // 3 u64 per pixel
    uint64_t aovs_address;     // PixelAovs per pixel, or 0 where no channel reads them
    uint64_t planes_address;   // out: the planes, one after another
    uint pixels;
    uint channel_count;
    uint channels[MAX_CHANNELS]; // source | encoding << 8
    float sample_weight;         // 1 / samples per pixel: the radiance is the samples' mean
    uint pad;
} pc;

float value_of(uint source, uint pixel) {
    if (source < 3) {
        return float(U64s(pc.radiance_address).v[3 * pixel + source]) * (1.0 / RADIANCE_SCALE) * pc.sample_weight;
    }
    PixelAovs a = PixelAovsList(pc.aovs_address).v[pixel];
    if (source == COVERAGE) {
        return a.coverage;
    } else if (source == 4) {
        return a.depth;
    } else if (source < 8) {
        return a.normal[source - 5];
    } else if (source < 11) {
        return a.albedo[source - 8];
    }
    return a.position[source - 11];
}

// A 32-bit channel's word for `pixel`.
uint word_of(uint source, uint encoding, uint pixel) {
    if (encoding == U32) {
        PixelAovs a = PixelAovsList(pc.aovs_address).v[pixel];
        return source == OBJECT_ID ? a.object_id : source == INSTANCE_ID ? a.instance_id : 0u;
    }
    return floatBitsToUint(value_of(source, pixel));
}

// A 16-bit channel's value for `pixel`, in its low 16 bits.
uint half_of(uint source, uint encoding, uint pixel) {
    float v = value_of(source, pixel);
    if (encoding == F16) {
        return packHalf2x16(vec2(v, 0.0)) & 0xffffu;
    }
    float display = source < 3 ? srgb_encode(clamp(v, 0.0, 1.0)) : clamp(v, 0.0, 1.0);
    uint u = uint(round(display * 65535.0));
    return ((u & 0xffu) << 8) | (u >> 8);
}

void main() {
    uint pair = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    uint first = 2 * pair;
    if (first >= pc.pixels) {
        return;
    }
    bool second = first + 1 < pc.pixels;
    U32s planes = U32s(pc.planes_address);
    uint words_before = 0; // the plane's start, in words
    for (uint c = 0; c < pc.channel_count; c++) {
        uint source = pc.channels[c] & 0xffu;
        uint encoding = pc.channels[c] >> 8;
        if (encoding == F32 || encoding == U32) {
            planes.v[words_before + first] = word_of(source, encoding, first);
            if (second) {
                planes.v[words_before + first + 1] = word_of(source, encoding, first + 1);
            }
            words_before += pc.pixels;
        } else {
            uint high = second ? half_of(source, encoding, first + 1) : 0u;
            planes.v[words_before + pair] = half_of(source, encoding, first) | (high << 16);
            words_before += (pc.pixels + 1) / 2;
        }
    }
}
