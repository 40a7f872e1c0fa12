#version 460
// Shades one bounce of the wavefront ray tracer (Zhou et al. 2008, section 4): for every ray
// of the bounce's path list and its closest hit,
// - a miss adds the sky along the ray (the environment map where there is one:
//   common/shading.glsl sky_radiance), times the path's throughput, to the ray's pixel;
// - a hit on an emissive surface adds its emission times the throughput;
// - a diffuse hit, of albedo colour x (1 - metallic), adds its ambient term (times its
//   occlusion texture's, where it has one), and appends one
//   shadow ray per light the surface faces to the shadow list, carrying the radiance it adds
//   if it reaches the light (throughput x albedo x irradiance x cosine with the shading
//   normal); with sky light, the ambient term is replaced by one more shadow ray in a
//   cosine-weighted direction about the shading normal (hashed from the pixel, sample and
//   bounce: common/sampling.glsl), carrying throughput x albedo x the sky's radiance from
//   there (the cosine and the 1/pi of the Lambert BRDF cancel with the sampling's density);
//   where it is metallic it also reflects as a mirror would, with the throughput times
//   colour x metallic;
// - a mirror hit appends the reflected ray with the throughput times the reflectance;
// - reflected rays of diffuse (metal) and mirror hits leave in the mirror direction about
//   the shading normal, or, with more than one sample per pixel (GLOSSY), in that direction
//   moved towards a cosine-weighted one (hashed as the sky's) by roughness squared;
// - a glass hit appends the reflected ray weighted by the exact dielectric Fresnel reflectance
//   F and the refracted ray weighted by (1 - F) x tint (common/shading.glsl); under total
//   internal reflection only the reflected ray, with weight 1. Glass is entered from the side
//   its vertex normals point to (index 1 -> ior) and left from the other (ior -> 1).
// Camera rays' hits (bounce 0) read textures at the mip level of their ray cone (cone_spread,
// common/shading.glsl surface_at); later bounces read level 0.
// The appended rays form the next bounce's path list (list compaction by atomic append:
// common/paths.glsl append_slots, one atomic per subgroup). At the last bounce (no SPAWN flag)
// no rays are appended: a specular hit ends its path by adding the sky seen along each
// scattered direction, times that ray's weight, without tracing it. Reflected and shadow rays
// start off the surface on the ray's side, refracted rays on the far side (offset_origin:
// robust at any distance from the origin); rays of zero weight are not appended. src/render/cpu.rs is the reference.
#include "../common/prelude.glsl"
#include "../common/shading.glsl"
#include "../common/paths.glsl"
#include "../common/sampling.glsl"

layout(push_constant, scalar) uniform Push {
    SceneRefs scene;
    uint64_t list_address;        // this bounce's path list (rays, payloads, hits)
    uint64_t count_address;       // its length on the device (u32), or 0: host_count
    uint64_t next_list_address;   // out: the next bounce's path list, appended to
    uint64_t shadow_list_address; // out: this bounce's shadow list, appended to
    uint64_t counters_address;    // this bounce's BounceCounters (the append counters)
    uint64_t radiance_address;    // 3 u64 per pixel
    uint capacity;                // of this bounce's path list
    uint next_capacity;           // of the next path list
    uint shadow_capacity;         // of the shadow list
    uint host_count;
    float cone_spread;            // bounce 0: the camera rays' spacing (surface_at); else 0
    float ambient;                // ambient light as a fraction of the albedo
    float surface_offset;         // scene-relative offset of new ray origins (offset_origin)
    uint pass_flags;              // SPAWN | SKY_LIGHT | bounce << 8 | sample << 16
} pc;

const uint SPAWN = 1u;     // append scattered rays (else the last bounce: end at the sky)
const uint SKY_LIGHT = 2u; // diffuse hits sample the sky's light instead of the ambient term
const uint GLOSSY = 4u;    // rough reflections scatter (more than one sample per pixel)

