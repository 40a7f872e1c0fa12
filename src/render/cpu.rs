//! The CPU reference of the renderer (src/render, glsl/render/*.comp): the same camera rays,
//! closest hits, textures, vertex colours, normal textures, emission, shadow rays, Lambert
//! shading, metallic and mirror reflections (rough ones scattered by the same hashes), glass
//! with exact Fresnel weights, the sky at misses and at specular hits of the last bounce, the same fixed-point
//! per-pixel sums ([`radiance_units`]) and sRGB packing, pixel by pixel, through the CPU LBVH.
//! Paths are followed depth first instead of in waves; since the sums are integer, the order
//! does not matter. Ray lists never overflow here: the GPU image equals this one when its
//! [`BounceStats`](crate::render::BounceStats) report no dropped rays. Render tests compare the
//! GPU image with this one.

use crate::accel::bvh::cpu::{Lbvh, build_lbvh};
use crate::accel::bvh::traverse::trace_bvh_solid;
use crate::geom::morton::MortonBits;
use crate::geom::ray::Ray;
use crate::geom::ray::{Hit, Query};
use crate::geom::view::{sample_hash, unit_float};
use crate::render::{
    Camera, Light, MaterialKind, PixelAovs, RADIANCE_SCALE, RenderParams, ShadingParams, Surfaces,
    radiance_units,
};
use crate::scene::texture::Footprint;
use crate::scene::{Environment, TextureRef};
use glam::{Vec3, Vec4};

/// A scene as the CPU renderer takes it: the mesh, its surfaces, and lights.
pub struct CpuScene<'a> {
    /// Vertex positions.
    pub positions: &'a [[f32; 3]],
    /// Vertex normals, one per position.
    pub normals: &'a [[f32; 3]],
    /// Triangles.
    pub triangles: &'a [[u32; 3]],
    /// A material per triangle, the materials and their textures.
    pub surfaces: Surfaces<'a>,
    /// Lights.
    pub lights: &'a [Light],
    /// The environment map the sky is, or none for the procedural sky.
    pub environment: Option<&'a Environment>,
}

/// Which path [`CpuScene::trace_path`] follows: its pixel, sample and bounce.
#[derive(Clone, Copy)]
struct PathPoint {
    pixel: u32,
    sample: u32,
    bounce: u32,
}

impl PathPoint {
    /// `path_hash` of shade.comp: a hash of this path for the sampling of one decision.
    fn hash(&self, salt: u32) -> u32 {
        let pass = self.bounce | self.sample << 8;
        sample_hash(sample_hash(self.pixel.wrapping_mul(0x9e37_79b9) ^ pass) ^ salt)
    }

    /// `reflected_direction` of shade.comp: the direction a reflection of `roughness` about
    /// unit `n` leaves in, the mirror direction `mirror` moved towards a cosine-weighted one
    /// by roughness squared when `glossy`.
    fn reflected_direction(&self, mirror: Vec3, n: Vec3, roughness: f32, glossy: bool) -> Vec3 {
        if !glossy || roughness <= 0.0 {
            return mirror;
        }
        let hash = self.hash(0x2f6b_1d93);
        let diffuse = cosine_direction(n, unit_float(hash), unit_float(sample_hash(hash)));
        let a = roughness * roughness;
        let r = mirror * (1.0 - a) + diffuse * a;
        let r_length = r.length();
        if r_length > 0.0 { r / r_length } else { mirror }
    }
}

/// `cosine_direction` of sampling.glsl: a cosine-weighted direction about unit `n` from two
/// numbers in [0, 1).
fn cosine_direction(n: Vec3, r1: f32, r2: f32) -> Vec3 {
    let sign_z = if n.z >= 0.0 { 1.0 } else { -1.0 };
    let a = -1.0 / (sign_z + n.z);
    let b = n.x * n.y * a;
    let t = Vec3::new(1.0 + sign_z * n.x * n.x * a, sign_z * b, -sign_z * n.x);
    let s = Vec3::new(b, sign_z + n.y * n.y * a, -n.y);
    let phi = std::f32::consts::TAU * r1;
    let r = r2.sqrt();
    r * phi.cos() * t + r * phi.sin() * s + (1.0 - r2).max(0.0).sqrt() * n
}

