// One pixel's outputs for compositing, as src/render/mod.rs PixelAovs: written by aovs.comp,
// read by channels.comp.
struct PixelAovs {
    vec3 normal;
    float depth;
    vec3 albedo;
    uint object_id;
    vec3 position;
    float coverage;
    uint instance_id;
};
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer PixelAovsList { PixelAovs v[]; };
