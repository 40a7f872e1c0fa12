#version 460
// Caustic photons of a frame (seed 000 §5.3; Jensen 2001), in steps (STEP):
//   TARGETS  per triangle: the bounds of every mirror, glass and metallic material (the targets photons
//            are aimed at: the projection map, from the objects' bounds) and of the scene;
//   SPHERES  per triangle: each target's bounding sphere about its box's centre, as far as
//            its farthest vertex (a sphere's own radius, not its box's half diagonal, which
//            would aim two thirds of the photons past it);
//   PLAN     one invocation: each (light, target) pair's power towards the target's bounding
//            sphere (a point light's intensity times the sphere's solid angle; a directional
//            light's irradiance times the sphere's cross-section), and the frame's photons
//            split between the pairs in proportion, each photon carrying its pair's power over
//            its pair's photon count, so the photons carry exactly the power aimed at targets;
//   EMIT     per photon: its ray, uniform in the cone about the target (point light) or
//            uniform over the disc across it (directional), the path list's first entries;
//   SCATTER  per photon of a bounce's list and its closest hit: at a diffuse surface after
//            at least one specular event the photon is stored (position, power) and ends,
//            unless the surface is metallic and a draw below its metallic share reflects it
//            as a mirror (power times the colour);
//            a mirror reflects it (power times reflectance); glass reflects it with the
//            Fresnel reflectance's probability (power unchanged) and refracts it otherwise
//            (power times the tint), total internal reflection always reflecting; a miss or
//            a diffuse surface hit straight from the light ends it. Scattered photons go to
//            the next bounce's list (one atomic per subgroup), none after the last bounce.
// Random numbers are hashes of (frame seed, photon, draw) (common/random.glsl), so a frame is
// reproducible and src/photons/cpu.rs follows the same photons.
#include "../common/prelude.glsl"
#include "../common/shading.glsl"
#include "../common/paths.glsl"
#include "../common/random.glsl"
#include "photons/photons.glsl"

layout(constant_id = 2) const uint STEP = 0;
const uint TARGETS = 0;
const uint SPHERES = 1;
const uint PLAN = 2;
const uint EMIT = 3;
const uint SCATTER = 4;

layout(push_constant, scalar) uniform Push {
    SceneRefs scene;
    uint64_t lights_address;     // Light per light
    uint64_t state_address;      // PhotonCounters, emitters, targets
    uint64_t counters_address;   // this bounce's BounceCounters (SCATTER's appends)
    uint64_t list_address;       // this bounce's photon list (rays, payloads: power and photon)
    uint64_t next_list_address;  // the next bounce's photon list
    uint64_t stored_address;     // out: vec3 per stored photon
    uint64_t powers_address;     // out: vec3 power per stored photon
    uint triangle_count;
    uint light_count;
    uint material_count;
    uint photon_count;           // photons per frame: every list's capacity
    uint bounce;
    uint spawn;                  // 1: scattered photons go on; 0: the last bounce
    uint seed;
    float surface_offset;
} pc;

PhotonCountersRef counters() {
    return PhotonCountersRef(pc.state_address);
}

PhotonEmitters emitters() {
    return PhotonEmitters(pc.state_address + EMITTERS_OFFSET);
}

PhotonTargets targets() {
    return PhotonTargets(pc.state_address + TARGETS_OFFSET);
}

vec3 target_lo(uint t) {
    uvec3 k = ~targets().v[t].lo;
    return vec3(uintBitsToFloat(ordered_to_float(k.x)), uintBitsToFloat(ordered_to_float(k.y)),
                uintBitsToFloat(ordered_to_float(k.z)));
}

vec3 target_hi(uint t) {
    uvec3 k = targets().v[t].hi;
    return vec3(uintBitsToFloat(ordered_to_float(k.x)), uintBitsToFloat(ordered_to_float(k.y)),
                uintBitsToFloat(ordered_to_float(k.z)));
}

void grow_target(uint t, vec3 lo, vec3 hi) {
    PhotonTargets all = targets();
    for (uint a = 0; a < 3; ++a) {
        atomicMax(all.v[t].lo[a], ~float_to_ordered(floatBitsToUint(lo[a])));
        atomicMax(all.v[t].hi[a], float_to_ordered(floatBitsToUint(hi[a])));
    }
}

// Whether photons are aimed at `m`'s objects: mirrors, glass, and metallic diffuse surfaces
// (by their metallic factor; a texture may lower it), which reflect them.
bool is_target(Material m) {
    return m.kind != MATERIAL_DIFFUSE || m.metallic > 0.0;
}