/// The surface a ray hit (`SurfacePoint` in glsl/common/shading.glsl).
pub(crate) struct SurfacePoint {
    pub(crate) position: Vec3,
    pub(crate) geometric_normal: Vec3,
    pub(crate) shading_normal: Vec3,
    pub(crate) front: bool,
    pub(crate) colour: Vec3,
    pub(crate) emission: Vec3,
    pub(crate) kind: MaterialKind,
    pub(crate) ior: f32,
    pub(crate) metallic: f32,
    pub(crate) roughness: f32,
    /// What reaches it of the ambient term (the occlusion texture's).
    pub(crate) occlusion: f32,
}

/// `normal_mapped` of shading.glsl: unit normal `n` bent by a normal texture's linear texel
/// in the frame of the interpolated vertex tangent; `n` where the tangent gives no frame.
fn normal_mapped(n: Vec3, tangent: Vec4, texel: Vec3, scale: f32) -> Vec3 {
    let t = tangent.truncate() - n * n.dot(tangent.truncate());
    let t_length = t.length();
    if t_length.is_nan() || t_length <= 0.0 {
        return n;
    }
    let t = t / t_length;
    let b = if tangent.w < 0.0 { -1.0 } else { 1.0 } * n.cross(t);
    let m = texel * 2.0 - 1.0;
    let bent = (m.x * scale) * t + (m.y * scale) * b + m.z * n;
    let bent_length = bent.length();
    if bent_length > 0.0 {
        bent / bent_length
    } else {
        n
    }
}

/// Direction to the light, shadow-ray tmax and irradiance at `p` (`light_towards`).
fn light_towards(light: &Light, p: Vec3) -> (Vec3, f32, Vec3) {
    match *light {
        Light::Point {
            position,
            intensity,
        } => {
            let to_light = position - p;
            (to_light, 1.0, intensity / to_light.dot(to_light).max(1e-12))
        }
        Light::Directional {
            direction,
            intensity,
        } => (-direction, f32::INFINITY, intensity),
    }
}

/// The procedural sky's radiance along `direction` (`sky`).
fn sky(direction: Vec3) -> Vec3 {
    let up = (direction.normalize().y * 0.5 + 0.5).clamp(0.0, 1.0);
    Vec3::new(0.85, 0.85, 0.8).lerp(Vec3::new(0.35, 0.55, 0.9), up)
}

/// `offset_origin`: the origin of a ray leaving the surface at `p` on the side of unit normal
/// `n`, `offset` world units along `n` and then every coordinate of magnitude at least
/// [`ORIGIN_ULP_FLOOR`] stepped by up to [`ORIGIN_ULPS`] units in its last place in `n`'s
/// direction (Wächter & Binder, Ray Tracing Gems, 2019), so that a ray far from the origin
/// cannot hit the surface it leaves.
pub fn offset_origin(p: Vec3, n: Vec3, offset: f32) -> Vec3 {
    let q = p + n * offset;
    let step = |q: f32, n: f32| {
        if q.abs() < ORIGIN_ULP_FLOOR {
            return q;
        }
        let steps = (ORIGIN_ULPS * n) as i32;
        let towards_n = if q < 0.0 { -steps } else { steps };
        f32::from_bits((q.to_bits() as i32).wrapping_add(towards_n) as u32)
    };
    Vec3::new(step(q.x, n.x), step(q.y, n.y), step(q.z, n.z))
}

/// `ORIGIN_ULPS` of shading.glsl: units in the last place a new ray's origin steps.
pub const ORIGIN_ULPS: f32 = 32.0;
/// `ORIGIN_ULP_FLOOR` of shading.glsl: coordinates below it are not stepped.
pub const ORIGIN_ULP_FLOOR: f32 = 1.0 / 32.0;

/// `reflect_about`: the mirror direction of unit `d` about unit `n`.
pub(crate) fn reflect_about(d: Vec3, n: Vec3) -> Vec3 {
    d - 2.0 * d.dot(n) * n
}

