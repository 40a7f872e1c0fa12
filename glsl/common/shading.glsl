// What the renderer's kernels share about surfaces: the scene's buffers (positions, normals,
// triangles, a material per triangle), its appearance (materials: diffuse, mirror, glass,
// metallic and rough, emission; the textures they read, vertex tangents and colours),
// lights, the sky, the surface point a hit describes (textured, coloured per vertex and
// normal-mapped), and the mirror and glass (Fresnel) scattering rules. Mirrors src/render/scene_gpu.rs,
// src/scene/material.rs (Material, GpuLight), src/scene/texture.rs (sampling) and
// src/render/cpu.rs.
#ifndef CANOPY_SHADING
#define CANOPY_SHADING
#include "prelude.glsl"
#include "geometry.glsl"
#include "ray.glsl"
#include "srgb.glsl"

const uint MATERIAL_DIFFUSE = 0u;
const uint MATERIAL_MIRROR = 1u;
const uint MATERIAL_GLASS = 2u;

const uint NO_TEXTURE = 0xffffffffu;
const uint ALPHA_OPAQUE = 0u;
const uint ALPHA_MASK = 1u;

// What a material reads from a texture: which one, through which set of texture coordinates
// (0 or 1) and which 2x3 transform (KHR_texture_transform).
struct TextureRef {
    vec3 transform_u; // u' = dot(transform_u, vec3(u, v, 1))
    uint texture;     // index in the scene's textures, or NO_TEXTURE
    vec3 transform_v; // v' = dot(transform_v, vec3(u, v, 1))
    uint texcoord_set;
};

struct Material {
    vec3 colour;         // diffuse albedo, mirror reflectance, or glass tint (per refraction)
    float checker_scale; // > 0: the colour alternates with its half on a world-space xz checker
    vec3 emission;       // radiance emitted towards every ray that hits it
    uint kind;           // MATERIAL_*
    float ior;           // glass: index of refraction (the outside is air, 1)
    uint alpha_mode;     // ALPHA_*
    float alpha_cutoff;  // ALPHA_MASK: cut away below this alpha
    float alpha;         // times the base colour texture's alpha
    TextureRef base_colour_texture; // multiplies colour (sRGB texels)
    TextureRef emissive_texture;    // multiplies emission (sRGB texels)
    float metallic;      // diffuse: the share of metal, times the B of metallic_roughness_texture
    float roughness;     // diffuse (metal) and mirror: 0 sharp to 1, times its G
    float normal_scale;  // scales the normal texture's tangent-space x and y
    float occlusion_strength; // the ambient term times 1 + strength (R - 1) of the occlusion texture
    TextureRef normal_texture;             // tangent-space normals (linear, 2c - 1)
    TextureRef metallic_roughness_texture; // linear
    TextureRef occlusion_texture;          // linear, R
};

const uint WRAP_REPEAT = 0u;
const uint WRAP_CLAMP_TO_EDGE = 1u;
const uint WRAP_MIRRORED_REPEAT = 2u;
const uint FILTER_NEAREST = 1u;
const uint MIP_NONE = 0u;
const uint MIP_NEAREST = 1u;

