//! A scene on the device as the renderer's kernels read it (`glsl/common/shading.glsl`):
//! vertex positions and normals, triangles, a material per triangle, materials (diffuse,
//! mirror, glass) and lights.

use crate::scene::Mesh;
use crate::scene::material::{GpuLight, Light, Material};
use crate::vk::{Buffer, Context, Error, MemoryKind, Result};

/// The device buffers of a scene.
pub struct SceneGpu {
    /// Vertex positions (12 bytes each).
    pub positions: Buffer,
    /// Vertex normals (12 bytes each). Where a triangle's three are zero, its own normal
    /// shades it (flat shading).
    pub normals: Buffer,
    /// Triangles (three u32 each).
    pub triangles: Buffer,
    /// Material index of each triangle.
    pub triangle_materials: Buffer,
    /// The materials.
    pub materials: Buffer,
    /// The lights.
    pub lights: Buffer,
    /// Number of vertices.
    pub vertex_count: u32,
    /// Number of triangles.
    pub triangle_count: u32,
    /// Number of lights.
    pub light_count: u32,
}

impl SceneGpu {
    /// The triangles as builders take them.
    pub fn input(&self) -> crate::geom::TriangleInput<'_> {
        crate::geom::TriangleInput::whole(&self.positions, &self.triangles, self.triangle_count)
    }

    /// Uploads a static mesh, `triangle_materials[t]` indexing `materials` for triangle `t`;
    /// vertex normals are computed when the mesh has none.
    pub fn from_mesh(
        ctx: &Context,
        mesh: &Mesh,
        triangle_materials: &[u32],
        materials: &[Material],
        lights: &[Light],
    ) -> Result<Self> {
        let mut normals = mesh.normals.clone();
        if normals.len() != mesh.positions.len() {
            let mut with_normals = mesh.clone();
            with_normals.compute_vertex_normals();
            normals = with_normals.normals;
        }
        let scene = Self::allocate(
            ctx,
            mesh.positions.len() as u32,
            &mesh.triangles,
            triangle_materials,
            materials,
            lights,
        )?;
        ctx.upload(&scene.positions, 0, &mesh.positions)?;
        ctx.upload(&scene.normals, 0, &normals)?;
        Ok(scene)
    }

    /// Buffers for `vertex_count` vertices (written later, e.g. by a deformation kernel) and
    /// the given topology, materials and lights.
    pub fn allocate(
        ctx: &Context,
        vertex_count: u32,
        triangles: &[[u32; 3]],
        triangle_materials: &[u32],
        materials: &[Material],
        lights: &[Light],
    ) -> Result<Self> {
        if triangles.is_empty() || lights.is_empty() || materials.is_empty() {
            return Err(Error::InvalidInput(
                "a scene needs at least one triangle, one material and one light".into(),
            ));
        }
        if triangle_materials.len() != triangles.len() {
            return Err(Error::InvalidInput(format!(
                "{} triangle materials for {} triangles",
                triangle_materials.len(),
                triangles.len()
            )));
        }
        if let Some(bad) = triangles
            .iter()
            .position(|t| t.iter().any(|&v| v >= vertex_count))
        {
            return Err(Error::InvalidInput(format!(
                "triangle {bad} {:?} indexes past the last of {vertex_count} vertices",
                triangles[bad]
            )));
        }
        if let Some(bad) = triangle_materials
            .iter()
            .position(|&m| m as usize >= materials.len())
        {
            return Err(Error::InvalidInput(format!(
                "triangle {bad} uses material {} of {}",
                triangle_materials[bad],
                materials.len()
            )));
        }
        if let Some((i, e)) = materials
            .iter()
            .enumerate()
            .find_map(|(i, m)| m.validate().err().map(|e| (i, e)))
        {
            return Err(Error::InvalidInput(format!("material {i}: {e}")));
        }
        let gpu_lights: Vec<GpuLight> = lights.iter().map(|&l| l.into()).collect();
        let vertex_bytes = vertex_count.max(1) as u64 * 12;
        Ok(Self {
            positions: ctx.create_buffer("scene positions", vertex_bytes, MemoryKind::Device)?,
            normals: ctx.create_buffer("scene normals", vertex_bytes, MemoryKind::Device)?,
            triangles: ctx.create_buffer_with("scene triangles", triangles)?,
            triangle_materials: ctx
                .create_buffer_with("scene triangle materials", triangle_materials)?,
            materials: ctx.create_buffer_with("scene materials", materials)?,
            lights: ctx.create_buffer_with("scene lights", &gpu_lights)?,
            vertex_count,
            triangle_count: triangles.len() as u32,
            light_count: lights.len() as u32,
        })
    }
}
