//! A scene on the device as the renderer's kernels read it (`glsl/common/shading.glsl`):
//! vertex positions and normals, triangles, a material per triangle, the appearance (the
//! materials, with the textures they read and each vertex's texture coordinates, tangents and
//! colour) and lights.

use crate::scene::Mesh;
use crate::scene::environment::{Environment, GpuEnvironment};
use crate::scene::material::{GpuLight, Light, Material};
use crate::scene::texture::{GpuTexture, Texture, full_level_count, texel_count};
use crate::vk::{Buffer, Context, Error, MemoryKind, Result};

/// What a scene's surfaces are made of, as [`SceneGpu`] takes it.
#[derive(Clone, Copy, Debug)]
pub struct Surfaces<'a> {
    /// Index into `materials` of each triangle.
    pub triangle_materials: &'a [u32],
    /// The instance each triangle came from (the `instance_id` channel); may be empty (every
    /// triangle instance 0).
    pub triangle_instances: &'a [u32],
    /// The materials.
    pub materials: &'a [Material],
    /// Texture coordinates of each vertex (`TEXCOORD_0`, then `TEXCOORD_1`); may be empty
    /// when no material reads a texture.
    pub texcoords: &'a [[f32; 4]],
    /// The textures the materials read.
    pub textures: &'a [Texture],
    /// Tangent of each vertex (xyz, handedness in w), in the positions' space; may be empty
    /// when no material reads a normal texture.
    pub tangents: &'a [[f32; 4]],
    /// Colour of each vertex (linear RGBA), multiplying the base colour and alpha; may be
    /// empty (white).
    pub colours: &'a [[f32; 4]],
}

impl<'a> Surfaces<'a> {
    /// Surfaces without textures.
    pub fn untextured(triangle_materials: &'a [u32], materials: &'a [Material]) -> Self {
        Self {
            triangle_materials,
            triangle_instances: &[],
            materials,
            texcoords: &[],
            textures: &[],
            tangents: &[],
            colours: &[],
        }
    }

    /// The instance `triangle` came from.
    pub fn instance_of(&self, triangle: u32) -> u32 {
        self.triangle_instances
            .get(triangle as usize)
            .copied()
            .unwrap_or(0)
    }
}

/// The head of the appearance buffer (`Appearance` in `glsl/common/shading.glsl`); the
/// materials follow it. 120 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct AppearanceHead {
    /// Address of the texture coordinates.
    pub texcoords: u64,
    /// Address of the [`GpuTexture`] table.
    pub textures: u64,
    /// Address of the texels.
    pub texels: u64,
    /// Address of the triangles.
    pub triangles: u64,
    /// Address of the triangles' materials.
    pub triangle_materials: u64,
    /// Address of the vertex tangents, or 0 where no material reads a normal texture.
    pub tangents: u64,
    /// Address of the vertex colours, or 0 for none (white).
    pub colours: u64,
    /// Address of the triangles' instances, or 0 for none (every triangle instance 0).
    pub triangle_instances: u64,
    /// Address of the lights ([`GpuLight`] each).
    pub lights: u64,
    /// Materials.
    pub material_count: u32,
    /// Textures.
    pub texture_count: u32,
    /// Lights.
    pub light_count: u32,
    /// Zero.
    pub pad: u32,
    /// The environment.
    pub environment: GpuEnvironment,
}

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
    /// An [`AppearanceHead`]: the addresses of the five buffers below, of the triangles and
    /// their materials and of the lights, the counts of materials, textures and lights and the
    /// environment, then the
    /// materials:
    /// what shading reads, and what traversals read to pass through cut-outs
    /// ([`SceneGpu::cutouts`]).
    pub appearance: Buffer,
    /// Texture coordinates of each vertex (16 bytes each; one zero entry without textures).
    pub texcoords: Buffer,
    /// A [`GpuTexture`] per texture (one zero entry without textures).
    pub textures: Buffer,
    /// Every texture's texels, one after another (RGBA8 in a u32; one zero without textures).
    pub texels: Buffer,
    /// Tangents of each vertex (16 bytes each), where a material reads a normal texture.
    pub tangents: Option<Buffer>,
    /// Colours of each vertex (16 bytes each), where the scene has them.
    pub colours: Option<Buffer>,
    /// Instance of each triangle, where the surfaces give them.
    pub triangle_instances: Option<Buffer>,
    /// The lights.
    pub lights: Buffer,
    /// Number of vertices.
    pub vertex_count: u32,
    /// Number of triangles.
    pub triangle_count: u32,
    /// Number of materials.
    pub material_count: u32,
    /// Number of lights.
    pub light_count: u32,
    /// The environment's texels (RGB f32), when [`SceneGpu::set_environment`] gave one.
    environment: Option<Buffer>,
    /// What the appearance buffer starts with.
    head: AppearanceHead,
    /// Whether some material cuts out ([`SceneGpu::cutouts`]).
    cuts_out: bool,
}