// A texture: its first texel in the scene's texel buffer, size, and sampling bits (wrap u in
// bits 0-1, wrap v in bits 2-3, the magnification filter in bit 4 and the minification
// filter in bit 5 (FILTER_NEAREST, else bilinear), the mip filter in bits 6-7 (MIP_NONE,
// MIP_NEAREST, else linear), the level count in bits 8-11). Its mip levels follow level 0,
// each side halved (at least 1) per level (src/scene/texture.rs).
struct Texture {
    uint first_texel;
    uint width;
    uint height;
    uint sampling;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Textures { Texture v[]; };
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Vec4s { vec4 v[]; };

// An equirectangular environment map (src/scene/environment.rs): RGB f32 texels, rows from
// straight up; texels 0: none, the procedural sky.
struct Environment {
    uint64_t texels;
    uint width;
    uint height;
    float intensity;
    float rotation_cos; // of its turn about +y
    float rotation_sin;
    uint pad;
};

// The scene's appearance buffer: where its texture coordinates (vec4 per vertex: set 0 in xy,
// set 1 in zw), texture table and texels (RGBA8 per u32), triangles and their materials, vertex
// tangents and colours lie, the triangles' instances, the lights, the environment, then the
// materials.
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Appearance {
    uint64_t texcoords;
    uint64_t textures;
    uint64_t texels;
    uint64_t triangles;          // uvec3 per triangle
    uint64_t triangle_materials; // u32 per triangle
    uint64_t tangents;           // vec4 per vertex (xyz, handedness in w), or 0: none
    uint64_t colours;            // vec4 per vertex (linear RGBA), or 0: white
    uint64_t triangle_instances; // u32 per triangle, or 0: every triangle instance 0
    uint64_t lights;             // Light per light
    uint material_count;
    uint texture_count;
    uint light_count;
    uint pad;
    Environment environment;
    Material materials[];
};

const uint LIGHT_DIRECTIONAL = 0u;
const uint LIGHT_POINT = 1u;

struct Light {
    vec3 vector; // direction the light travels (directional) or position (point)
    uint kind;
    vec3 intensity;
    float pad;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Lights { Light v[]; };

struct SceneRefs {
    uint64_t positions;          // vec3 per vertex
    uint64_t normals;            // vec3 per vertex
    uint64_t triangles;          // uvec3 per triangle
    uint64_t triangle_materials; // u32 per triangle
    uint64_t appearance;         // Appearance: the materials and textures
};

Material scene_material(SceneRefs scene, uint id) {
    return Appearance(scene.appearance).materials[id];
}

// The instance `triangle` came from (the instance_id channel).
uint scene_instance(SceneRefs scene, uint triangle) {
    uint64_t instances = Appearance(scene.appearance).triangle_instances;
    return instances == 0ul ? 0u : U32s(instances).v[triangle];
}

// A texture coordinate brought into [0, 1] (repeat, clamp) or [0, 2] (mirrored repeat, one
// period) before it is scaled to texels, so that no texel index overflows whatever it is.
float wrapped_coordinate(float c, uint wrap) {
    if (wrap == WRAP_CLAMP_TO_EDGE) {
        return clamp(c, 0.0, 1.0);
    }
    if (wrap == WRAP_MIRRORED_REPEAT) {
        return c - 2.0 * floor(c * 0.5);
    }
    return c - floor(c);
}

// Texel index i (at most one texel past either end of its wrapped range) brought into
// [0, size).
uint wrap_texel(int i, int size, uint wrap) {
    if (wrap == WRAP_CLAMP_TO_EDGE) {
        return uint(clamp(i, 0, size - 1));
    }
    if (wrap == WRAP_MIRRORED_REPEAT) {
        int j = ((i % (2 * size)) + 2 * size) % (2 * size);
        return uint(j < size ? j : 2 * size - 1 - j);
    }
    return uint(((i % size) + size) % size);
}

// Texel (x, y) of a level of `width` x `height` texels starting at texel `first` of texture
// t, wrapped, its colour decoded from sRGB when `srgb` (alpha is linear).
vec4 texel_at(Appearance a, Texture t, uint first, uint width, uint height, int x, int y, bool srgb) {
    uint wx = wrap_texel(x, int(width), t.sampling & 3u);
    uint wy = wrap_texel(y, int(height), (t.sampling >> 2) & 3u);
    vec4 c = unpackUnorm4x8(U32s(a.texels).v[first + wy * width + wx]);
    return srgb ? vec4(srgb_decode(c.r), srgb_decode(c.g), srgb_decode(c.b), c.a) : c;
}

// Mip level `level` of texture t read at transformed coordinates `uv`: wrapped, then the
// nearest texel (`nearest`) or the bilinear blend of the four nearest.
vec4 sample_level(Appearance a, Texture t, uint level, vec2 uv, bool nearest, bool srgb) {
    uint first = t.first_texel;
    uint width = t.width;
    uint height = t.height;
    for (uint k = 0; k < level; ++k) {
        first += width * height;
        width = max(width >> 1, 1u);
        height = max(height >> 1, 1u);
    }
    float u = wrapped_coordinate(uv.x, t.sampling & 3u) * float(width);
    float v = wrapped_coordinate(uv.y, (t.sampling >> 2) & 3u) * float(height);
    if (nearest) {
        return texel_at(a, t, first, width, height, int(floor(u)), int(floor(v)), srgb);
    }
    u -= 0.5;
    v -= 0.5;
    float x = floor(u);
    float y = floor(v);
    float fu = u - x;
    float fv = v - y;
    int ix = int(x);
    int iy = int(y);
    vec4 top = mix(texel_at(a, t, first, width, height, ix, iy, srgb),
                   texel_at(a, t, first, width, height, ix + 1, iy, srgb), fu);
    vec4 bottom = mix(texel_at(a, t, first, width, height, ix, iy + 1, srgb),
                      texel_at(a, t, first, width, height, ix + 1, iy + 1, srgb), fu);
    return mix(top, bottom, fv);
}

// The linear RGBA a material's texture gives at a surface point whose interpolated texture
// coordinates are `texcoords` and whose ray cone's footprint is `footprint`
// (texture_footprint; -INF in both: none): the coordinates transformed; the level of detail
// footprint + 0.5 log2(|det| w h) for the transform's determinant and the texture's size; at
// or below 0 (or NaN) level 0 through the magnification filter, above it the minification
// filter at the nearest level or between the two nearest, as the mip filter says; colour
// decoded from sRGB when `srgb` (src/scene/texture.rs Texture::sample).
vec4 sample_texture(Appearance a, TextureRef r, vec4 texcoords, vec2 footprint, bool srgb) {
    bool second_set = r.texcoord_set == 1u;
    vec2 uv = second_set ? texcoords.zw : texcoords.xy;
    // Written out as the CPU sums it (no dot: a device may fuse or reorder one, and the grid's
    // caster, which reads cut-outs, holds none).
    uv = vec2(r.transform_u.x * uv.x + r.transform_u.y * uv.y + r.transform_u.z,
              r.transform_v.x * uv.x + r.transform_v.y * uv.y + r.transform_v.z);
    Texture t = Textures(a.textures).v[r.texture];
    float det = abs(r.transform_u.x * r.transform_v.y - r.transform_u.y * r.transform_v.x);
    float lod = (second_set ? footprint.y : footprint.x)
        + 0.5 * log2(det * (float(t.width) * float(t.height)));
    if (!(lod > 0.0)) {
        return sample_level(a, t, 0u, uv, ((t.sampling >> 4) & 1u) == FILTER_NEAREST, srgb);
    }
    bool nearest = ((t.sampling >> 5) & 1u) == FILTER_NEAREST;
    uint mip = (t.sampling >> 6) & 3u;
    uint levels = (t.sampling >> 8) & 15u;
    float top = float(levels - 1u);
    if (levels <= 1u || mip == MIP_NONE) {
        return sample_level(a, t, 0u, uv, nearest, srgb);
    }
    if (mip == MIP_NEAREST) {
        return sample_level(a, t, uint(min(floor(lod + 0.5), top)), uv, nearest, srgb);
    }
    lod = min(lod, top);
    float level = floor(lod);
    vec4 fine = sample_level(a, t, uint(level), uv, nearest, srgb);
    vec4 coarse = sample_level(a, t, uint(min(level + 1.0, top)), uv, nearest, srgb);
    return mix(fine, coarse, lod - level);
}

// Where a ray cone `width` wide meets the triangle (a, b, c) with texture coordinates (ta,
// tb, tc) (set 0 in xy, set 1 in zw), arriving along `direction` (Akenine-Moller et al.,
// "Texture Level of Detail Strategies for Real-Time Ray Tracing", 2019): per set, the base-2
// logarithm of its width in units of the coordinates, log2(width / |cos|) +
// 0.5 log2(texture-coordinate area / world area). -INF in both where there is no cone
// (width 0). src/scene/texture.rs Footprint::of_cone.
vec2 texture_footprint(float width, vec3 direction, vec3 a, vec3 b, vec3 c, vec4 ta, vec4 tb,
                       vec4 tc) {
    if (!(width > 0.0)) {
        return vec2(-INF);
    }
    vec3 edges = cross(b - a, c - a);
    float world_area = length(edges);
    float cosine = dot(edges / world_area, normalize(direction));
    vec4 e1 = tb - ta;
    vec4 e2 = tc - ta;
    vec2 texcoord_area = abs(vec2(e1.x * e2.y - e1.y * e2.x, e1.z * e2.w - e1.w * e2.z));
    float across = log2(width / abs(cosine));
    return vec2(across + 0.5 * log2(texcoord_area.x / world_area),
                across + 0.5 * log2(texcoord_area.y / world_area));
}

struct SurfacePoint {
    vec3 position;
    vec3 geometric_normal; // unit, facing the ray's origin
    vec3 shading_normal;   // interpolated vertex normal bent by the normal texture, on the
                           // geometric normal's side (the geometric normal where the vertex
                           // normals are zero: flat)
    bool front;            // the ray arrived on the side the vertex normals point to (outside)
    vec3 colour;           // the material's colour, textured, times the vertex colour and
                           // checkered where it asks
    vec3 emission;         // the radiance it emits, textured where it asks
    uint kind;             // MATERIAL_*
    float ior;
    float metallic;        // textured where it asks
    float roughness;       // textured where it asks
    float occlusion;       // what reaches it of the ambient term: 1, or from the occlusion
                           // texture
};

// Unit normal `n` bent by a normal texture's linear texel `texel` (tangent-space x, y scaled
// by `scale`) in the frame of the interpolated vertex tangent (xyz made orthogonal to n,
// bitangent w x n x tangent); n where the tangent gives no frame.
vec3 normal_mapped(vec3 n, vec4 tangent, vec3 texel, float scale) {
    vec3 t = tangent.xyz - n * dot(n, tangent.xyz);
    float t_length = length(t);
    if (!(t_length > 0.0)) {
        return n;
    }
    t /= t_length;
    vec3 b = (tangent.w < 0.0 ? -1.0 : 1.0) * cross(n, t);
    vec3 m = texel * 2.0 - 1.0;
    vec3 bent = (m.x * scale) * t + (m.y * scale) * b + m.z * n;
    float bent_length = length(bent);
    return bent_length > 0.0 ? bent / bent_length : n;
}

// The surface `hit` describes, for `ray`. `cone_spread`: for camera rays, how far apart the
// rays of neighbouring pixels are per unit of t (their directions' spacing), so that the
// ray's cone is hit.t x cone_spread wide where it hits and textures are read at the mip level
// of that footprint; 0 for other rays, which read level 0.
SurfacePoint surface_at(SceneRefs scene, Ray ray, Hit hit, float cone_spread) {
    uvec3 t = UVec3s(scene.triangles).v[hit.triangle];
    Vec3s positions = Vec3s(scene.positions);
    Vec3s normals = Vec3s(scene.normals);
    vec3 a = positions.v[t.x];
    vec3 b = positions.v[t.y];
    vec3 c = positions.v[t.z];
    float w = 1.0 - hit.u - hit.v;
    SurfacePoint s;
    s.position = w * a + hit.u * b + hit.v * c;
    vec3 g = normalize(cross(b - a, c - a));
    vec3 n = w * normals.v[t.x] + hit.u * normals.v[t.y] + hit.v * normals.v[t.z];
    float len = length(n);
    n = len > 0.0 ? n / len : g;
    // Outside is where the vertex normals point: the winding normal turned to agree with them.
    vec3 outward = dot(g, n) < 0.0 ? -g : g;
    s.front = dot(outward, ray.direction) < 0.0;
    Material m = scene_material(scene, U32s(scene.triangle_materials).v[hit.triangle]);
    Appearance ap = Appearance(scene.appearance);
    s.colour = m.colour;
    s.emission = m.emission;
    s.kind = m.kind;
    s.ior = m.ior;
    s.metallic = m.metallic;
    s.roughness = m.roughness;
    s.occlusion = 1.0;
    if (ap.colours != 0ul) {
        Vec4s colours = Vec4s(ap.colours);
        s.colour *= (w * colours.v[t.x] + hit.u * colours.v[t.y] + hit.v * colours.v[t.z]).rgb;
    }
    if (m.base_colour_texture.texture != NO_TEXTURE || m.emissive_texture.texture != NO_TEXTURE
        || m.normal_texture.texture != NO_TEXTURE
        || m.metallic_roughness_texture.texture != NO_TEXTURE
        || m.occlusion_texture.texture != NO_TEXTURE) {
        Vec4s texcoords = Vec4s(ap.texcoords);
        vec4 ta = texcoords.v[t.x];
        vec4 tb = texcoords.v[t.y];
        vec4 tc = texcoords.v[t.z];
        vec4 uv = w * ta + hit.u * tb + hit.v * tc;
        vec2 footprint = texture_footprint(hit.t * cone_spread, ray.direction, a, b, c, ta, tb, tc);
        if (m.base_colour_texture.texture != NO_TEXTURE) {
            s.colour *= sample_texture(ap, m.base_colour_texture, uv, footprint, true).rgb;
        }
        if (m.emissive_texture.texture != NO_TEXTURE) {
            s.emission *= sample_texture(ap, m.emissive_texture, uv, footprint, true).rgb;
        }
        if (m.metallic_roughness_texture.texture != NO_TEXTURE) {
            vec4 texel = sample_texture(ap, m.metallic_roughness_texture, uv, footprint, false);
            s.metallic *= texel.b;
            s.roughness *= texel.g;
        }
        if (m.occlusion_texture.texture != NO_TEXTURE) {
            float r = sample_texture(ap, m.occlusion_texture, uv, footprint, false).r;
            s.occlusion = 1.0 + m.occlusion_strength * (r - 1.0);
        }
        if (m.normal_texture.texture != NO_TEXTURE) {
            Vec4s tangents = Vec4s(ap.tangents);
            vec4 tangent = w * tangents.v[t.x] + hit.u * tangents.v[t.y] + hit.v * tangents.v[t.z];
            vec3 texel = sample_texture(ap, m.normal_texture, uv, footprint, false).rgb;
            n = normal_mapped(n, tangent, texel, m.normal_scale);
        }
    }
    if (dot(g, ray.direction) > 0.0) {
        g = -g;
    }
    s.geometric_normal = g;
    if (dot(n, g) < 0.0) {
        n = -n;
    }
    s.shading_normal = n;
    if (m.checker_scale > 0.0) {
        ivec2 cell = ivec2(floor(s.position.xz / m.checker_scale));
        if (((cell.x + cell.y) & 1) != 0) {
            s.colour *= 0.5;
        }
    }
    return s;
}

// Direction towards the light and the distance scale of its shadow ray (1: the ray's
// direction reaches the light; INF for directional lights), and the irradiance arriving.
void light_towards(Light light, vec3 p, out vec3 to_light, out float tmax, out vec3 irradiance) {
    if (light.kind == LIGHT_POINT) {
        to_light = light.vector - p;
        tmax = 1.0;
        irradiance = light.intensity / max(dot(to_light, to_light), 1e-12);
    } else {
        to_light = -light.vector;
        tmax = INF;
        irradiance = light.intensity;
    }
}

// Units in the last place that a new ray's origin steps, per coordinate, along the normal.
const float ORIGIN_ULPS = 32.0;
// Coordinates smaller than this are not stepped (their rounding error is far below the
// scene-relative offset, and stepping a bit pattern across zero would be meaningless).
const float ORIGIN_ULP_FLOOR = 1.0 / 32.0;

// The origin of a ray leaving the surface at `p` on the side of unit normal `n`, so that it
// cannot hit the surface it leaves: `offset` world units along n (scene-relative, what counts
// near the origin), then every coordinate stepped by up to ORIGIN_ULPS units in its last
// place in n's direction (Waechter & Binder, "A Fast and Robust Method for Avoiding
// Self-Intersection", Ray Tracing Gems, 2019), what counts far from the origin, where a hit
// point's rounding error grows with its coordinates: at x = 1e4 one ulp is 1e-3, at 1e6 0.06.
vec3 offset_origin(vec3 p, vec3 n, float offset) {
    vec3 q = p + n * offset;
    ivec3 steps = ivec3(ORIGIN_ULPS * n);
    ivec3 towards_n = mix(steps, -steps, lessThan(q, vec3(0.0)));
    vec3 stepped = intBitsToFloat(floatBitsToInt(q) + towards_n);
    return mix(stepped, q, lessThan(abs(q), vec3(ORIGIN_ULP_FLOOR)));
}

// Radiance of the procedural sky seen along `direction`: a gradient from a pale horizon to
// blue overhead.
vec3 sky(vec3 direction) {
    float up = clamp(normalize(direction).y * 0.5 + 0.5, 0.0, 1.0);
    return mix(vec3(0.85, 0.85, 0.8), vec3(0.35, 0.55, 0.9), up);
}

// Radiance arriving along -`direction` from outside the scene: the environment map where the
// scene has one (turned, then read at u = 0.5 + atan2(x, -z) / 2pi, v = acos(y) / pi,
// bilinear, repeating in u and clamped in v), else the procedural sky.
vec3 sky_radiance(SceneRefs scene, vec3 direction) {
    Environment e = Appearance(scene.appearance).environment;
    if (e.texels == 0ul) {
        return sky(direction);
    }
    vec3 d = normalize(direction);
    float x = d.x * e.rotation_cos - d.z * e.rotation_sin;
    float z = d.x * e.rotation_sin + d.z * e.rotation_cos;
    float u = 0.5 + atan(x, -z) * (0.5 / 3.14159265);
    float v = acos(clamp(d.y, -1.0, 1.0)) * (1.0 / 3.14159265);
    float fx = u * float(e.width) - 0.5;
    float fy = v * float(e.height) - 0.5;
    float x0 = floor(fx);
    float y0 = floor(fy);
    int ix = int(x0);
    int iy = int(y0);
    int w = int(e.width);
    int h = int(e.height);
    Vec3s texels = Vec3s(e.texels);
    uint left = wrap_texel(ix, w, WRAP_REPEAT);
    uint right = wrap_texel(ix + 1, w, WRAP_REPEAT);
    uint top = wrap_texel(iy, h, WRAP_CLAMP_TO_EDGE);
    uint bottom = wrap_texel(iy + 1, h, WRAP_CLAMP_TO_EDGE);
    vec3 upper = mix(texels.v[top * e.width + left], texels.v[top * e.width + right], fx - x0);
    vec3 lower = mix(texels.v[bottom * e.width + left], texels.v[bottom * e.width + right], fx - x0);
    return mix(upper, lower, fy - y0) * e.intensity;
}

// The mirror direction of unit `d` about unit `n` (n faces against d).
vec3 reflect_about(vec3 d, vec3 n) {
    return d - 2.0 * dot(d, n) * n;
}

// Refraction of unit `d` through a surface with unit normal `n` facing against it, from a
// medium of index n1 into one of index n2, eta = n1 / n2. Returns the exact (unpolarised)
// dielectric Fresnel reflectance F = (rs^2 + rp^2) / 2 and, unless F = 1 (total internal
// reflection), the refracted unit direction in `refracted`. Example: eta = 1 / 1.5 at normal
// incidence gives F = ((1 - 1.5) / (1 + 1.5))^2 = 0.04.
float fresnel_refract(vec3 d, vec3 n, float eta, out vec3 refracted) {
    float cos_i = min(-dot(d, n), 1.0);
    float sin2_t = eta * eta * max(1.0 - cos_i * cos_i, 0.0);
    refracted = vec3(0.0);
    if (sin2_t >= 1.0) {
        return 1.0;
    }
    float cos_t = sqrt(1.0 - sin2_t);
    float rs = (eta * cos_i - cos_t) / (eta * cos_i + cos_t);
    float rp = (cos_i - eta * cos_t) / (cos_i + eta * cos_t);
    refracted = normalize(eta * d + (eta * cos_i - cos_t) * n);
    return 0.5 * (rs * rs + rp * rp);
}

#endif
