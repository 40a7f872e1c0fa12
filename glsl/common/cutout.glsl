// Alpha-mask cut-outs, as every structure's traversal passes through them: a candidate hit on
// a triangle whose material is ALPHA_MASK, where the material's alpha times its base colour
// texture's (at the hit's interpolated texture coordinates, level 0) and its vertex colour's is below
// its cutoff, is not a hit,
// and the ray goes on. The same rule for closest-hit and any-hit (shadow) queries. Without
// CUTOUTS (the includer's specialization constant 4, set where the scene has cut-outs) the
// test is compiled away, so that traversals of scenes without them pay nothing.
// src/render/cpu.rs cut_out is the reference.
#ifndef CANOPY_CUTOUT
#define CANOPY_CUTOUT
#include "shading.glsl"

layout(constant_id = 4) const bool CUTOUTS = false;

bool cut_out(uint64_t appearance, uint triangle, vec2 uv) {
    if (appearance == 0ul) {
        return false;
    }
    Appearance a = Appearance(appearance);
    Material m = a.materials[U32s(a.triangle_materials).v[triangle]];
    if (m.alpha_mode != ALPHA_MASK) {
        return false;
    }
    float alpha = m.alpha;
    uvec3 t = UVec3s(a.triangles).v[triangle];
    float w = 1.0 - uv.x - uv.y;
    if (m.base_colour_texture.texture != NO_TEXTURE) {
        Vec4s texcoords = Vec4s(a.texcoords);
        vec4 coords = w * texcoords.v[t.x] + uv.x * texcoords.v[t.y] + uv.y * texcoords.v[t.z];
        alpha *= sample_texture(a, m.base_colour_texture, coords, vec2(-INF), true).a;
    }
    if (a.colours != 0ul) {
        Vec4s colours = Vec4s(a.colours);
        alpha *= w * colours.v[t.x].a + uv.x * colours.v[t.y].a + uv.y * colours.v[t.z].a;
    }
    return alpha < m.alpha_cutoff;
}

// intersect_triangle (common/ray.glsl) of triangle `id`, where a hit on a cut-out part of it
// is no hit: t is then left as it was.
bool intersect_solid(RayQuery q, vec3 a, vec3 b, vec3 c, uint id, uint64_t appearance,
                     inout float t, out vec2 uv) {
    float candidate = t;
    if (!intersect_triangle(q, a, b, c, candidate, uv) || (CUTOUTS && cut_out(appearance, id, uv))) {
        return false;
    }
    t = candidate;
    return true;
}

#endif