/// `fresnel_refract`: the exact dielectric Fresnel reflectance of unit `d` meeting a surface of
/// unit normal `n` (facing against `d`) with `eta` = n1 / n2, and the refracted direction
/// (zero under total internal reflection, where the reflectance is 1).
pub(crate) fn fresnel_refract(d: Vec3, n: Vec3, eta: f32) -> (f32, Vec3) {
    let cos_i = (-d.dot(n)).min(1.0);
    let sin2_t = eta * eta * (1.0 - cos_i * cos_i).max(0.0);
    if sin2_t >= 1.0 {
        return (1.0, Vec3::ZERO);
    }
    let cos_t = (1.0 - sin2_t).sqrt();
    let rs = (eta * cos_i - cos_t) / (eta * cos_i + cos_t);
    let rp = (cos_i - eta * cos_t) / (cos_i + eta * cos_t);
    let refracted = (eta * d + (eta * cos_i - cos_t) * n).normalize();
    (0.5 * (rs * rs + rp * rp), refracted)
}

/// `pack_srgb` of resolve.comp.
fn pack_srgb(linear: Vec3) -> [u8; 4] {
    let c = linear
        .clamp(Vec3::ZERO, Vec3::ONE)
        .to_array()
        .map(|v| (super::channels::srgb_encode(v) * 255.0).round() as u8);
    [c[0], c[1], c[2], 255]
}

/// A pixel's fixed-point radiance sum (`add_radiance`).
#[derive(Default)]
struct Sums([u64; 3]);

impl Sums {
    fn add(&mut self, c: Vec3) {
        for (sum, c) in self.0.iter_mut().zip(c.to_array()) {
            *sum += radiance_units(c);
        }
    }

    fn linear(&self) -> Vec3 {
        Vec3::from_array(self.0.map(|units| units as f32 * (1.0 / RADIANCE_SCALE)))
    }
}

/// Rendering constants of one image.
struct Settings<'a> {
    bvh: &'a Lbvh,
    shading: &'a ShadingParams,
    bounces: u32,
    sky_light: bool,
    /// Rough reflections scatter (more than one sample per pixel).
    glossy: bool,
    /// The camera rays' spacing ([`crate::geom::PinholeView::ray_spacing`]): their hits
    /// read textures at their cone's mip level.
    cone_spread: f32,
}

