//! The CPU reference of the photon map (`glsl/photons/*.comp`): the same targets, the same
//! split of the photons between (light, target) pairs, the same random numbers
//! ([`crate::rng::random_unit`]) and scattering rules, traced through the CPU LBVH; and the
//! radiance estimate by brute force. Photon paths agree with the GPU's up to the rounding of
//! the two traversals, so tests compare the stored photons as sets, within tolerances.

use crate::accel::bvh::cpu::build_lbvh;
use crate::accel::bvh::traverse::closest_hit_bvh;
use crate::geom::morton::MortonBits;
use crate::geom::ray::Ray;
use crate::render::cpu::{CpuScene, fresnel_refract, offset_origin, reflect_about};
use crate::render::photons::PhotonParams;
use crate::render::{Light, MaterialKind};
use crate::rng::random_unit;
use glam::Vec3;
use std::f32::consts::PI;

/// A stored photon.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Photon {
    /// Where it hit the diffuse surface.
    pub position: Vec3,
    /// Its power.
    pub power: Vec3,
}

/// A frame's photons on the CPU.
#[derive(Clone, Debug, Default)]
pub struct CpuPhotons {
    /// (light, target) pairs with photons.
    pub emitters: u32,
    /// Photons emitted.
    pub emitted: u32,
    /// The power emitted in all.
    pub emitted_power: Vec3,
    /// Each (light, target) pair's power per photon.
    pub photon_powers: Vec<Vec3>,
    /// The stored photons.
    pub stored: Vec<Photon>,
    /// Photons going on after each bounce.
    pub scattered: Vec<u32>,
}

struct Emitter {
    centre: Vec3,
    radius: f32,
    power: Vec3,
    light: usize,
    count: u32,
    cos_max: f32,
    back: f32,
}

/// Two unit vectors across unit `w` (`basis` of trace.comp).
fn basis(w: Vec3) -> (Vec3, Vec3) {
    let helper = if w.x.abs() > 0.5 { Vec3::Y } else { Vec3::X };
    let u = helper.cross(w).normalize();
    (u, w.cross(u))
}

/// The bounds of each mirror, glass and metallic material's triangles with the radius of the sphere
/// about their centre reaching every vertex, and the scene's bounds.
#[allow(clippy::type_complexity)]
fn targets(scene: &CpuScene) -> (Vec<Option<(Vec3, Vec3, f32)>>, (Vec3, Vec3)) {
    let mut per_material: Vec<Option<(Vec3, Vec3, f32)>> =
        vec![None; scene.surfaces.materials.len()];
    let mut all = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
    for (t, tri) in scene.triangles.iter().enumerate() {
        let [a, b, c] = tri.map(|i| Vec3::from(scene.positions[i as usize]));
        let (lo, hi) = (a.min(b.min(c)), a.max(b.max(c)));
        all = (all.0.min(lo), all.1.max(hi));
        let m = scene.surfaces.triangle_materials[t] as usize;
        let material = &scene.surfaces.materials[m];
        if material.kind() != Some(MaterialKind::Diffuse) || material.metallic > 0.0 {
            let slot = per_material[m].get_or_insert((lo, hi, 0.0));
            *slot = (slot.0.min(lo), slot.1.max(hi), 0.0);
        }
    }
    for (t, tri) in scene.triangles.iter().enumerate() {
        if let Some((lo, hi, radius)) =
            &mut per_material[scene.surfaces.triangle_materials[t] as usize]
        {
            let centre = 0.5 * (*lo + *hi);
            for &i in tri {
                *radius = radius.max(Vec3::from(scene.positions[i as usize]).distance(centre));
            }
        }
    }
    (per_material, all)
}

/// PLAN of trace.comp: each (light, target) pair's emitter, the photons split in proportion
/// to their power.
fn plan(scene: &CpuScene, photons: u32) -> Vec<Emitter> {
    let (per_material, (scene_lo, scene_hi)) = targets(scene);
    let scene_size = (scene_hi - scene_lo).length();
    let mut emitters = Vec::new();
    let mut total = 0.0f32;
    for (l, light) in scene.lights.iter().enumerate() {
        for &(lo, hi, reach) in per_material.iter().flatten() {
            if emitters.len() == super::MAX_EMITTERS as usize {
                break;
            }
            let centre = 0.5 * (lo + hi);
            let radius = reach.max(1e-6);
            let (power, cos_max, back) = match *light {
                Light::Point {
                    position,
                    intensity,
                } => {
                    let d = (centre - position).length();
                    let cos_max = if d > radius {
                        (1.0 - (radius / d) * (radius / d)).max(0.0).sqrt()
                    } else {
                        -1.0
                    };
                    (intensity * (2.0 * PI * (1.0 - cos_max)), cos_max, 0.0)
                }
                Light::Directional { intensity, .. } => {
                    let back =
                        scene_size + (centre - 0.5 * (scene_lo + scene_hi)).length() + radius;
                    (intensity * (PI * radius * radius), -1.0, back)
                }
            };
            let weight = power.x + power.y + power.z;
            if weight.is_nan() || weight <= 0.0 {
                continue;
            }
            total += weight;
            emitters.push(Emitter {
                centre,
                radius,
                power,
                light: l,
                count: 0,
                cos_max,
                back,
            });
        }
    }
    let mut first = 0u32;
    let count = emitters.len();
    for (e, emitter) in emitters.iter_mut().enumerate() {
        let share = (emitter.power.x + emitter.power.y + emitter.power.z) / total;
        let n = if e + 1 == count {
            photons - first
        } else {
            ((photons as f32 * share) as u32).min(photons - first)
        };
        emitter.count = n;
        emitter.power = if n > 0 {
            emitter.power / n as f32
        } else {
            Vec3::ZERO
        };
        first += n;
    }
    emitters
}

