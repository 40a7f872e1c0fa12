// The sRGB transfer function (IEC 61966-2-1): linear [0, 1] to encoded [0, 1], as
// src/render/channels.rs srgb_encode.
#ifndef CANOPY_SRGB
#define CANOPY_SRGB
float srgb_encode(float linear) {
    return linear <= 0.0031308 ? 12.92 * linear : 1.055 * pow(linear, 1.0 / 2.4) - 0.055;
}

// Its inverse, encoded [0, 1] to linear, as src/scene/texture.rs srgb_decode.
float srgb_decode(float encoded) {
    return encoded <= 0.04045 ? encoded / 12.92 : pow((encoded + 0.055) / 1.055, 2.4);
}

#endif
