//! Rays at the edges of the traversal's arithmetic: directions with zero components (the slab
//! test's `0 * inf`), over a mesh of axis-aligned faces (boxes flat in one axis, rays along
//! them); origins inside the tree's boxes and on faces; and `tmin`/`tmax` at their edges (zero,
//! equal, just before and after a hit, past every hit, infinite).

use super::Scene;
use crate::common::{Rng, random_mesh};
use canopy::geom::ray::Ray;
use canopy::render::Camera;
use canopy::scene::Mesh;
use glam::Vec3;

/// A 4 x 4 x 4 grid of unit cubes' faces at integer coordinates (every face axis-aligned, so
/// many boxes are flat in one axis), with random triangles through it.
fn axis_aligned_mesh(rng: &mut Rng) -> Mesh {
    let mut mesh = random_mesh(rng, 120, 2.0, 0.4);
    for axis in 0..3 {
        for plane in 0..=4 {
            for u in 0..4 {
                for v in 0..4 {
                    let corner = |du: u32, dv: u32| {
                        let mut p = [0.0f32; 3];
                        p[axis] = plane as f32 - 2.0;
                        p[(axis + 1) % 3] = (u + du) as f32 - 2.0;
                        p[(axis + 2) % 3] = (v + dv) as f32 - 2.0;
                        p
                    };
                    let first = mesh.positions.len() as u32;
                    mesh.positions
                        .extend([corner(0, 0), corner(1, 0), corner(1, 1), corner(0, 1)]);
                    mesh.triangles.push([first, first + 1, first + 2]);
                    mesh.triangles.push([first, first + 2, first + 3]);
                }
            }
        }
    }
    mesh
}

/// The rays of the module docs.
fn edge_rays(rng: &mut Rng) -> Vec<Ray> {
    let ray = |origin: Vec3, direction: Vec3, tmin: f32, tmax: f32| Ray {
        origin: origin.into(),
        tmin,
        direction: direction.into(),
        tmax,
    };
    let mut rays = Vec::new();
    // Directions with one, two or no zero components, from outside, inside and on the faces
    // (origins on integer coordinates lie on face planes and edges).
    let directions: Vec<Vec3> = [
        [1.0, 0.0, 0.0],
        [-1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, -1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.0, 0.0, -1.0],
        [1.0, 1.0, 0.0],
        [0.0, -1.0, 1.0],
        [1.0, 0.0, -1.0],
        [1.0, 1.0, 1.0],
        [-0.0, 0.0, 1.0],
    ]
    .map(Vec3::from)
    .to_vec();
    for d in &directions {
        for _ in 0..12 {
            let inside = Vec3::new(
                rng.f32_in(-2.5, 2.5),
                rng.f32_in(-2.5, 2.5),
                rng.f32_in(-2.5, 2.5),
            );
            let on_grid = inside.round().clamp(Vec3::splat(-2.0), Vec3::splat(2.0));
            let on_face = Vec3::new(on_grid.x, inside.y, inside.z);
            let outside = inside - *d * 10.0;
            for origin in [inside, on_grid, on_face, outside] {
                rays.push(ray(origin, *d, 0.0, f32::INFINITY));
            }
            // Offset by half a cell: rays between the face planes, along them.
            rays.push(ray(on_grid + Vec3::splat(0.5), *d, 0.0, f32::INFINITY));
        }
    }
    // tmin and tmax at their edges, on rays that cross several faces.
    for _ in 0..40 {
        let origin = Vec3::new(
            rng.f32_in(-6.0, -4.0),
            rng.f32_in(-1.5, 1.5),
            rng.f32_in(-1.5, 1.5),
        );
        let d = Vec3::new(1.0, rng.f32_in(-0.1, 0.1), rng.f32_in(-0.1, 0.1));
        // The first face the ray crosses (at x = -2), and bounds just before and just after
        // it. Not closer to it than a relative 1e-4: there a device's own rounding decides
        // (Vulkan lets a division be off by 2.5 ulp), and no two devices need agree.
        let first = (-2.0 - origin.x) / d.x;
        let (before, after) = (first * (1.0 - 1e-4), first * (1.0 + 1e-4));
        for (tmin, tmax) in [
            (0.0, 0.0),
            (0.0, before),
            (0.0, after),
            (before, before),
            (before, after),
            (after, f32::INFINITY),
            (before, f32::INFINITY),
            (0.0, 1e-30),
            (1e30, f32::INFINITY),
            (0.0, f32::MAX),
        ] {
            rays.push(ray(origin, d, tmin, tmax));
        }
    }
    rays
}

/// A mesh of axis-aligned faces with random triangles through it, rays at the edges of the
/// traversal's arithmetic, and a camera that sees it all.
pub fn scene() -> Scene {
    let mut rng = Rng::new(42);
    let mesh = axis_aligned_mesh(&mut rng);
    let rays = edge_rays(&mut rng);
    Scene {
        mesh,
        rays,
        camera: Camera::orbit(Vec3::ZERO, 9.0, 30.0, 20.0, 45.0),
        label: "edge-case rays".into(),
    }
}