void targets_step(uint t) {
    if (t >= pc.triangle_count) {
        return;
    }
    uvec3 tri = UVec3s(pc.scene.triangles).v[t];
    Vec3s positions = Vec3s(pc.scene.positions);
    vec3 a = positions.v[tri.x];
    vec3 b = positions.v[tri.y];
    vec3 c = positions.v[tri.z];
    vec3 lo = min(a, min(b, c));
    vec3 hi = max(a, max(b, c));
    grow_target(pc.material_count, lo, hi);
    uint material = U32s(pc.scene.triangle_materials).v[t];
    if (material < pc.material_count && is_target(scene_material(pc.scene, material))) {
        grow_target(material, lo, hi);
    }
}

// Target `t`'s bounding sphere grown to reach the triangle's corners.
void spheres_step(uint t) {
    if (t >= pc.triangle_count) {
        return;
    }
    uint material = U32s(pc.scene.triangle_materials).v[t];
    if (material >= pc.material_count || !is_target(scene_material(pc.scene, material))) {
        return;
    }
    vec3 centre = 0.5 * (target_lo(material) + target_hi(material));
    uvec3 tri = UVec3s(pc.scene.triangles).v[t];
    Vec3s positions = Vec3s(pc.scene.positions);
    float reach = max(distance(positions.v[tri.x], centre),
                      max(distance(positions.v[tri.y], centre), distance(positions.v[tri.z], centre)));
    // Non-negative floats order as their bits.
    atomicMax(targets().v[material].radius_bits, floatBitsToUint(reach));
}

// The emitters of every (light, target) pair with power, and the photons split between them.
void plan_step() {
    vec3 scene_lo = target_lo(pc.material_count);
    vec3 scene_hi = target_hi(pc.material_count);
    float scene_size = length(scene_hi - scene_lo);
    PhotonEmitters all = emitters();
    uint count = 0;
    float total = 0.0;
    for (uint l = 0; l < pc.light_count; ++l) {
        Light light = Lights(pc.lights_address).v[l];
        for (uint t = 0; t < pc.material_count && count < MAX_EMITTERS; ++t) {
            vec3 lo = target_lo(t);
            vec3 hi = target_hi(t);
            if (!(lo.x <= hi.x)) {
                continue; // not a mirror or glass material, or none of its triangles
            }
            vec3 centre = 0.5 * (lo + hi);
            float radius = max(uintBitsToFloat(targets().v[t].radius_bits), 1e-6);
            vec3 power;
            float cos_max = -1.0;
            float back = 0.0;
            if (light.kind == LIGHT_POINT) {
                float d = length(centre - light.vector);
                if (d > radius) {
                    cos_max = sqrt(max(1.0 - (radius / d) * (radius / d), 0.0));
                }
                power = light.intensity * (2.0 * 3.14159265358979 * (1.0 - cos_max));
            } else {
                power = light.intensity * (3.14159265358979 * radius * radius);
                // Far enough up the light that the photons start outside the scene.
                back = scene_size + length(centre - 0.5 * (scene_lo + scene_hi)) + radius;
            }
            float weight = power.x + power.y + power.z;
            if (!(weight > 0.0)) {
                continue;
            }
            all.v[count] = PhotonEmitter(centre, radius, power, l, 0, 0, cos_max, back);
            total += weight;
            count += 1;
        }
    }
    // Photons in proportion to the power, the rounding's remainder to the last pair.
    uint first = 0;
    for (uint e = 0; e < count; ++e) {
        vec3 power = all.v[e].power;
        float share = (power.x + power.y + power.z) / total;
        uint photons = e + 1 == count ? pc.photon_count - first
                                      : min(uint(float(pc.photon_count) * share), pc.photon_count - first);
        all.v[e].first = first;
        all.v[e].count = photons;
        all.v[e].power = photons > 0 ? power / float(photons) : vec3(0.0);
        first += photons;
    }
    counters().c.emitters = count;
    counters().c.emitted = count > 0 ? pc.photon_count : 0;
}

// Two unit vectors across unit `w`.
void basis(vec3 w, out vec3 u, out vec3 v) {
    vec3 helper = abs(w.x) > 0.5 ? vec3(0.0, 1.0, 0.0) : vec3(1.0, 0.0, 0.0);
    u = normalize(cross(helper, w));
    v = cross(w, u);
}