impl SceneGpu {
    /// The triangles as builders take them.
    pub fn input(&self) -> crate::geom::TriangleInput<'_> {
        crate::geom::TriangleInput::whole(&self.positions, &self.triangles, self.triangle_count)
    }

    /// Uploads a static mesh with its surfaces; vertex normals are computed when the mesh has
    /// none.
    pub fn from_mesh(
        ctx: &Context,
        mesh: &Mesh,
        surfaces: &Surfaces,
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
            surfaces,
            lights,
        )?;
        ctx.upload(&scene.positions, 0, &mesh.positions)?;
        ctx.upload(&scene.normals, 0, &normals)?;
        Ok(scene)
    }

    /// Buffers for `vertex_count` vertices (written later, e.g. by a deformation kernel) and
    /// the given topology, surfaces and lights.
    pub fn allocate(
        ctx: &Context,
        vertex_count: u32,
        triangles: &[[u32; 3]],
        surfaces: &Surfaces,
        lights: &[Light],
    ) -> Result<Self> {
        let Surfaces {
            triangle_materials,
            materials,
            ..
        } = *surfaces;
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
        if !surfaces.triangle_instances.is_empty()
            && surfaces.triangle_instances.len() != triangles.len()
        {
            return Err(Error::InvalidInput(format!(
                "{} triangle instances for {} triangles",
                surfaces.triangle_instances.len(),
                triangles.len()
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
        let table = texture_table(surfaces, vertex_count)?;
        let texels: Vec<u32> = surfaces
            .textures
            .iter()
            .flat_map(|t| t.texels.iter().copied())
            .collect();
        let tangents = optional_buffer(ctx, "scene tangents", surfaces.tangents)?;
        let colours = optional_buffer(ctx, "scene vertex colours", surfaces.colours)?;
        let triangle_instances =
            optional_buffer(ctx, "scene triangle instances", surfaces.triangle_instances)?;
        let texcoords =
            ctx.create_buffer_with("scene texture coordinates", &or_zero(surfaces.texcoords))?;
        let textures = ctx.create_buffer_with("scene textures", &or_zero(&table))?;
        let texels = ctx.create_buffer_with("scene texels", &or_zero(&texels))?;
        let triangle_buffer = ctx.create_buffer_with("scene triangles", triangles)?;
        let triangle_materials =
            ctx.create_buffer_with("scene triangle materials", triangle_materials)?;
        let gpu_lights: Vec<GpuLight> = lights.iter().map(|&l| l.into()).collect();
        let lights = ctx.create_buffer_with("scene lights", &gpu_lights)?;
        let head = AppearanceHead {
            texcoords: texcoords.address(),
            textures: textures.address(),
            texels: texels.address(),
            triangles: triangle_buffer.address(),
            triangle_materials: triangle_materials.address(),
            tangents: tangents.as_ref().map_or(0, Buffer::address),
            colours: colours.as_ref().map_or(0, Buffer::address),
            triangle_instances: triangle_instances.as_ref().map_or(0, Buffer::address),
            lights: lights.address(),
            material_count: materials.len() as u32,
            texture_count: table.len() as u32,
            light_count: gpu_lights.len() as u32,
            pad: 0,
            environment: GpuEnvironment::default(),
        };
        let mut appearance = bytemuck::bytes_of(&head).to_vec();
        appearance.extend_from_slice(bytemuck::cast_slice(materials));
        let vertex_bytes = vertex_count.max(1) as u64 * 12;
        Ok(Self {
            positions: ctx.create_buffer("scene positions", vertex_bytes, MemoryKind::Device)?,
            normals: ctx.create_buffer("scene normals", vertex_bytes, MemoryKind::Device)?,
            triangles: triangle_buffer,
            triangle_materials,
            appearance: ctx.create_buffer_with("scene appearance", &appearance)?,
            texcoords,
            textures,
            texels,
            tangents,
            colours,
            triangle_instances,
            lights,
            vertex_count,
            triangle_count: triangles.len() as u32,
            material_count: materials.len() as u32,
            light_count: gpu_lights.len() as u32,
            environment: None,
            head,
            cuts_out: materials.iter().any(Material::cuts_out),
        })
    }

    /// What traversals read to pass through the cut-outs of [`AlphaMode::Mask`]
    /// materials (the appearance buffer), or none when no material cuts out: the
    /// `cutouts` of a [`crate::accel::TraversalBatch`] or [`crate::accel::CameraBatch`].
    ///
    /// [`AlphaMode::Mask`]: crate::scene::AlphaMode::Mask
    pub fn cutouts(&self) -> Option<&Buffer> {
        self.cuts_out.then_some(&self.appearance)
    }

    /// Lights the scene with `environment` (its texels uploaded here), or with the procedural
    /// sky for none.
    pub fn set_environment(
        &mut self,
        ctx: &Context,
        environment: Option<&Environment>,
    ) -> Result<()> {
        self.environment = None;
        self.head.environment = GpuEnvironment::default();
        if let Some(environment) = environment {
            let finite = environment.intensity.is_finite() && environment.intensity >= 0.0;
            if !(finite && environment.rotation_degrees.is_finite()) {
                return Err(Error::InvalidInput(format!(
                    "environment intensity {} and rotation {} must be finite, the intensity \
                     non-negative",
                    environment.intensity, environment.rotation_degrees
                )));
            }
            if environment.texels.len() as u64
                != environment.width as u64 * environment.height as u64
                || environment.texels.is_empty()
            {
                return Err(Error::InvalidInput(format!(
                    "environment of {} texels for {}x{}",
                    environment.texels.len(),
                    environment.width,
                    environment.height
                )));
            }
            let texels = ctx.create_buffer_with("scene environment", &environment.texels)?;
            self.head.environment = environment.head(texels.address());
            self.environment = Some(texels);
        }
        ctx.upload(&self.appearance, 0, bytemuck::bytes_of(&self.head))
    }
}

/// `data`, or one zero element in its place when it is empty (a buffer is never empty).
fn or_zero<T: bytemuck::Pod>(data: &[T]) -> std::borrow::Cow<'_, [T]> {
    if data.is_empty() {
        vec![T::zeroed()].into()
    } else {
        data.into()
    }
}

/// The device's table of `surfaces`' textures, after checking that every texture a material
/// reads exists, that each texture holds its texels, that there are texture coordinates for
/// every vertex where any material reads a texture and tangents where one reads a normal
/// texture, and that the tangents and colours, where given, are finite and one per vertex.
fn texture_table(surfaces: &Surfaces, vertex_count: u32) -> Result<Vec<GpuTexture>> {
    for (name, values) in [
        ("tangents", surfaces.tangents),
        ("vertex colours", surfaces.colours),
    ] {
        if !values.is_empty() && values.len() != vertex_count as usize {
            return Err(Error::InvalidInput(format!(
                "{} {name} for {vertex_count} vertices",
                values.len()
            )));
        }
        if values.iter().flatten().any(|c| !c.is_finite()) {
            return Err(Error::InvalidInput(format!(
                "one of the {name} is not finite"
            )));
        }
    }
    if surfaces.tangents.is_empty()
        && let Some(i) = surfaces
            .materials
            .iter()
            .position(|m| m.normal_texture.is_some())
    {
        return Err(Error::InvalidInput(format!(
            "material {i} reads a normal texture, and the vertices have no tangents"
        )));
    }
    let textured = surfaces
        .materials
        .iter()
        .any(|m| m.textures().iter().any(|(_, t)| t.is_some()));
    for (i, material) in surfaces.materials.iter().enumerate() {
        for (name, texture) in material.textures() {
            if texture.is_some() && texture.texture as usize >= surfaces.textures.len() {
                return Err(Error::InvalidInput(format!(
                    "material {i}: its {name} is texture {} of {}",
                    texture.texture,
                    surfaces.textures.len()
                )));
            }
        }
    }
    if textured && surfaces.texcoords.len() != vertex_count as usize {
        return Err(Error::InvalidInput(format!(
            "{} texture coordinates for {vertex_count} vertices",
            surfaces.texcoords.len()
        )));
    }
    if surfaces.texcoords.iter().flatten().any(|c| !c.is_finite()) {
        return Err(Error::InvalidInput(
            "a texture coordinate is not finite".into(),
        ));
    }
    let mut first_texel = 0u64;
    let mut table = Vec::with_capacity(surfaces.textures.len());
    for (i, texture) in surfaces.textures.iter().enumerate() {
        let (width, height, levels) = (texture.width, texture.height, texture.levels);
        let texels = texel_count(width, height, levels);
        if width == 0
            || height == 0
            || !(1..=full_level_count(width, height)).contains(&levels)
            || texels != texture.texels.len() as u64
        {
            return Err(Error::InvalidInput(format!(
                "texture {i}: {} texels for {width}x{height} in {levels} levels",
                texture.texels.len(),
            )));
        }
        if first_texel + texels > 1 << 32 {
            return Err(Error::InvalidInput(
                "the textures hold more than 2^32 texels".into(),
            ));
        }
        table.push(GpuTexture {
            first_texel: first_texel as u32,
            width,
            height,
            sampling: texture.sampler.bits() | levels << 8,
        });
        first_texel += texels;
    }
    Ok(table)
}

/// A buffer holding `values`, or none where there are none.
fn optional_buffer<T: bytemuck::Pod>(
    ctx: &Context,
    name: &str,
    values: &[T],
) -> Result<Option<Buffer>> {
    (!values.is_empty())
        .then(|| ctx.create_buffer_with(name, values))
        .transpose()
}
