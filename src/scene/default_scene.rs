//! The built-in default scene: a deforming torus of any resolution (1,000 to 20M triangles)
//! floating over a checkered ground square beside a mirror sphere and a glass sphere, lit by a
//! sun and a point light. The requested triangle count is the torus's; the ground adds 2
//! triangles and the spheres [`SPHERE_RINGS`]-band UV spheres, 2,208 triangles each.
//!
//! The topology (triangle indices) is made once on the CPU; the vertices of every frame are
//! made on the GPU by `glsl/scene/default_surface.comp` (the ground and the spheres, which do
//! not move, too), so no deformed vertex ever passes through the CPU. [`surface_point`] is the same surface on the CPU, the kernel's reference.

use super::shapes;
use crate::prims::WORKGROUP_SIZE;
use crate::shaders;
use crate::vk::{Buffer, Context, Error, Pipeline, Recorder, Result};
use std::sync::Arc;

/// Half the side of the ground square.
pub const GROUND_HALF_SIZE: f32 = 6.0;
/// Height of the ground plane.
pub const GROUND_HEIGHT: f32 = -0.6;
/// Material of the torus (index into the scene's materials).
pub const TORUS_MATERIAL: u32 = 0;
/// Material of the ground.
pub const GROUND_MATERIAL: u32 = 1;
/// Material of the mirror sphere.
pub const MIRROR_MATERIAL: u32 = 2;
/// Material of the glass sphere.
pub const GLASS_MATERIAL: u32 = 3;
/// The spheres resting on the ground beside the torus, as (centre, radius): the mirror
/// sphere, then the glass sphere.
pub const SPHERES: [([f32; 3], f32); 2] = [
    ([2.0, GROUND_HEIGHT + 0.7, -1.2], 0.7),
    ([-1.5, GROUND_HEIGHT + 0.65, 1.75], 0.65),
];
/// Latitude bands of the spheres ([`shapes::uv_sphere`]).
pub const SPHERE_RINGS: u32 = 24;

/// The torus point at ring angle `u` and tube angle `v` (radians) at `time` seconds.
pub fn surface_point(u: f32, v: f32, time: f32) -> [f32; 3] {
    let tube = 0.35
        * (1.0
            + 0.25 * (5.0 * u + 2.0 * time).sin() * (3.0 * v - 1.5 * time).sin()
            + 0.04 * (24.0 * u - 4.0 * time).sin() * (2.0 * v).cos());
    let ring = [u.cos(), 0.0, u.sin()];
    let centre = [ring[0], 0.2 * (2.0 * u + time).sin(), ring[2]];
    let p = [
        centre[0] + tube * v.cos() * ring[0],
        centre[1] + tube * v.sin(),
        centre[2] + tube * v.cos() * ring[2],
    ];
    let tilt = 0.6 + 0.2 * (0.5 * time).sin();
    let spin = 0.3 * time;
    let p = [
        p[0],
        p[1] * tilt.cos() - p[2] * tilt.sin(),
        p[1] * tilt.sin() + p[2] * tilt.cos(),
    ];
    [
        p[0] * spin.cos() + p[2] * spin.sin(),
        p[1] + 0.9,
        -p[0] * spin.sin() + p[2] * spin.cos(),
    ]
}

/// Push constants of `default_surface.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DefaultSurfacePush {
    /// Positions written.
    pub positions_address: u64,
    /// Normals written.
    pub normals_address: u64,
    /// Vertices around the ring.
    pub segments_u: u32,
    /// Vertices around the tube.
    pub segments_v: u32,
    /// Seconds.
    pub time: f32,
    /// Half the ground's side.
    pub ground_half_size: f32,
    /// Ground height.
    pub ground_height: f32,
    /// Latitude bands of the spheres.
    pub sphere_rings: u32,
    /// The spheres' centres and radii.
    pub spheres: [[f32; 4]; 2],
}

/// The default scene at a chosen resolution.
pub struct DefaultScene {
    /// Vertices around the ring (three times those around the tube).
    pub segments_u: u32,
    /// Vertices around the tube.
    pub segments_v: u32,
    pipeline: Arc<Pipeline>,
}

impl DefaultScene {
    /// The fewest and the most triangles the scene is made with.
    pub const TRIANGLE_RANGE: std::ops::RangeInclusive<u64> = 1_000..=20_000_000;

    /// The scene with about `triangles` triangles, in [`Self::TRIANGLE_RANGE`].
    pub fn new(ctx: &Context, triangles: u64) -> Result<Self> {
        if !Self::TRIANGLE_RANGE.contains(&triangles) {
            return Err(Error::InvalidInput(format!(
                "default scene of {triangles} triangles: expected {}..={}",
                Self::TRIANGLE_RANGE.start(),
                Self::TRIANGLE_RANGE.end()
            )));
        }
        let segments_v = ((triangles as f64 / 6.0).sqrt().round() as u32).max(10);
        Ok(Self {
            segments_u: 3 * segments_v,
            segments_v,
            pipeline: ctx.pipeline(&shaders::SCENE_DEFAULT_SURFACE, WORKGROUP_SIZE, &[])?,
        })
    }

