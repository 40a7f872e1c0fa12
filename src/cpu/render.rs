//! The CPU reference of the renderer (src/render, glsl/render/*.comp): the same camera rays,
//! closest hits, shadow rays, Lambert shading and sRGB packing, pixel by pixel, through the
//! CPU LBVH. Render tests compare the GPU image with this one.

use crate::cpu::lbvh::{Lbvh, build_lbvh};
use crate::cpu::morton::MortonBits;
use crate::cpu::raycast::{Ray, any_hit_bvh, closest_hit_bvh};
use crate::render::{Camera, Light, Material, ShadingParams};
use glam::Vec3;

/// A scene as the CPU renderer takes it: the mesh, a material per triangle, and lights.
pub struct CpuScene<'a> {
    /// Vertex positions.
    pub positions: &'a [[f32; 3]],
    /// Vertex normals, one per position.
    pub normals: &'a [[f32; 3]],
    /// Triangles.
    pub triangles: &'a [[u32; 3]],
    /// Material index of each triangle.
    pub triangle_materials: &'a [u32],
    /// Materials.
    pub materials: &'a [Material],
    /// Lights.
    pub lights: &'a [Light],
}

/// The surface a primary ray hit (`SurfacePoint` in glsl/common/shading.glsl).
struct SurfacePoint {
    position: Vec3,
    geometric_normal: Vec3,
    shading_normal: Vec3,
    albedo: Vec3,
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

fn sky(direction: Vec3) -> Vec3 {
    let up = (direction.normalize().y * 0.5 + 0.5).clamp(0.0, 1.0);
    Vec3::new(0.85, 0.85, 0.8).lerp(Vec3::new(0.35, 0.55, 0.9), up)
}

fn pack_srgb(linear: Vec3) -> [u8; 4] {
    let c = linear
        .clamp(Vec3::ZERO, Vec3::ONE)
        .powf(1.0 / 2.2)
        .to_array()
        .map(|v| (v * 255.0).round() as u8);
    [c[0], c[1], c[2], 255]
}

impl CpuScene<'_> {
    fn surface_at(&self, ray: &Ray, triangle: u32, u: f32, v: f32) -> SurfacePoint {
        let t = self.triangles[triangle as usize];
        let [a, b, c] = t.map(|i| Vec3::from(self.positions[i as usize]));
        let [na, nb, nc] = t.map(|i| Vec3::from(self.normals[i as usize]));
        let w = 1.0 - u - v;
        let position = w * a + u * b + v * c;
        let mut g = (b - a).cross(c - a).normalize();
        if g.dot(Vec3::from(ray.direction)) > 0.0 {
            g = -g;
        }
        let n = w * na + u * nb + v * nc;
        let length = n.length();
        let mut n = if length > 0.0 { n / length } else { g };
        if n.dot(g) < 0.0 {
            n = -n;
        }
        let material = self.materials[self.triangle_materials[triangle as usize] as usize];
        let mut albedo = Vec3::from(material.albedo);
        if material.checker_scale > 0.0 {
            let cx = (position.x / material.checker_scale).floor() as i32;
            let cz = (position.z / material.checker_scale).floor() as i32;
            if (cx + cz) & 1 != 0 {
                albedo *= 0.5;
            }
        }
        SurfacePoint {
            position,
            geometric_normal: g,
            shading_normal: n,
            albedo,
        }
    }

    fn shade(&self, bvh: &Lbvh, ray: &Ray, shading: &ShadingParams) -> Vec3 {
        let hit = closest_hit_bvh(self.positions, self.triangles, bvh, ray);
        if !hit.is_hit() {
            return sky(Vec3::from(ray.direction));
        }
        let s = self.surface_at(ray, hit.triangle, hit.u, hit.v);
        let origin = s.position + s.geometric_normal * shading.surface_offset;
        let mut colour = s.albedo * shading.ambient;
        for light in self.lights {
            let (to_light, tmax, irradiance) = light_towards(light, s.position);
            if to_light.dot(s.geometric_normal) <= 0.0 {
                continue;
            }
            let shadow = Ray {
                origin: origin.to_array(),
                tmin: 0.0,
                direction: to_light.to_array(),
                tmax,
            };
            if any_hit_bvh(self.positions, self.triangles, bvh, &shadow) {
                continue;
            }
            let cosine = s.shading_normal.dot(to_light.normalize()).max(0.0);
            colour += s.albedo * irradiance * cosine;
        }
        colour
    }

    /// The RGBA8 image (rows from the top) of this scene seen by `camera`.
    pub fn render(
        &self,
        camera: &Camera,
        width: u32,
        height: u32,
        shading: &ShadingParams,
    ) -> Vec<u8> {
        let bvh = build_lbvh(self.positions, self.triangles, MortonBits::Bits30);
        let mut image = Vec::with_capacity((width * height * 4) as usize);
        for y in 0..height {
            for x in 0..width {
                let ray = camera.primary_ray(x, y, width, height);
                image.extend(pack_srgb(self.shade(&bvh, &ray, shading)));
            }
        }
        image
    }
}
