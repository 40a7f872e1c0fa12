//! The meshes benchmarks build over: the default scene at a given size, a random triangle
//! soup, and mesh files, each on the device with a host copy for the CPU references and the
//! rays.

use super::Result;
use crate::geom::TriangleInput;
use crate::rng::Rng;
use crate::scene::default_scene::DefaultScene;
use crate::scene::{Mesh, SceneError};
use crate::vk::{Buffer, Context, MemoryKind};
use std::path::Path;

/// A triangle mesh (or a point cloud: no triangles) on the device and on the host.
pub struct BenchMesh {
    /// What it is, as reports name it: `default scene`, `random soup`, or the file name.
    pub label: String,
    /// The vertex positions and triangles, as on the device.
    pub host: Mesh,
    /// Vertex positions on the device.
    pub positions: Buffer,
    /// Triangles on the device (one unused triangle for a point cloud).
    pub triangles: Buffer,
}

impl BenchMesh {
    /// Uploads `mesh` under `label`.
    pub fn from_mesh(ctx: &Context, label: impl Into<String>, mesh: Mesh) -> Result<Self> {
        // A point cloud still needs a triangle buffer to point at.
        let triangles: &[[u32; 3]] = if mesh.triangles.is_empty() {
            &[[0; 3]]
        } else {
            &mesh.triangles
        };
        Ok(Self {
            label: label.into(),
            positions: ctx.create_buffer_with("bench positions", &mesh.positions)?,
            triangles: ctx.create_buffer_with("bench triangles", triangles)?,
            host: mesh,
        })
    }

    /// The default scene at time 0 with about `triangles` triangles in its torus (the ground
    /// and the spheres add 4,418), its vertices made on the GPU.
    pub fn default_scene(ctx: &Context, triangles: u64) -> Result<Self> {
        let scene = DefaultScene::new(ctx, triangles)?;
        let vertices = scene.vertex_count() as usize;
        let positions =
            ctx.create_buffer("bench positions", 12 * vertices as u64, MemoryKind::Device)?;
        let normals =
            ctx.create_buffer("bench normals", 12 * vertices as u64, MemoryKind::Device)?;
        ctx.submit_and_wait(|rec| scene.record(rec, &positions, &normals, 0.0))?;
        let (topology, _) = scene.topology();
        let host = Mesh {
            positions: ctx.download(&positions, 0, vertices)?,
            normals: Vec::new(),
            triangles: topology,
        };
        Ok(Self {
            label: "default scene".into(),
            triangles: ctx.create_buffer_with("bench triangles", &host.triangles)?,
            positions,
            host,
        })
    }

    /// `n` random triangles of edge up to 1% of the unit cube they fill (a soup with no
    /// coherence, as in the driver builders' published figures), seeded: the same every run.
    pub fn soup(ctx: &Context, n: u32) -> Result<Self> {
        let mut rng = Rng::new(42);
        let mut positions: Vec<[f32; 3]> = Vec::with_capacity(3 * n as usize);
        for _ in 0..n {
            let c: [f32; 3] = std::array::from_fn(|_| rng.f32_in(0.0, 1.0));
            for _ in 0..3 {
                positions.push(std::array::from_fn(|a| c[a] + rng.f32_in(-0.01, 0.01)));
            }
        }
        let triangles = (0..n).map(|t| [3 * t, 3 * t + 1, 3 * t + 2]).collect();
        let mesh = Mesh {
            positions,
            normals: Vec::new(),
            triangles,
        };
        Self::from_mesh(ctx, "random soup", mesh)
    }

    /// The mesh in `path` (`.obj`, `.ply`, `.gltf`, `.glb`), labelled by its file name. A file
    /// with vertices but no faces (a scanned point cloud) loads as points, for the octree.
    /// The mesh is [fitted into the unit sphere](Mesh::fit_unit_sphere) first, so that boxes,
    /// areas and rays stay within `f32`'s range and precision whatever the file's units and
    /// placement (a structure's shape and SAH cost do not depend on either).
    pub fn load(ctx: &Context, path: &Path) -> Result<Self> {
        let mut mesh = match Mesh::load(path) {
            Err(SceneError::Empty { .. }) => Mesh {
                positions: Mesh::load_points(path)?,
                ..Mesh::default()
            },
            loaded => loaded?,
        };
        mesh.fit_unit_sphere();
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        );
        Self::from_mesh(ctx, label, mesh)
    }

    /// Triangles.
    pub fn triangle_count(&self) -> u32 {
        self.host.triangles.len() as u32
    }

    /// Vertices.
    pub fn vertex_count(&self) -> u32 {
        self.host.positions.len() as u32
    }

    /// The triangles as builders take them.
    pub fn input(&self) -> TriangleInput<'_> {
        TriangleInput::whole(&self.positions, &self.triangles, self.triangle_count())
    }

    /// The centre and radius of a sphere around the vertices (the unit sphere for none).
    pub fn bounding_sphere(&self) -> (glam::Vec3, f32) {
        match self.host.bounds() {
            Some((lo, hi)) => {
                let (lo, hi) = (glam::Vec3::from(lo), glam::Vec3::from(hi));
                (
                    (lo + hi) * 0.5,
                    ((hi - lo).length() * 0.5).max(f32::MIN_POSITIVE),
                )
            }
            None => (glam::Vec3::ZERO, 1.0),
        }
    }
}