    /// Vertices: the torus grid, the ground's four corners, then the mirror sphere's and the
    /// glass sphere's.
    pub fn vertex_count(&self) -> u32 {
        self.segments_u * self.segments_v + 4 + 2 * shapes::uv_sphere_vertex_count(SPHERE_RINGS)
    }

    /// Triangles: two per torus grid cell, the ground's two, then the spheres'.
    pub fn triangle_count(&self) -> u32 {
        2 * self.segments_u * self.segments_v + 2 + 2 * 4 * SPHERE_RINGS * (SPHERE_RINGS - 1)
    }

    /// The triangles (vertex indices) and each triangle's material.
    pub fn topology(&self) -> (Vec<[u32; 3]>, Vec<u32>) {
        let (nu, nv) = (self.segments_u, self.segments_v);
        let mut triangles = Vec::with_capacity(self.triangle_count() as usize);
        for j in 0..nv {
            for i in 0..nu {
                let at = |i: u32, j: u32| (j % nv) * nu + (i % nu);
                let (a, b, c, d) = (at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1));
                triangles.push([a, b, c]);
                triangles.push([a, c, d]);
            }
        }
        let mut materials = vec![TORUS_MATERIAL; triangles.len()];
        let ground = nu * nv;
        triangles.push([ground, ground + 2, ground + 3]);
        triangles.push([ground, ground + 3, ground + 1]);
        materials.extend([GROUND_MATERIAL; 2]);
        let sphere = shapes::uv_sphere([0.0; 3], 1.0, SPHERE_RINGS);
        let mut first = ground + 4;
        for material in [MIRROR_MATERIAL, GLASS_MATERIAL] {
            triangles.extend(sphere.triangles.iter().map(|t| t.map(|v| v + first)));
            materials.extend(std::iter::repeat_n(material, sphere.triangle_count()));
            first += sphere.vertex_count() as u32;
        }
        (triangles, materials)
    }

    /// Vertex `i`'s position at `time` on the CPU (the reference of [`Self::record`]).
    pub fn vertex(&self, i: u32, time: f32) -> [f32; 3] {
        let (nu, nv) = (self.segments_u, self.segments_v);
        if i < nu * nv {
            let tau = std::f32::consts::TAU;
            let u = tau * (i % nu) as f32 / nu as f32;
            let v = tau * (i / nu) as f32 / nv as f32;
            return surface_point(u, v, time);
        }
        let corner = i - nu * nv;
        if corner < 4 {
            let s = GROUND_HALF_SIZE;
            let pick = |bit: u32| if corner & bit != 0 { s } else { -s };
            return [pick(1), GROUND_HEIGHT, pick(2)];
        }
        let (centre, radius) = self.sphere_of(i).expect("a sphere vertex");
        let per_sphere = shapes::uv_sphere_vertex_count(SPHERE_RINGS);
        let normal = shapes::uv_sphere_normal(SPHERE_RINGS, (corner - 4) % per_sphere);
        std::array::from_fn(|a| centre[a] + radius * normal[a])
    }

    /// The sphere (centre, radius) vertex `i` belongs to, if any.
    pub fn sphere_of(&self, i: u32) -> Option<([f32; 3], f32)> {
        let first = self.segments_u * self.segments_v + 4;
        let per_sphere = shapes::uv_sphere_vertex_count(SPHERE_RINGS);
        SPHERES
            .get(i.checked_sub(first)? as usize / per_sphere as usize)
            .copied()
    }

    /// Records the vertices and normals of time `time` into `positions` and `normals`
    /// (12 bytes per vertex each).
    pub fn record(
        &self,
        rec: &mut Recorder,
        positions: &Buffer,
        normals: &Buffer,
        time: f32,
    ) -> Result<()> {
        let push = DefaultSurfacePush {
            positions_address: positions.address(),
            normals_address: normals.address(),
            segments_u: self.segments_u,
            segments_v: self.segments_v,
            time,
            ground_half_size: GROUND_HALF_SIZE,
            ground_height: GROUND_HEIGHT,
            sphere_rings: SPHERE_RINGS,
            spheres: SPHERES.map(|(c, r)| [c[0], c[1], c[2], r]),
        };
        rec.begin_stage("scene: deform");
        rec.dispatch(
            &self.pipeline,
            &push,
            self.vertex_count().div_ceil(WORKGROUP_SIZE),
        )?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }
}