impl CpuScene<'_> {
    /// `surface_at` of shading.glsl: the surface `hit` describes for `ray`, its textures
    /// read at the mip level of a cone `hit.t * cone_spread` wide (0: level 0).
    pub(crate) fn surface_at(&self, ray: &Ray, hit: &Hit, cone_spread: f32) -> SurfacePoint {
        let (triangle, u, v) = (hit.triangle, hit.u, hit.v);
        let t = self.triangles[triangle as usize];
        let [a, b, c] = t.map(|i| Vec3::from(self.positions[i as usize]));
        let [na, nb, nc] = t.map(|i| Vec3::from(self.normals[i as usize]));
        let w = 1.0 - u - v;
        let position = w * a + u * b + v * c;
        let mut g = (b - a).cross(c - a).normalize();
        let n = w * na + u * nb + v * nc;
        let length = n.length();
        let mut n = if length > 0.0 { n / length } else { g };
        let outward = if g.dot(n) < 0.0 { -g } else { g };
        let front = outward.dot(Vec3::from(ray.direction)) < 0.0;
        let surfaces = &self.surfaces;
        let material = surfaces.materials[surfaces.triangle_materials[triangle as usize] as usize];
        let mut colour = Vec3::from(material.colour);
        let mut emission = Vec3::from(material.emission);
        let (mut metallic, mut roughness) = (material.metallic, material.roughness);
        let mut occlusion = 1.0;
        if !surfaces.colours.is_empty() {
            colour *= self
                .interpolated(surfaces.colours, triangle, u, v)
                .truncate();
        }
        if material.textures().iter().any(|(_, r)| r.is_some()) {
            let uv = self
                .interpolated(surfaces.texcoords, triangle, u, v)
                .to_array();
            let footprint = self.texture_footprint(ray, hit, [a, b, c], cone_spread);
            let sample = |r: TextureRef, srgb: bool| {
                let texture = &surfaces.textures[r.texture as usize];
                let lod = footprint.level_of_detail(&r, texture);
                Vec4::from(texture.sample(r.coordinates(uv), lod, srgb))
            };
            if material.base_colour_texture.is_some() {
                colour *= sample(material.base_colour_texture, true).truncate();
            }
            if material.emissive_texture.is_some() {
                emission *= sample(material.emissive_texture, true).truncate();
            }
            if material.metallic_roughness_texture.is_some() {
                let texel = sample(material.metallic_roughness_texture, false);
                metallic *= texel.z;
                roughness *= texel.y;
            }
            if material.occlusion_texture.is_some() {
                let r = sample(material.occlusion_texture, false).x;
                occlusion = 1.0 + material.occlusion_strength * (r - 1.0);
            }
            if material.normal_texture.is_some() {
                let tangent = self.interpolated(surfaces.tangents, triangle, u, v);
                let texel = sample(material.normal_texture, false).truncate();
                n = normal_mapped(n, tangent, texel, material.normal_scale);
            }
        }
        if g.dot(Vec3::from(ray.direction)) > 0.0 {
            g = -g;
        }
        if n.dot(g) < 0.0 {
            n = -n;
        }
        if material.checker_scale > 0.0 {
            let cx = (position.x / material.checker_scale).floor() as i32;
            let cz = (position.z / material.checker_scale).floor() as i32;
            if (cx + cz) & 1 != 0 {
                colour *= 0.5;
            }
        }
        SurfacePoint {
            position,
            geometric_normal: g,
            shading_normal: n,
            front,
            colour,
            emission,
            kind: material.kind().expect("materials are validated"),
            ior: material.ior,
            metallic,
            roughness,
            occlusion,
        }
    }

    /// `texture_footprint` of shading.glsl: where the cone of `ray`, `hit.t * cone_spread`
    /// wide, meets the hit triangle (its corners `[a, b, c]`), in its texture coordinates.
    fn texture_footprint(
        &self,
        ray: &Ray,
        hit: &Hit,
        [a, b, c]: [Vec3; 3],
        cone_spread: f32,
    ) -> Footprint {
        let width = hit.t * cone_spread;
        if width.is_nan() || width <= 0.0 {
            return Footprint::NONE;
        }
        let t = self.triangles[hit.triangle as usize];
        let edges = (b - a).cross(c - a);
        let world_area = edges.length();
        let cosine = (edges / world_area).dot(Vec3::from(ray.direction).normalize());
        let [ta, tb, tc] = t.map(|i| Vec4::from(self.surfaces.texcoords[i as usize]));
        let (e1, e2) = (tb - ta, tc - ta);
        let texcoord_area = [
            (e1.x * e2.y - e1.y * e2.x).abs(),
            (e1.z * e2.w - e1.w * e2.z).abs(),
        ];
        Footprint::of_cone(width, cosine, world_area, texcoord_area)
    }

    /// `shadow_ray` of shade.comp: the shadow ray towards `light` and the radiance it carries,
    /// or `None` where the surface faces away or the contribution is zero.
    fn shadow_ray(
        &self,
        s: &SurfacePoint,
        weight: Vec3,
        light: &Light,
        offset: f32,
    ) -> Option<(Ray, Vec3)> {
        let (to_light, tmax, irradiance) = light_towards(light, s.position);
        let cosine = s.shading_normal.dot(to_light.normalize()).max(0.0);
        let contribution = weight * s.colour * irradiance * cosine;
        let ray = Ray {
            origin: offset_origin(s.position, s.geometric_normal, offset).to_array(),
            tmin: 0.0,
            direction: to_light.to_array(),
            tmax,
        };
        (to_light.dot(s.geometric_normal) > 0.0 && contribution.max_element() > 0.0)
            .then_some((ray, contribution))
    }

    /// `cut_out` of cutout.glsl: whether `hit` falls on a cut-away part of its triangle.
    fn cut_out(&self, hit: &Hit) -> bool {
        let surfaces = &self.surfaces;
        let material =
            surfaces.materials[surfaces.triangle_materials[hit.triangle as usize] as usize];
        if !material.cuts_out() {
            return false;
        }
        let mut alpha = material.alpha;
        let texture = material.base_colour_texture;
        if texture.is_some() {
            let coords = self.interpolated(surfaces.texcoords, hit.triangle, hit.u, hit.v);
            alpha *= surfaces.textures[texture.texture as usize].sample(
                texture.coordinates(coords.to_array()),
                f32::NEG_INFINITY,
                true,
            )[3];
        }
        if !surfaces.colours.is_empty() {
            let t = self.triangles[hit.triangle as usize];
            let [a, b, c] = t.map(|i| surfaces.colours[i as usize][3]);
            alpha *= (1.0 - hit.u - hit.v) * a + hit.u * b + hit.v * c;
        }
        alpha < material.alpha_cutoff
    }

    /// The per-vertex `values` (texture coordinates, tangents, colours) at barycentric (`u`,
    /// `v`) of `triangle`, interpolated as `surface_at` in the kernels does.
    fn interpolated(&self, values: &[[f32; 4]], triangle: u32, u: f32, v: f32) -> Vec4 {
        let t = self.triangles[triangle as usize];
        let [a, b, c] = t.map(|i| Vec4::from(values[i as usize]));
        (1.0 - u - v) * a + u * b + v * c
    }

    /// The closest hit of `ray` through `bvh`, past cut-outs.
    fn closest_hit(&self, bvh: &Lbvh, ray: &Ray) -> Hit {
        let solid = |hit: &Hit| !self.cut_out(hit);
        trace_bvh_solid(
            self.positions,
            self.triangles,
            bvh,
            ray,
            Query::Closest,
            &solid,
        )
        .0
    }

    /// Whether `ray` hits anything solid through `bvh`.
    fn any_hit(&self, bvh: &Lbvh, ray: &Ray) -> bool {
        let solid = |hit: &Hit| !self.cut_out(hit);
        trace_bvh_solid(self.positions, self.triangles, bvh, ray, Query::Any, &solid)
            .0
            .is_hit()
    }

    /// `sky_radiance` of shading.glsl: the environment's radiance along `direction`, or the
    /// procedural sky's.
    fn sky_radiance(&self, direction: Vec3) -> Vec3 {
        match self.environment {
            Some(environment) => environment.radiance(direction),
            None => sky(direction),
        }
    }

    /// `sky_ray` of shade.comp: the sky-light ray from `s` on path `path` and the radiance it
    /// carries, or `None` below the surface or for no contribution.
    fn sky_ray(
        &self,
        s: &SurfacePoint,
        weight: Vec3,
        path: PathPoint,
        offset: f32,
    ) -> Option<(Ray, Vec3)> {
        let hash = path.hash(0x68e3_1da4);
        let direction = cosine_direction(
            s.shading_normal,
            unit_float(hash),
            unit_float(sample_hash(hash)),
        );
        let contribution = weight * s.colour * self.sky_radiance(direction);
        let ray = Ray {
            origin: offset_origin(s.position, s.geometric_normal, offset).to_array(),
            tmin: 0.0,
            direction: direction.to_array(),
            tmax: f32::INFINITY,
        };
        (direction.dot(s.geometric_normal) > 0.0 && contribution.max_element() > 0.0)
            .then_some((ray, contribution))
    }

    /// Follows the path of `ray` with throughput `weight` at `path`, adding its radiance to
    /// `sums` as shade.comp and shadow_radiance.comp do.
    fn trace_path(&self, at: &Settings, ray: &Ray, weight: Vec3, path: PathPoint, sums: &mut Sums) {
        let bounce = path.bounce;
        let hit = self.closest_hit(at.bvh, ray);
        if !hit.is_hit() {
            sums.add(weight * self.sky_radiance(Vec3::from(ray.direction)));
            return;
        }
        let cone_spread = if bounce == 0 { at.cone_spread } else { 0.0 };
        let mut s = self.surface_at(ray, &hit, cone_spread);
        let offset = at.shading.surface_offset;
        if s.emission.max_element() > 0.0 {
            sums.add(weight * s.emission);
        }
        let base = s.colour;
        if s.kind == MaterialKind::Diffuse {
            s.colour *= 1.0 - s.metallic;
            if !at.sky_light {
                sums.add(weight * s.colour * (at.shading.ambient * s.occlusion));
            } else if let Some((ray, contribution)) = self.sky_ray(&s, weight, path, offset)
                && !self.any_hit(at.bvh, &ray)
            {
                sums.add(contribution);
            }
            for light in self.lights {
                if let Some((shadow, contribution)) = self.shadow_ray(&s, weight, light, offset)
                    && !self.any_hit(at.bvh, &shadow)
                {
                    sums.add(contribution);
                }
            }
        }
        let d = Vec3::from(ray.direction).normalize();
        let n = s.shading_normal;
        let above = offset_origin(s.position, s.geometric_normal, offset);
        let below = offset_origin(s.position, -s.geometric_normal, offset);
        let mut scattered = vec![(above, reflect_about(d, n), weight)];
        if s.kind == MaterialKind::Glass {
            let eta = if s.front { 1.0 / s.ior } else { s.ior };
            let (reflectance, refracted) = fresnel_refract(d, n, eta);
            scattered[0].2 = weight * reflectance;
            if reflectance < 1.0 {
                scattered.push((below, refracted, weight * (1.0 - reflectance) * s.colour));
            }
        } else {
            let metal = if s.kind == MaterialKind::Diffuse {
                s.metallic
            } else {
                1.0
            };
            scattered[0].1 = path.reflected_direction(scattered[0].1, n, s.roughness, at.glossy);
            scattered[0].2 = weight * base * metal;
        }
        for (origin, direction, w) in scattered {
            if w.max_element() <= 0.0 {
                continue;
            }
            if bounce < at.bounces {
                let next = Ray {
                    origin: origin.to_array(),
                    tmin: 0.0,
                    direction: direction.to_array(),
                    tmax: f32::INFINITY,
                };
                let next_point = PathPoint {
                    bounce: bounce + 1,
                    ..path
                };
                self.trace_path(at, &next, w, next_point, sums);
            } else {
                sums.add(w * self.sky_radiance(direction));
            }
        }
    }

    /// The RGBA8 image (rows from the top) of this scene seen by `camera`, with
    /// `params.bounces` bounces of reflected and refracted rays and `params.samples` samples
    /// per pixel.
    pub fn render(
        &self,
        camera: &Camera,
        width: u32,
        height: u32,
        shading: &ShadingParams,
        params: &RenderParams,
    ) -> Vec<u8> {
        let bvh = build_lbvh(self.positions, self.triangles, MortonBits::Bits30);
        let view = camera.view(width, height);
        let settings = Settings {
            bvh: &bvh,
            shading,
            bounces: params.bounces,
            sky_light: params.sky_light,
            glossy: params.samples > 1,
            cone_spread: view.ray_spacing(),
        };
        let sample_weight = 1.0 / params.samples as f32;
        let mut image = Vec::with_capacity((width * height * 4) as usize);
        for y in 0..height {
            for x in 0..width {
                let mut sums = Sums::default();
                for sample in 0..params.samples {
                    let ray = view.sample_ray(x, y, sample, params.samples);
                    let path = PathPoint {
                        pixel: y * width + x,
                        sample,
                        bounce: 0,
                    };
                    self.trace_path(&settings, &ray, Vec3::ONE, path, &mut sums);
                }
                image.extend(pack_srgb(sums.linear() * sample_weight));
            }
        }
        image
    }

    /// What each pixel's camera rays hit (rows from the top), as `aovs.comp` writes it for
    /// `camera` and `samples` samples per pixel: the reference of the renderer's linear
    /// output.
    pub fn primary_aovs(
        &self,
        camera: &Camera,
        width: u32,
        height: u32,
        samples: u32,
    ) -> Vec<PixelAovs> {
        let bvh = build_lbvh(self.positions, self.triangles, MortonBits::Bits30);
        let (forward, _, _) = camera.basis(width, height);
        let view = camera.view(width, height);
        let weight = 1.0 / samples as f32;
        let mut aovs = Vec::with_capacity((width * height) as usize);
        for y in 0..height {
            for x in 0..width {
                let mut pixel = PixelAovs {
                    depth: f32::INFINITY,
                    object_id: u32::MAX,
                    instance_id: u32::MAX,
                    ..PixelAovs::default()
                };
                for sample in 0..samples {
                    let ray = view.sample_ray(x, y, sample, samples);
                    let hit = self.closest_hit(&bvh, &ray);
                    if !hit.is_hit() {
                        continue;
                    }
                    let s = self.surface_at(&ray, &hit, view.ray_spacing());
                    let albedo = s.colour * weight;
                    if sample == 0 {
                        pixel = PixelAovs {
                            normal: s.shading_normal.to_array(),
                            depth: (s.position - Vec3::from(ray.origin)).dot(forward),
                            albedo: albedo.to_array(),
                            object_id: self.surfaces.triangle_materials[hit.triangle as usize],
                            instance_id: self.surfaces.instance_of(hit.triangle),
                            position: s.position.to_array(),
                            coverage: weight,
                        };
                    } else {
                        pixel.albedo = (Vec3::from(pixel.albedo) + albedo).to_array();
                        pixel.coverage += weight;
                    }
                }
                aovs.push(pixel);
            }
        }
        aovs
    }
}