void emit_step(uint i) {
    PhotonCounters c = counters().c;
    if (i >= c.emitted) {
        return;
    }
    uint e = 0;
    while (e + 1 < c.emitters && i >= emitters().v[e].first + emitters().v[e].count) {
        e += 1;
    }
    PhotonEmitter emitter = emitters().v[e];
    Light light = Lights(pc.lights_address).v[emitter.light];
    float u1 = random_unit(pc.seed, i, 0u);
    float u2 = random_unit(pc.seed, i, 1u);
    float phi = 2.0 * 3.14159265358979 * u2;
    Ray ray;
    if (light.kind == LIGHT_POINT) {
        vec3 w = normalize(emitter.centre - light.vector);
        vec3 u;
        vec3 v;
        basis(w, u, v);
        float cos_theta = 1.0 - u1 * (1.0 - emitter.cos_max);
        float sin_theta = sqrt(max(1.0 - cos_theta * cos_theta, 0.0));
        vec3 direction = normalize(cos_theta * w + sin_theta * (cos(phi) * u + sin(phi) * v));
        ray = Ray(light.vector, 0.0, direction, INF);
    } else {
        vec3 w = normalize(light.vector);
        vec3 u;
        vec3 v;
        basis(w, u, v);
        float r = emitter.radius * sqrt(u1);
        vec3 across = emitter.centre + r * (cos(phi) * u + sin(phi) * v);
        ray = Ray(across - w * emitter.back, 0.0, w, INF);
    }
    list_rays(pc.list_address, pc.photon_count).v[i] = ray;
    list_payloads(pc.list_address, pc.photon_count).v[i] = RayPayload(emitter.power, i);
}

void scatter_step(uint i, bool in_list) {
    uint stored_count = 0;
    uint scattered_count = 0;
    Ray scattered;
    vec3 power = vec3(0.0);
    uint photon = 0;
    vec3 position = vec3(0.0);
    if (in_list) {
        Ray ray = list_rays(pc.list_address, pc.photon_count).v[i];
        Hit hit = list_hits(pc.list_address, pc.photon_count).v[i];
        RayPayload payload = list_payloads(pc.list_address, pc.photon_count).v[i];
        power = payload.weight;
        photon = payload.pixel;
        if (hit.triangle != MISS) {
            SurfacePoint s = surface_at(pc.scene, ray, hit, 0.0);
            position = s.position;
            // A diffuse surface's metallic share reflects photons as a mirror tinted by its
            // colour (with that probability, as the shading reflects that share of light);
            // the rest is stored.
            bool metal = s.kind == MATERIAL_DIFFUSE && s.metallic > 0.0
                && random_unit(pc.seed, photon, 2u + pc.bounce) < s.metallic;
            if (s.kind == MATERIAL_DIFFUSE && !metal) {
                stored_count = pc.bounce > 0 ? 1u : 0u;
            } else if (pc.spawn != 0u) {
                vec3 d = normalize(ray.direction);
                vec3 n = s.shading_normal;
                vec3 above = offset_origin(s.position, s.geometric_normal, pc.surface_offset);
                vec3 below = offset_origin(s.position, -s.geometric_normal, pc.surface_offset);
                scattered = Ray(above, 0.0, reflect_about(d, n), INF);
                if (s.kind != MATERIAL_GLASS) {
                    power *= s.colour;
                } else {
                    float eta = s.front ? 1.0 / s.ior : s.ior;
                    vec3 refracted;
                    float reflectance = fresnel_refract(d, n, eta, refracted);
                    if (random_unit(pc.seed, photon, 2u + pc.bounce) >= reflectance) {
                        scattered = Ray(below, 0.0, refracted, INF);
                        power *= s.colour;
                    }
                }
                scattered_count = max(power.x, max(power.y, power.z)) > 0.0 ? 1u : 0u;
            }
        }
    }
    uint stored_slot = append_slots(pc.state_address + 8ul, stored_count);
    uint scattered_slot = append_slots(pc.counters_address, scattered_count);
    if (stored_count != 0u && stored_slot < pc.photon_count) {
        Vec3s(pc.stored_address).v[stored_slot] = position;
        Vec3s(pc.powers_address).v[stored_slot] = power;
    }
    if (scattered_count != 0u && scattered_slot < pc.photon_count) {
        list_rays(pc.next_list_address, pc.photon_count).v[scattered_slot] = scattered;
        list_payloads(pc.next_list_address, pc.photon_count).v[scattered_slot] = RayPayload(power, photon);
    }
}

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (STEP == TARGETS) {
        targets_step(i);
    } else if (STEP == SPHERES) {
        spheres_step(i);
    } else if (STEP == PLAN) {
        if (i == 0) {
            plan_step();
        }
    } else if (STEP == EMIT) {
        emit_step(i);
    } else {
        // The list's length: the emitted photons at bounce 0, then the previous bounce's
        // appends (a photon scatters at most once, so they never exceed the capacity).
        uint length = pc.bounce == 0 ? counters().c.emitted
                                     : BounceCounterRefs(pc.counters_address - 48ul).v[0].appended_rays;
        scatter_step(i, i < length);
    }
}
