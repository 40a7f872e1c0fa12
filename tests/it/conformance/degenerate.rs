//! Degenerate triangles: zero-area triangles (two corners on one point,
//! by a repeated index or by equal positions, in each pair of corners; all three on one
//! point; three corners on one line) and duplicate triangles, in view and out of it, mixed
//! into a random mesh. Every structure's GPU build passes its checker against the CPU
//! reference, and closest and any hits through it equal brute force: the rule of
//! `canopy::geom` (a degenerate triangle is never hit; builders keep it with its flat box).

use super::Scene;
use crate::common::{Rng, random_mesh, random_rays};
use canopy::geom::ray::Ray;
use canopy::render::Camera;
use canopy::scene::Mesh;
use glam::Vec3;

/// `base` with degenerate and duplicate triangles appended (and interleaved, so they share
/// leaves and bins with proper ones).
fn with_degenerate_triangles(base: &Mesh, rng: &mut Rng) -> Mesh {
    let mut mesh = base.clone();
    let add = |mesh: &mut Mesh, corners: [[f32; 3]; 3], shared: [usize; 3]| {
        // `shared[k] == j < k`: corner k repeats corner j's index instead of a copy.
        let mut t = [0u32; 3];
        for k in 0..3 {
            t[k] = if shared[k] < k {
                t[shared[k]]
            } else {
                mesh.positions.push(corners[k]);
                mesh.positions.len() as u32 - 1
            };
        }
        mesh.triangles.push(t);
    };
    // Multiples of 1/64: sums and products of a few are exact in f32.
    let dyadic = |x: f32| (x * 64.0).round() / 64.0;
    for i in 0..72 {
        let p: [f32; 3] = std::array::from_fn(|_| rng.f32_in(-1.0, 1.0));
        let q: [f32; 3] = std::array::from_fn(|a| p[a] + rng.f32_in(-0.4, 0.4));
        let (pd, qd) = (p.map(dyadic), q.map(dyadic));
        let on_line = |s: f32| -> [f32; 3] { std::array::from_fn(|a| pd[a] + s * (qd[a] - pd[a])) };
        let d: [f32; 3] = std::array::from_fn(|a| q[a] - p[a]);
        let along = |s: f32| -> [f32; 3] { std::array::from_fn(|a| p[a] + s * d[a]) };
        let no = [0, 1, 2];
        match i % 12 {
            // Two corners on one point, by equal positions, in each pair.
            0 => add(&mut mesh, [p, p, q], no),
            1 => add(&mut mesh, [q, p, p], no),
            2 => add(&mut mesh, [p, q, p], no),
            // ... and by a repeated index.
            3 => add(&mut mesh, [p, q, q], [0, 1, 1]),
            4 => add(&mut mesh, [p, q, p], [0, 1, 0]),
            // All three on one point.
            5 => add(&mut mesh, [p, p, p], no),
            6 => add(&mut mesh, [q, q, q], [0, 0, 0]),
            // Three corners on one line, exactly: halfway, and a needle across the view.
            7 => add(&mut mesh, [pd, on_line(0.5), qd], no),
            8 => add(&mut mesh, [on_line(-8.0), pd, on_line(8.0)], no),
            // Nearly on one line (as f32 rounds the middle corner).
            9 => add(&mut mesh, [along(-20.0), along(0.3), along(20.0)], no),
            // A duplicate of a proper triangle, by its indices and by copies of its corners.
            _ => {
                let t = base.triangles[rng.below(base.triangles.len() as u32) as usize];
                mesh.triangles.push(t);
                let corners = t.map(|v| base.positions[v as usize]);
                add(&mut mesh, corners, no);
            }
        }
    }
    mesh
}

/// A random mesh with degenerate and duplicate triangles mixed in, random rays and rays aimed
/// at the degenerate triangles' corners and middles, and a camera that sees it all.
pub fn scene() -> Scene {
    let mut rng = Rng::new(36);
    let base = random_mesh(&mut rng, 300, 1.0, 0.2);
    let mesh = with_degenerate_triangles(&base, &mut rng);
    assert!(mesh.degenerate_triangle_count() >= 54);
    let mut rays = random_rays(&mut rng, &mesh, 1500);
    for t in &mesh.triangles[base.triangle_count()..] {
        let [a, b, c] = t.map(|v| Vec3::from(mesh.positions[v as usize]));
        for target in [a, (a + b + c) / 3.0, (b + c) * 0.5] {
            let origin = Vec3::new(0.3, 2.5, -3.0);
            rays.push(Ray {
                origin: origin.into(),
                tmin: 0.0,
                direction: (target - origin).into(),
                tmax: f32::INFINITY,
            });
        }
    }
    Scene {
        mesh,
        rays,
        camera: Camera::orbit(Vec3::ZERO, 3.5, 30.0, 20.0, 45.0),
        label: "degenerate and duplicate triangles".into(),
    }
}