/// Photon `i`'s ray from its emitter (EMIT of trace.comp).
fn emit(scene: &CpuScene, emitter: &Emitter, seed: u32, i: u32) -> Ray {
    let (u1, u2) = (random_unit(seed, i, 0), random_unit(seed, i, 1));
    let phi = 2.0 * PI * u2;
    let (origin, direction) = match scene.lights[emitter.light] {
        Light::Point { position, .. } => {
            let w = (emitter.centre - position).normalize();
            let (u, v) = basis(w);
            let cos_theta = 1.0 - u1 * (1.0 - emitter.cos_max);
            let sin_theta = (1.0 - cos_theta * cos_theta).max(0.0).sqrt();
            let d = (cos_theta * w + sin_theta * (phi.cos() * u + phi.sin() * v)).normalize();
            (position, d)
        }
        Light::Directional { direction, .. } => {
            let w = direction.normalize();
            let (u, v) = basis(w);
            let r = emitter.radius * u1.sqrt();
            let across = emitter.centre + r * (phi.cos() * u + phi.sin() * v);
            (across - w * emitter.back, w)
        }
    };
    Ray {
        origin: origin.to_array(),
        tmin: 0.0,
        direction: direction.to_array(),
        tmax: f32::INFINITY,
    }
}

/// A frame's photons of `scene` as the GPU traces them (`seed`: the frame's), with
/// `surface_offset` the renderer's offset of new ray origins.
pub fn trace_photons(
    scene: &CpuScene,
    params: &PhotonParams,
    surface_offset: f32,
    seed: u32,
) -> CpuPhotons {
    let bvh = build_lbvh(scene.positions, scene.triangles, MortonBits::Bits30);
    let emitters = plan(scene, params.photons);
    let mut out = CpuPhotons {
        emitters: emitters.len() as u32,
        emitted: if emitters.is_empty() {
            0
        } else {
            params.photons
        },
        scattered: vec![0; params.bounces as usize + 1],
        ..CpuPhotons::default()
    };
    let mut photon = 0u32;
    for emitter in &emitters {
        out.emitted_power += emitter.power * emitter.count as f32;
        out.photon_powers.push(emitter.power);
        for _ in 0..emitter.count {
            let mut ray = emit(scene, emitter, seed, photon);
            let mut power = emitter.power;
            for bounce in 0..=params.bounces {
                let hit = closest_hit_bvh(scene.positions, scene.triangles, &bvh, &ray);
                if !hit.is_hit() {
                    break;
                }
                let s = scene.surface_at(&ray, &hit, 0.0);
                let metal = s.kind == MaterialKind::Diffuse
                    && s.metallic > 0.0
                    && random_unit(seed, photon, 2 + bounce) < s.metallic;
                if s.kind == MaterialKind::Diffuse && !metal {
                    if bounce > 0 {
                        out.stored.push(Photon {
                            position: s.position,
                            power,
                        });
                    }
                    break;
                }
                if bounce == params.bounces {
                    break;
                }
                let d = Vec3::from(ray.direction).normalize();
                let n = s.shading_normal;
                let above = offset_origin(s.position, s.geometric_normal, surface_offset);
                let below = offset_origin(s.position, -s.geometric_normal, surface_offset);
                let (mut origin, mut direction) = (above, reflect_about(d, n));
                if s.kind != MaterialKind::Glass {
                    power *= s.colour;
                } else {
                    let eta = if s.front { 1.0 / s.ior } else { s.ior };
                    let (reflectance, refracted) = fresnel_refract(d, n, eta);
                    if random_unit(seed, photon, 2 + bounce) >= reflectance {
                        (origin, direction) = (below, refracted);
                        power *= s.colour;
                    }
                }
                if power.max_element() <= 0.0 {
                    break;
                }
                out.scattered[bounce as usize] += 1;
                ray = Ray {
                    origin: origin.to_array(),
                    tmin: 0.0,
                    direction: direction.to_array(),
                    tmax: f32::INFINITY,
                };
            }
            photon += 1;
        }
    }
    out
}

/// The caustic radiance estimate at `position` from `photons` (`estimate.comp`, by brute
/// force): the `k` nearest within `max_radius` (all within it when fewer), their power
/// weighted by the cone filter `1 - d / r` with `r` the k-th one's distance (`max_radius`
/// when fewer), over `(1 - 2/3) pi r²`; zero when none is within reach.
pub fn estimate(photons: &[Photon], position: Vec3, k: usize, max_radius: f32) -> Vec3 {
    let mut near: Vec<(f32, Vec3)> = photons
        .iter()
        .map(|p| ((p.position - position).length(), p.power))
        .filter(|&(d, _)| d < max_radius)
        .collect();
    if near.is_empty() {
        return Vec3::ZERO;
    }
    near.sort_by(|a, b| a.0.total_cmp(&b.0));
    let r = if near.len() >= k {
        near[k - 1].0
    } else {
        max_radius
    };
    let sum: Vec3 = near
        .iter()
        .filter(|&&(d, _)| d <= r)
        .map(|&(d, power)| power * (1.0 - d / r))
        .sum();
    sum / ((1.0 - 2.0 / 3.0) * PI * r * r)
}