// A hash of this path (pixel, sample, bounce) for the sampling of one decision, `salt`.
uint path_hash(uint pixel, uint salt) {
    return sample_hash(sample_hash((pixel * 0x9e3779b9u) ^ (pc.pass_flags >> 8)) ^ salt);
}

// The direction a reflection of roughness `roughness` leaves in about unit shading normal
// `n`: the mirror direction `mirror`, with GLOSSY moved towards a cosine-weighted direction
// about n by roughness squared.
vec3 reflected_direction(vec3 mirror, vec3 n, float roughness, uint pixel) {
    if ((pc.pass_flags & GLOSSY) == 0u || roughness <= 0.0) {
        return mirror;
    }
    uint hash = path_hash(pixel, 0x2f6b1d93u);
    vec3 diffuse = cosine_direction(n, unit_float(hash), unit_float(sample_hash(hash)));
    float a = roughness * roughness;
    vec3 r = mirror * (1.0 - a) + diffuse * a;
    float r_length = length(r);
    return r_length > 0.0 ? r / r_length : mirror;
}

// The shadow ray towards light `l` from `s` and the radiance it carries; false when the
// surface faces away from the light or the contribution is zero (no shadow ray).
bool shadow_ray(SurfacePoint s, vec3 weight, uint l, out Ray ray, out vec3 contribution) {
    vec3 to_light;
    float tmax;
    vec3 irradiance;
    light_towards(Lights(Appearance(pc.scene.appearance).lights).v[l], s.position, to_light, tmax, irradiance);
    float cosine = max(dot(s.shading_normal, normalize(to_light)), 0.0);
    contribution = weight * s.colour * irradiance * cosine;
    ray = Ray(offset_origin(s.position, s.geometric_normal, pc.surface_offset), 0.0, to_light, tmax);
    return dot(to_light, s.geometric_normal) > 0.0 && max(contribution.x, max(contribution.y, contribution.z)) > 0.0;
}

// The sky-light ray from `s` for the path of `pixel` and the radiance it carries; false when
// its direction falls below the surface or the contribution is zero (no ray).
bool sky_ray(SurfacePoint s, vec3 weight, uint pixel, out Ray ray, out vec3 contribution) {
    uint hash = path_hash(pixel, 0x68e31da4u);
    vec3 direction = cosine_direction(s.shading_normal, unit_float(hash), unit_float(sample_hash(hash)));
    contribution = weight * s.colour * sky_radiance(pc.scene, direction);
    ray = Ray(offset_origin(s.position, s.geometric_normal, pc.surface_offset), 0.0, direction, INF);
    return dot(direction, s.geometric_normal) > 0.0 && max(contribution.x, max(contribution.y, contribution.z)) > 0.0;
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    bool in_list = i < element_count(pc.count_address, pc.host_count);
    uint light_count = Appearance(pc.scene.appearance).light_count;
    // What each path does is decided first; the appends run in uniform control flow after.
    uint pixel = 0;
    vec3 weight = vec3(0.0);
    SurfacePoint s;
    uint shadow_count = 0;
    uint scattered_count = 0;
    Ray scattered[2];
    vec3 scattered_weight[2];
    if (in_list) {
        Ray ray = list_rays(pc.list_address, pc.capacity).v[i];
        Hit hit = list_hits(pc.list_address, pc.capacity).v[i];
        RayPayload payload = list_payloads(pc.list_address, pc.capacity).v[i];
        pixel = payload.pixel;
        weight = payload.weight;
        if (hit.triangle == MISS) {
            add_radiance(pc.radiance_address, pixel, weight * sky_radiance(pc.scene, ray.direction));
        } else {
            s = surface_at(pc.scene, ray, hit, pc.cone_spread);
            if (max(s.emission.x, max(s.emission.y, s.emission.z)) > 0.0) {
                add_radiance(pc.radiance_address, pixel, weight * s.emission);
            }
            vec3 base = s.colour;
            if (s.kind == MATERIAL_DIFFUSE) {
                s.colour *= 1.0 - s.metallic;
                Ray unused_ray;
                vec3 unused_contribution;
                if ((pc.pass_flags & SKY_LIGHT) == 0u) {
                    add_radiance(pc.radiance_address, pixel,
                                 weight * s.colour * (pc.ambient * s.occlusion));
                } else if (sky_ray(s, weight, pixel, unused_ray, unused_contribution)) {
                    shadow_count += 1;
                }
                for (uint l = 0; l < light_count; ++l) {
                    shadow_count += shadow_ray(s, weight, l, unused_ray, unused_contribution) ? 1 : 0;
                }
            }
            {
                vec3 d = normalize(ray.direction);
                vec3 n = s.shading_normal;
                vec3 above = offset_origin(s.position, s.geometric_normal, pc.surface_offset);
                vec3 below = offset_origin(s.position, -s.geometric_normal, pc.surface_offset);
                scattered[0] = Ray(above, 0.0, reflect_about(d, n), INF);
                scattered[1] = Ray(below, 0.0, vec3(0.0), INF);
                uint count = 1;
                if (s.kind == MATERIAL_GLASS) {
                    float eta = s.front ? 1.0 / s.ior : s.ior;
                    float reflectance = fresnel_refract(d, n, eta, scattered[1].direction);
                    scattered_weight[0] = weight * reflectance;
                    scattered_weight[1] = weight * (1.0 - reflectance) * s.colour;
                    count = reflectance < 1.0 ? 2 : 1;
                } else {
                    scattered[0].direction = reflected_direction(scattered[0].direction, n, s.roughness, pixel);
                    scattered_weight[0] = weight * base * (s.kind == MATERIAL_DIFFUSE ? s.metallic : 1.0);
                }
                for (uint k = 0; k < count; ++k) {
                    vec3 w = scattered_weight[k];
                    if (max(w.x, max(w.y, w.z)) <= 0.0) {
                        continue;
                    }
                    if ((pc.pass_flags & SPAWN) != 0u) {
                        scattered_weight[scattered_count] = w;
                        scattered[scattered_count] = scattered[k];
                        scattered_count += 1;
                    } else {
                        add_radiance(pc.radiance_address, pixel, w * sky_radiance(pc.scene, scattered[k].direction));
                    }
                }
            }
        }
    }

    uint shadow_slot = append_slots(pc.counters_address + 4ul, shadow_count);
    uint scattered_slot = append_slots(pc.counters_address, scattered_count);

    if (shadow_count != 0u) {
        Rays rays = list_rays(pc.shadow_list_address, pc.shadow_capacity);
        RayPayloads payloads = list_payloads(pc.shadow_list_address, pc.shadow_capacity);
        Ray ray;
        vec3 contribution;
        if ((pc.pass_flags & SKY_LIGHT) != 0u && sky_ray(s, weight, pixel, ray, contribution)) {
            if (shadow_slot < pc.shadow_capacity) {
                rays.v[shadow_slot] = ray;
                payloads.v[shadow_slot] = RayPayload(contribution, pixel);
            }
            shadow_slot += 1;
        }
        for (uint l = 0; l < light_count; ++l) {
            if (shadow_ray(s, weight, l, ray, contribution)) {
                if (shadow_slot < pc.shadow_capacity) {
                    rays.v[shadow_slot] = ray;
                    payloads.v[shadow_slot] = RayPayload(contribution, pixel);
                }
                shadow_slot += 1;
            }
        }
    }
    for (uint k = 0; k < scattered_count; ++k) {
        uint slot = scattered_slot + k;
        if (slot < pc.next_capacity) {
            list_rays(pc.next_list_address, pc.next_capacity).v[slot] = scattered[k];
            list_payloads(pc.next_list_address, pc.next_capacity).v[slot] =
                RayPayload(scattered_weight[k], pixel);
        }
    }
}
