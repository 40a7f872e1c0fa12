//! glTF 2.0 reader (`.gltf` with its buffers, or `.glb`) for static meshes.
//!
//! Walks the default scene (the first scene when none is marked default) and gathers every
//! triangle primitive of every node's mesh, with the node's world transform applied (see
//! [`Mesh::transformed`]). `TRIANGLES`, `TRIANGLE_STRIP` and `TRIANGLE_FAN` primitives are read,
//! indexed or not; points and lines are skipped with a warning. Skins, morph targets and
//! animations are not applied: a skinned mesh is read in its bind pose, placed by its node.
//! Normals are kept when every primitive read has them. Errors name the mesh, primitive and
//! accessor (0-based indices).
//!
//! Materials ([`load_with_materials`]) map to canopy's three kinds: a material with
//! `KHR_materials_transmission` (transmission factor at least 0.5) is glass of the
//! `KHR_materials_ior` index (1.5, glTF's default, without it) tinted by the base colour; a
//! fully metallic (metallic factor at least 0.99), smooth (roughness at most 0.05) one without
//! a metallic-roughness texture is a mirror reflecting its base colour; anything else is
//! diffuse with the base colour as albedo, blended with a metal by its metallic factor and
//! roughness (see [`Material::metallic`]). A primitive without a material gets white diffuse
//! (not glTF's default material, which is fully metallic); a file with no materials at all
//! yields none (the caller picks).
//!
//! Textures: a material's `baseColorTexture` multiplies its colour, its
//! `metallicRoughnessTexture` its metallic (blue) and roughness (green) factors, its
//! `normalTexture` (times its `scale`) bends its normals in tangent space, and its
//! `emissiveFactor` (times `KHR_materials_emissive_strength`) and `emissiveTexture` make it
//! emit, and its `occlusionTexture` darkens its ambient light, each through its `TEXCOORD_0`
//! or `TEXCOORD_1`, its `KHR_texture_transform` (read from the extension's JSON for normal and
//! occlusion textures, which the `gltf` crate does not model) and its sampler's wrap modes and
//! filters (see [`crate::scene::texture`]). Each image a material uses is
//! decoded once, with its mip levels (colour textures averaged in linear light) (PNG or JPEG, from a buffer view, a `data:` URI or a file as the buffers'
//! files are read); an image that is missing or cannot be decoded, and a texture whose set of
//! texture coordinates the primitive lacks, is an error naming the material and the image or
//! primitive. A normal texture reads the primitive's `TANGENT` (float VEC4, w the
//! bitangent's handedness), or MikkTSpace tangents made from its positions, normals and the
//! normal texture's texture coordinates where it has none; tangents are moved by the node's
//! transform as the normals are. `COLOR_0` (RGB or RGBA, float or normalized 8 or 16 bit)
//! multiplies the base colour and alpha. `alphaMode` `MASK` cuts the surface away where its
//! alpha (the base colour factor's times its texture's and `COLOR_0`'s) is below
//! `alphaCutoff`; `BLEND` is rendered as a mask at one half. `occlusionTexture` (its red,
//! times its `strength`) darkens the ambient term alone, the light no ray traces
//! ([`Material::occlusion_texture`]).
//!
//! `EXT_mesh_gpu_instancing` places a node's mesh once per instance of its `TRANSLATION`,
//! `ROTATION` (float, or normalized 8 or 16 bit) and `SCALE` accessors, each placement after the
//! node's own transform; every placement is a copy of the mesh's triangles. A node of more than
//! [`MAX_NODE_INSTANCES`] instances, or a file whose placed copies would make more than
//! [`MAX_PLACED_TRIANGLES`] triangles, is refused before any copy is made (a file of a few
//! bytes can place a mesh many times).

use std::path::Path;

use glam::Mat4;
use gltf::Semantic;
use gltf::accessor::{self, DataType, Dimensions};
use gltf::mesh::Mode;

use super::gltf_source::{AssetAccess, GltfFile, guarded};
use super::material::Material;
use super::mesh::{push_fan, push_strip, transform_tangents};
use super::tangents::mikktspace_tangents;
use super::texture::{Filter, MipFilter, Sampler, Texture, TextureRef, Wrap};
use super::{MaterialMesh, Mesh, Placements, SceneError};

/// The glTF extension that transforms a texture's coordinates.
const TEXTURE_TRANSFORM: &str = "KHR_texture_transform";
/// The glTF extension that places a node's mesh many times.
const MESH_INSTANCING: &str = "EXT_mesh_gpu_instancing";
/// The most triangles a file's meshes may make once each is copied for every node and
/// instance that places it (2^28: 3 GiB of vertex indices alone).
pub const MAX_PLACED_TRIANGLES: u64 = 1 << 28;
/// The most instances one node's `EXT_mesh_gpu_instancing` may hold (its accessors are read
/// before its mesh's size is known).
pub const MAX_NODE_INSTANCES: usize = 1 << 20;

/// Reads the glTF or GLB file at `path` and the buffers it refers to (from the model's folder
/// only, see [`AssetAccess`]). The mesh is not [validated](Mesh::validate).
pub fn load(path: &Path) -> Result<Mesh, SceneError> {
    Ok(load_with_materials(path, AssetAccess::ModelFolder)?.mesh)
}

/// The materials and textures of a file as [`walk_primitives`] reads them: each glTF
/// material and texture converted once, when a primitive first uses it.
#[derive(Default)]
pub(super) struct Appearance {
    /// The materials, in the order primitives first use them.
    pub materials: Vec<Material>,
    /// The textures the materials read.
    pub textures: Vec<Texture>,
    /// Index in `materials` of each glTF material converted so far (the default one last).
    material_ids: Vec<Option<u32>>,
    /// Index in `textures` of each glTF texture decoded so far.
    texture_ids: Vec<Option<u32>>,
}

impl Appearance {
    /// The index in `materials` of `material` (converted now if it is new), and which sets of
    /// texture coordinates it reads (bit 0: `TEXCOORD_0`, bit 1: `TEXCOORD_1`).
    fn material_id(
        &mut self,
        path: &Path,
        file: &GltfFile,
        material: &gltf::Material,
    ) -> Result<(u32, u32), SceneError> {
        let slot = material.index().unwrap_or(self.material_ids.len() - 1);
        let id = match self.material_ids[slot] {
            Some(id) => id,
            None => {
                let name = material
                    .index()
                    .map_or("the default material".into(), |i| format!("material {i}"));
                let converted = self
                    .convert(path, file, material)
                    .and_then(|m| m.validate().map(|()| m))
                    .map_err(|e| SceneError::malformed(path, name, e))?;
                self.materials.push(converted);
                *self.material_ids[slot].insert(self.materials.len() as u32 - 1)
            }
        };
        let sets = self.materials[id as usize]
            .textures()
            .iter()
            .filter(|(_, t)| t.is_some())
            .fold(0, |sets, (_, t)| sets | 1 << t.texcoord_set);
        Ok((id, sets))
    }

    /// The material canopy renders for a glTF material (see the module docs), or an error
    /// saying which of its values or images is at fault.
    fn convert(
        &mut self,
        path: &Path,
        file: &GltfFile,
        material: &gltf::Material,
    ) -> Result<Material, String> {
        if material.index().is_none() {
            return Ok(Material::diffuse([1.0; 3]));
        }
        let pbr = material.pbr_metallic_roughness();
        let [r, g, b, _] = pbr.base_color_factor();
        let colour = [r, g, b];
        let transmission = material
            .transmission()
            .map_or(0.0, |t| t.transmission_factor());
        let base_colour = self.texture_ref(path, file, pbr.base_color_texture())?;
        let (metallic, roughness) = (pbr.metallic_factor(), pbr.roughness_factor());
        let metal_texture = self.texture_ref(path, file, pbr.metallic_roughness_texture())?;
        let converted = if transmission >= 0.5 {
            Material::glass(material.ior().unwrap_or(1.5), colour)
        } else if metallic >= 0.99 && roughness <= 0.05 && !metal_texture.is_some() {
            Material::mirror(colour).with_metal(0.0, roughness, TextureRef::NONE)
        } else {
            Material::diffuse(colour).with_metal(metallic, roughness, metal_texture)
        };
        let converted = match material.normal_texture() {
            Some(normal) => {
                let reference = self.json_transformed_ref(
                    path,
                    file,
                    "normal texture",
                    &normal.texture(),
                    normal.tex_coord(),
                    normal.extension_value(TEXTURE_TRANSFORM),
                )?;
                converted.with_normal_map(reference, normal.scale())
            }
            None => converted,
        };
        // A strength outside [0, 1] is refused with the material's other values.
        let converted = match material.occlusion_texture() {
            Some(occlusion) => {
                let reference = self.json_transformed_ref(
                    path,
                    file,
                    "occlusion texture",
                    &occlusion.texture(),
                    occlusion.tex_coord(),
                    occlusion.extension_value(TEXTURE_TRANSFORM),
                )?;
                converted.with_occlusion(reference, occlusion.strength())
            }
            None => converted,
        };
        let strength = material.emissive_strength().unwrap_or(1.0);
        let emission = material.emissive_factor().map(|c| c * strength);
        let emissive = self.texture_ref(path, file, material.emissive_texture())?;
        let converted = converted
            .with_base_colour(base_colour)
            .with_emission(emission, emissive);
        let alpha = pbr.base_color_factor()[3];
        Ok(match material.alpha_mode() {
            gltf::material::AlphaMode::Opaque => converted,
            gltf::material::AlphaMode::Mask => {
                converted.with_cutout(alpha, material.alpha_cutoff().unwrap_or(0.5))
            }
            // Blending is not rendered: a blended surface is cut away where it is mostly
            // transparent (alpha below one half), whole elsewhere.
            gltf::material::AlphaMode::Blend => converted.with_cutout(alpha, 0.5),
        })
    }

    /// What a material reads through `info`: the texture (decoded now if it is new), its set
    /// of texture coordinates and its transform; [`TextureRef::NONE`] without one.
    fn texture_ref(
        &mut self,
        path: &Path,
        file: &GltfFile,
        info: Option<gltf::texture::Info>,
    ) -> Result<TextureRef, String> {
        let Some(info) = info else {
            return Ok(TextureRef::NONE);
        };
        let id = self.texture_id(path, file, &info.texture())?;
        let reference = match info.texture_transform() {
            Some(t) => TextureRef::new(id, t.tex_coord().unwrap_or(info.tex_coord()))
                .with_transform(t.offset(), t.rotation(), t.scale()),
            None => TextureRef::new(id, info.tex_coord()),
        };
        reference.validate()?;
        Ok(reference)
    }

    /// What a normal or occlusion texture (`what`, naming it in errors) reads: `texture`
    /// (decoded now if it is new) through its set of texture coordinates `set`, transformed as
    /// `transform` says: the `KHR_texture_transform` object, which the `gltf` crate leaves as
    /// JSON for these textures (its `offset`, `rotation`, `scale` and `texCoord`, each
    /// optional).
    fn json_transformed_ref(
        &mut self,
        path: &Path,
        file: &GltfFile,
        what: &str,
        texture: &gltf::Texture,
        set: u32,
        transform: Option<&serde_json::Value>,
    ) -> Result<TextureRef, String> {
        let id = self.texture_id(path, file, texture)?;
        transformed_by_json(id, set, transform).map_err(|e| format!("{what}: {e}"))
    }

    /// The index in `textures` of `texture`, decoded now if it is new.
    fn texture_id(
        &mut self,
        path: &Path,
        file: &GltfFile,
        texture: &gltf::Texture,
    ) -> Result<u32, String> {
        if let Some(id) = self.texture_ids[texture.index()] {
            return Ok(id);
        }
        let image = texture.source();
        let decoded = file
            .image_bytes(path, &image)
            .and_then(|bytes| Texture::decode(&bytes, sampler(&texture.sampler())))
            .map_err(|e| {
                let name = image.name().map_or(String::new(), |n| format!(" '{n}'"));
                format!("image {}{name}: {e}", image.index())
            })?;
        self.textures.push(decoded);
        Ok(*self.texture_ids[texture.index()].insert(self.textures.len() as u32 - 1))
    }
}

/// The reference to texture `id` through set `set` with the `KHR_texture_transform` object
/// `transform`, validated.
fn transformed_by_json(
    id: u32,
    set: u32,
    transform: Option<&serde_json::Value>,
) -> Result<TextureRef, String> {
    let reference = match transform {
        None => TextureRef::new(id, set),
        Some(transform) if !transform.is_object() => {
            return Err(format!("{TEXTURE_TRANSFORM} is not an object"));
        }
        Some(transform) => {
            let field = |name: &str| transform.get(name);
            let bad =
                |name: &str, what: &str| format!("{TEXTURE_TRANSFORM}'s '{name}' is not {what}");
            let number = |value: &serde_json::Value| value.as_f64().map(|v| v as f32);
            let pair = |name: &str, default: [f32; 2]| match field(name) {
                None => Ok(default),
                Some(value) => match value.as_array().map(|a| a.as_slice()) {
                    Some([a, b]) => match (number(a), number(b)) {
                        (Some(a), Some(b)) => Ok([a, b]),
                        _ => Err(bad(name, "two numbers")),
                    },
                    _ => Err(bad(name, "two numbers")),
                },
            };
            let rotation = match field("rotation") {
                None => 0.0,
                Some(value) => number(value).ok_or_else(|| bad("rotation", "a number"))?,
            };
            let set = match field("texCoord") {
                None => set,
                Some(value) => value
                    .as_u64()
                    .and_then(|s| u32::try_from(s).ok())
                    .ok_or_else(|| bad("texCoord", "a set of texture coordinates"))?,
            };
            let (offset, scale) = (pair("offset", [0.0, 0.0])?, pair("scale", [1.0, 1.0])?);
            TextureRef::new(id, set).with_transform(offset, rotation, scale)
        }
    };
    reference.validate()?;
    Ok(reference)
}

/// How glTF's sampler says a texture is read; a file that names no minification filter gets
/// trilinear filtering.
fn sampler(sampler: &gltf::texture::Sampler) -> Sampler {
    use gltf::texture::{MagFilter, MinFilter, WrappingMode};
    let wrap = |mode| match mode {
        WrappingMode::ClampToEdge => Wrap::ClampToEdge,
        WrappingMode::MirroredRepeat => Wrap::MirroredRepeat,
        WrappingMode::Repeat => Wrap::Repeat,
    };
    Sampler {
        wrap_u: wrap(sampler.wrap_s()),
        wrap_v: wrap(sampler.wrap_t()),
        filter: match sampler.mag_filter() {
            Some(MagFilter::Nearest) => Filter::Nearest,
            _ => Filter::Linear,
        },
        min_filter: match sampler.min_filter() {
            Some(
                MinFilter::Nearest
                | MinFilter::NearestMipmapNearest
                | MinFilter::NearestMipmapLinear,
            ) => Filter::Nearest,
            _ => Filter::Linear,
        },
        mip_filter: match sampler.min_filter() {
            Some(MinFilter::Nearest | MinFilter::Linear) => MipFilter::None,
            Some(MinFilter::NearestMipmapNearest | MinFilter::LinearMipmapNearest) => {
                MipFilter::Nearest
            }
            _ => MipFilter::Linear,
        },
    }
}

/// One triangle primitive of a node's mesh, as [`walk_primitives`] visits it.
pub(super) struct VisitedPrimitive<'a> {
    /// The node.
    pub node: gltf::Node<'a>,
    /// Where this copy of the node's mesh goes: the node's world transform times
    /// [`Self::placement`].
    pub world: Mat4,
    /// The placement within the node of this copy of its mesh (`EXT_mesh_gpu_instancing`),
    /// the identity for a node without instances.
    pub placement: Mat4,
    /// Which copy of the node's mesh this is (0 for a node without instances): every
    /// primitive of a copy is visited before the next copy's.
    pub copy: u32,
    /// The node's mesh.
    pub mesh: gltf::Mesh<'a>,
    /// The primitive.
    pub primitive: gltf::Primitive<'a>,
    /// Its triangles in the mesh's own space.
    pub part: Mesh,
    /// The texture coordinates of each of its vertices: `TEXCOORD_0` in the first two, then
    /// `TEXCOORD_1`, zero where the primitive lacks the set.
    pub texcoords: Vec<[f32; 4]>,
    /// Index of its material in the walk's materials, or none for a file without materials.
    pub material: Option<u32>,
    /// Its `TANGENT` values, if it has them.
    file_tangents: Option<Vec<[f32; 4]>>,
    /// The set of texture coordinates its material's normal texture reads, if it has one.
    normal_set: Option<u32>,
    /// Its `COLOR_0` as linear RGBA, if it has them.
    pub colours: Option<Vec<[f32; 4]>>,
}

impl VisitedPrimitive<'_> {
    /// The tangents its material's normal texture reads, in the mesh's own space: the file's
    /// (ignored, as glTF asks, where the primitive has no normals), else MikkTSpace's from the
    /// normal texture's set of texture coordinates; none when the material reads no normal
    /// texture.
    pub fn tangents(&self) -> Option<Vec<[f32; 4]>> {
        let set = self.normal_set? as usize;
        match &self.file_tangents {
            Some(tangents) if !self.part.normals.is_empty() => Some(tangents.clone()),
            _ => {
                let texcoords: Vec<[f32; 2]> = self
                    .texcoords
                    .iter()
                    .map(|t| [t[2 * set], t[2 * set + 1]])
                    .collect();
                Some(mikktspace_tangents(&self.part, &texcoords))
            }
        }
    }
}

/// Values of every vertex gathered primitive by primitive (tangents, colours), a fill value
/// standing in for a primitive without them.
#[derive(Default)]
pub(super) struct VertexValues {
    values: Vec<[f32; 4]>,
    any: bool,
}

impl VertexValues {
    /// Adds the `vertices` values of a primitive: `values`, or `fill` for each.
    pub fn extend(&mut self, values: Option<Vec<[f32; 4]>>, vertices: usize, fill: [f32; 4]) {
        match values {
            Some(values) => {
                self.any = true;
                self.values.extend(values);
            }
            None => self.values.extend(std::iter::repeat_n(fill, vertices)),
        }
    }

    /// The values of every vertex, or none when no primitive had any.
    pub fn finish(self) -> Vec<[f32; 4]> {
        if self.any { self.values } else { Vec::new() }
    }
}

/// Walks the default scene (the first when none is marked default), parents before children,
/// calling `visit` for each triangle primitive of each node's mesh, and returns the materials
/// the primitives' material indices refer to and their textures (see the module docs).
pub(super) fn walk_primitives(
    path: &Path,
    file: &GltfFile,
    mut visit: impl FnMut(VisitedPrimitive) -> Result<(), SceneError>,
) -> Result<Appearance, SceneError> {
    let document = &file.document;
    let mut appearance = Appearance {
        material_ids: vec![None; document.materials().len() + 1],
        texture_ids: vec![None; document.textures().len()],
        ..Appearance::default()
    };
    let Some(scene) = document
        .default_scene()
        .or_else(|| document.scenes().next())
    else {
        return Ok(appearance);
    };
    let with_materials = document.materials().len() > 0;
    let mut visited = vec![false; document.nodes().len()];
    let mut placed: u64 = 0;
    // Nodes still to visit with their parents' world transform, the next one last.
    let mut pending: Vec<_> = scene.nodes().map(|n| (n, Mat4::IDENTITY)).collect();
    pending.reverse();
    while let Some((node, parent)) = pending.pop() {
        if std::mem::replace(&mut visited[node.index()], true) {
            return Err(SceneError::malformed(
                path,
                format!("node {}", node.index()),
                "the node has more than one parent (node hierarchies must be trees)",
            ));
        }
        let world = parent * Mat4::from_cols_array_2d(&node.transform().matrix());
        if let Some(node_mesh) = node.mesh() {
            let placements = placements(path, file, &node)?;
            // Every primitive is read once, then visited once per copy, a copy's primitives
            // one after another.
            let mut reads = Vec::new();
            for primitive in node_mesh.primitives() {
                let Some(read) = read_primitive(path, &node_mesh, &primitive, &file.buffers)?
                else {
                    continue;
                };
                let material = if with_materials {
                    let (id, sets) = appearance.material_id(path, file, &primitive.material())?;
                    if let Some(set) = (0..2).find(|set| sets & !read.sets & 1 << set != 0) {
                        return Err(SceneError::malformed(
                            path,
                            format!("mesh {} primitive {}", node_mesh.index(), primitive.index()),
                            format!(
                                "its material ({}) reads texture coordinates TEXCOORD_{set}, \
                                 which the primitive does not have",
                                primitive
                                    .material()
                                    .index()
                                    .map_or("the default material".into(), |i| format!(
                                        "material {i}"
                                    ))
                            ),
                        ));
                    }
                    Some(id)
                } else {
                    None
                };
                placed += read.part.triangle_count() as u64 * placements.len() as u64;
                if placed > MAX_PLACED_TRIANGLES {
                    return Err(SceneError::malformed(
                        path,
                        format!("node {}", node.index()),
                        format!(
                            "the meshes placed up to this node make {placed} triangles, more \
                             than canopy reads ({MAX_PLACED_TRIANGLES})"
                        ),
                    ));
                }
                reads.push((primitive, read, material));
            }
            for (copy, &placement) in placements.iter().enumerate() {
                for (primitive, read, material) in &reads {
                    let normal_texture =
                        material.map(|id| appearance.materials[id as usize].normal_texture);
                    visit(VisitedPrimitive {
                        node: node.clone(),
                        world: world * placement,
                        placement,
                        copy: copy as u32,
                        mesh: node_mesh.clone(),
                        primitive: primitive.clone(),
                        part: read.part.clone(),
                        texcoords: read.texcoords.clone(),
                        material: *material,
                        file_tangents: read.tangents.clone(),
                        normal_set: normal_texture
                            .filter(TextureRef::is_some)
                            .map(|t| t.texcoord_set),
                        colours: read.colours.clone(),
                    })?;
                }
            }
        }
        let first_child = pending.len();
        pending.extend(node.children().map(|c| (c, world)));
        pending[first_child..].reverse();
    }
    Ok(appearance)
}

/// Reads the glTF or GLB file at `path` like [`load`], with a material per triangle (see the
/// module docs), its external buffers from where `access` allows. The mesh is not
/// [validated](Mesh::validate).
pub fn load_with_materials(path: &Path, access: AssetAccess) -> Result<MaterialMesh, SceneError> {
    static_mesh(path, &GltfFile::open(path, access)?)
}

/// The static mesh of a file read already, as [`load_with_materials`] makes it (a panic of the
/// `gltf` crate's readers an error, as for every reader of a [`GltfFile`]).
pub(super) fn static_mesh(path: &Path, file: &GltfFile) -> Result<MaterialMesh, SceneError> {
    guarded(path, "document", || read_static_mesh(path, file))?
}

fn read_static_mesh(path: &Path, file: &GltfFile) -> Result<MaterialMesh, SceneError> {
    let mut mesh = Mesh::default();
    let mut triangle_materials = Vec::new();
    let mut triangle_instances = Vec::new();
    let mut texcoords = Vec::new();
    let mut tangents = VertexValues::default();
    let mut colours = VertexValues::default();
    let mut placed = PlacementsRead::default();
    let appearance = walk_primitives(path, file, |visited| {
        placed.visit(&visited);
        mesh.append(&visited.part.transformed(visited.world));
        texcoords.extend_from_slice(&visited.texcoords);
        let vertices = visited.part.positions.len();
        let mut turned = visited.tangents();
        if let Some(turned) = &mut turned {
            transform_tangents(turned, visited.world);
        }
        tangents.extend(turned, vertices, [0.0; 4]);
        colours.extend(visited.colours.clone(), vertices, [1.0; 4]);
        if let Some(id) = visited.material {
            triangle_materials.resize(mesh.triangle_count(), id);
        }
        triangle_instances.resize(mesh.triangle_count(), visited.node.index() as u32);
        Ok(())
    })?;
    if appearance.textures.is_empty() {
        texcoords.clear();
    }
    // Mip levels are made once every material is read: colour textures (base colour,
    // emissive) average in linear light.
    let colour: Vec<bool> = (0..appearance.textures.len() as u32)
        .map(|id| {
            appearance.materials.iter().any(|m| {
                [m.base_colour_texture, m.emissive_texture]
                    .iter()
                    .any(|r| r.is_some() && r.texture == id)
            })
        })
        .collect();
    let textures = appearance
        .textures
        .into_iter()
        .zip(colour)
        .map(|(texture, srgb)| texture.with_mip_levels(srgb))
        .collect();
    Ok(MaterialMesh {
        mesh,
        triangle_materials,
        materials: appearance.materials,
        triangle_instances,
        instances: node_names(&file.document),
        texcoords,
        textures,
        tangents: tangents.finish(),
        colours: colours.finish(),
        placements: placed.finish(),
    })
}

/// The placements of a walk's copies ([`MaterialMesh::placements`]), gathered as
/// [`walk_primitives`] visits them.
#[derive(Default)]
struct PlacementsRead {
    placements: Placements,
    /// The placements' mesh of each glTF mesh seen.
    mesh_ids: std::collections::HashMap<usize, u32>,
    /// The last copy visited: its node and copy, and whether its mesh is being read (its
    /// first copy).
    current: Option<(usize, u32, bool)>,
}

impl PlacementsRead {
    /// Notes a visited primitive: a new copy where its node or copy is not the last one's, and
    /// its part added to its mesh while the mesh's first copy is being visited.
    fn visit(&mut self, visited: &VisitedPrimitive) {
        let key = (visited.node.index(), visited.copy);
        if self
            .current
            .is_none_or(|(node, copy, _)| (node, copy) != key)
        {
            let next = self.mesh_ids.len() as u32;
            let id = *self.mesh_ids.entry(visited.mesh.index()).or_insert(next);
            let first = id == next;
            if first {
                self.placements.meshes.push(Mesh::default());
            }
            self.placements.copies.push((id, visited.world));
            self.current = Some((key.0, key.1, first));
        }
        if let Some((_, _, true)) = self.current {
            let id = self.placements.copies.last().expect("a copy is open").0;
            self.placements.meshes[id as usize].append(&visited.part);
        }
    }

    /// The placements, when some mesh is placed more than once.
    fn finish(self) -> Option<Box<Placements>> {
        (self.placements.copies.len() > self.placements.meshes.len())
            .then(|| Box::new(self.placements))
    }
}

/// The name of each node of `document`, in the file's order: the instances of a mesh read
/// from it ([`MaterialMesh::instances`]).
pub(super) fn node_names(document: &gltf::Document) -> Vec<Option<String>> {
    document
        .nodes()
        .map(|n| n.name().map(String::from))
        .collect()
}

/// Where `node`'s mesh is placed within the node: each instance of its
/// `EXT_mesh_gpu_instancing` (translation, rotation and scale, each the identity where its
/// accessor is absent), or the identity alone for a node without the extension.
fn placements(path: &Path, file: &GltfFile, node: &gltf::Node) -> Result<Vec<Mat4>, SceneError> {
    let Some(extension) = node.extension_value(MESH_INSTANCING) else {
        return Ok(vec![Mat4::IDENTITY]);
    };
    let location = format!("node {} {MESH_INSTANCING}", node.index());
    let malformed = |what: String| SceneError::malformed(path, location.clone(), what);
    let attributes = extension
        .get("attributes")
        .and_then(serde_json::Value::as_object)
        .ok_or_else(|| malformed("it has no \"attributes\" object".into()))?;
    let buffer = |b: gltf::Buffer| file.buffers.get(b.index()).map(|data| &data[..]);
    // The attribute `name`'s accessor, checked to be of `dimensions` and one of `types`.
    let accessor = |name: &str, dimensions: Dimensions, types: &[DataType]| {
        let Some(index) = attributes.get(name) else {
            return Ok(None);
        };
        let accessor = index
            .as_u64()
            .and_then(|i| file.document.accessors().nth(usize::try_from(i).ok()?))
            .ok_or_else(|| malformed(format!("{name} names no accessor ({index})")))?;
        if accessor.count() > MAX_NODE_INSTANCES {
            return Err(malformed(format!(
                "{name} holds {} instances, more than canopy reads ({MAX_NODE_INSTANCES})",
                accessor.count()
            )));
        }
        if accessor.dimensions() != dimensions || !types.contains(&accessor.data_type()) {
            return Err(malformed(format!(
                "{name} is {:?} {:?}, expected {dimensions:?} of {types:?}",
                accessor.data_type(),
                accessor.dimensions()
            )));
        }
        Ok(Some(accessor))
    };
    let outside = |name: &str| malformed(format!("{name} data lies outside its buffer"));
    let vec3 = |name: &str| -> Result<Option<Vec<[f32; 3]>>, SceneError> {
        match accessor(name, Dimensions::Vec3, &[DataType::F32])? {
            Some(a) => Ok(Some(
                accessor::Iter::new(a, buffer)
                    .ok_or_else(|| outside(name))?
                    .collect(),
            )),
            None => Ok(None),
        }
    };
    let translations = vec3("TRANSLATION")?;
    let scales = vec3("SCALE")?;
    let rotation_types = [DataType::F32, DataType::I8, DataType::I16];
    let rotations: Option<Vec<[f32; 4]>> =
        match accessor("ROTATION", Dimensions::Vec4, &rotation_types)? {
            None => None,
            Some(a) => {
                let outside = || outside("ROTATION");
                Some(match a.data_type() {
                    DataType::I8 => accessor::Iter::<[i8; 4]>::new(a, buffer)
                        .ok_or_else(outside)?
                        .map(|q| q.map(|c| (c as f32 / 127.0).max(-1.0)))
                        .collect(),
                    DataType::I16 => accessor::Iter::<[i16; 4]>::new(a, buffer)
                        .ok_or_else(outside)?
                        .map(|q| q.map(|c| (c as f32 / 32767.0).max(-1.0)))
                        .collect(),
                    _ => accessor::Iter::<[f32; 4]>::new(a, buffer)
                        .ok_or_else(outside)?
                        .collect(),
                })
            }
        };
    let counts: Vec<usize> = [
        translations.as_ref().map(Vec::len),
        rotations.as_ref().map(Vec::len),
        scales.as_ref().map(Vec::len),
    ]
    .into_iter()
    .flatten()
    .collect();
    let count = *counts
        .first()
        .ok_or_else(|| malformed("it names none of TRANSLATION, ROTATION and SCALE".into()))?;
    if counts.iter().any(|&c| c != count) {
        return Err(malformed(format!(
            "its accessors hold different counts of instances ({counts:?})"
        )));
    }
    (0..count)
        .map(|i| {
            let t = translations.as_ref().map_or([0.0; 3], |v| v[i]);
            let r = rotations.as_ref().map_or([0.0, 0.0, 0.0, 1.0], |v| v[i]);
            let s = scales.as_ref().map_or([1.0; 3], |v| v[i]);
            let rotation = glam::Quat::from_array(r);
            let length = rotation.length();
            if !t.iter().chain(&r).chain(&s).all(|x| x.is_finite())
                || length.is_nan()
                || length <= 1e-6
            {
                return Err(malformed(format!(
                    "instance {i}: translation {t:?}, rotation {r:?}, scale {s:?} is not a \
                     placement"
                )));
            }
            Ok(Mat4::from_scale_rotation_translation(
                s.into(),
                rotation / length,
                t.into(),
            ))
        })
        .collect()
}

/// One triangle primitive as [`read_primitive`] reads it.
struct PrimitiveRead {
    /// Its triangles in its mesh's own space.
    part: Mesh,
    /// The texture coordinates of its vertices (see [`VisitedPrimitive::texcoords`]).
    texcoords: Vec<[f32; 4]>,
    /// Which sets it has: bit 0 `TEXCOORD_0`, bit 1 `TEXCOORD_1`.
    sets: u32,
    /// Its `TANGENT` values, if it has them.
    tangents: Option<Vec<[f32; 4]>>,
    /// Its `COLOR_0` as linear RGBA, if it has them.
    colours: Option<Vec<[f32; 4]>>,
}

/// One primitive's triangles and texture coordinates, or `None` for a primitive of points or
/// lines.
fn read_primitive(
    path: &Path,
    mesh: &gltf::Mesh,
    primitive: &gltf::Primitive,
    buffers: &[Vec<u8>],
) -> Result<Option<PrimitiveRead>, SceneError> {
    let location = format!("mesh {} primitive {}", mesh.index(), primitive.index());
    let accessor_error = |accessor: &gltf::Accessor, message: String| {
        SceneError::malformed(
            path,
            format!("{location} accessor {}", accessor.index()),
            message,
        )
    };
    let mode = primitive.mode();
    if !matches!(
        mode,
        Mode::Triangles | Mode::TriangleStrip | Mode::TriangleFan
    ) {
        log::warn!(
            "{}:{location}: skipping a {mode:?} primitive",
            path.display()
        );
        return Ok(None);
    }
    let buffer = |b: gltf::Buffer| buffers.get(b.index()).map(|data| &data[..]);

    // POSITION and NORMAL must be float VEC3 (quantized attributes are not read).
    let vec3 = |semantic: Semantic| -> Result<Option<Vec<[f32; 3]>>, SceneError> {
        let Some(accessor) = primitive.get(&semantic) else {
            return Ok(None);
        };
        if accessor.data_type() != DataType::F32 || accessor.dimensions() != Dimensions::Vec3 {
            return Err(accessor_error(
                &accessor,
                format!(
                    "{semantic:?} is {:?} {:?}, expected F32 Vec3",
                    accessor.data_type(),
                    accessor.dimensions()
                ),
            ));
        }
        let data = accessor::Iter::new(accessor.clone(), buffer).ok_or_else(|| {
            accessor_error(
                &accessor,
                format!("{semantic:?} data lies outside its buffer"),
            )
        })?;
        Ok(Some(data.collect()))
    };
    let positions = vec3(Semantic::Positions)?.ok_or_else(|| {
        SceneError::malformed(path, location.clone(), "the primitive has no POSITION")
    })?;
    let normals = vec3(Semantic::Normals)?.unwrap_or_default();
    if !normals.is_empty() && normals.len() != positions.len() {
        return Err(SceneError::malformed(
            path,
            location,
            format!(
                "{} normals for {} positions",
                normals.len(),
                positions.len()
            ),
        ));
    }

    let indices: Vec<u32> = match primitive.indices() {
        Some(accessor) => {
            if !matches!(
                accessor.data_type(),
                DataType::U8 | DataType::U16 | DataType::U32
            ) || accessor.dimensions() != Dimensions::Scalar
            {
                return Err(accessor_error(
                    &accessor,
                    format!(
                        "indices are {:?} {:?}, expected an unsigned integer scalar",
                        accessor.data_type(),
                        accessor.dimensions()
                    ),
                ));
            }
            let indices: Vec<u32> = primitive
                .reader(buffer)
                .read_indices()
                .ok_or_else(|| {
                    accessor_error(&accessor, "index data lies outside its buffer".into())
                })?
                .into_u32()
                .collect();
            if let Some(k) = indices.iter().position(|&i| i as usize >= positions.len()) {
                return Err(accessor_error(
                    &accessor,
                    format!(
                        "index {k} is {}, past the last of {} vertices",
                        indices[k],
                        positions.len()
                    ),
                ));
            }
            indices
        }
        None => (0..positions.len() as u32).collect(),
    };

    let mut texcoords = vec![[0.0f32; 4]; positions.len()];
    let mut present = 0;
    for set in 0..2 {
        let Some(accessor) = primitive.get(&Semantic::TexCoords(set)) else {
            continue;
        };
        if !matches!(
            accessor.data_type(),
            DataType::F32 | DataType::U8 | DataType::U16
        ) || accessor.dimensions() != Dimensions::Vec2
        {
            return Err(accessor_error(
                &accessor,
                format!(
                    "TEXCOORD_{set} is {:?} {:?}, expected F32, U8 or U16 Vec2",
                    accessor.data_type(),
                    accessor.dimensions()
                ),
            ));
        }
        let read = primitive
            .reader(buffer)
            .read_tex_coords(set)
            .ok_or_else(|| {
                accessor_error(
                    &accessor,
                    format!("TEXCOORD_{set} data lies outside its buffer"),
                )
            })?
            .into_f32();
        if read.len() != positions.len() {
            return Err(accessor_error(
                &accessor,
                format!(
                    "{} TEXCOORD_{set} values for {} positions",
                    read.len(),
                    positions.len()
                ),
            ));
        }
        for (to, [u, v]) in texcoords.iter_mut().zip(read) {
            if !(u.is_finite() && v.is_finite()) {
                return Err(accessor_error(
                    &accessor,
                    format!("TEXCOORD_{set} holds a non-finite value"),
                ));
            }
            to[2 * set as usize] = u;
            to[2 * set as usize + 1] = v;
        }
        present |= 1 << set;
    }

    let per_vertex = |accessor: &gltf::Accessor,
                      name: &str,
                      read: Option<Vec<[f32; 4]>>|
     -> Result<Vec<[f32; 4]>, SceneError> {
        let read = read.ok_or_else(|| {
            accessor_error(accessor, format!("{name} data lies outside its buffer"))
        })?;
        if read.len() != positions.len() {
            return Err(accessor_error(
                accessor,
                format!(
                    "{} {name} values for {} positions",
                    read.len(),
                    positions.len()
                ),
            ));
        }
        if read.iter().flatten().any(|c| !c.is_finite()) {
            return Err(accessor_error(
                accessor,
                format!("{name} holds a non-finite value"),
            ));
        }
        Ok(read)
    };
    let reader = primitive.reader(buffer);
    let tangents = match primitive.get(&Semantic::Tangents) {
        Some(accessor)
            if accessor.data_type() != DataType::F32
                || accessor.dimensions() != Dimensions::Vec4 =>
        {
            return Err(accessor_error(
                &accessor,
                format!(
                    "TANGENT is {:?} {:?}, expected F32 Vec4",
                    accessor.data_type(),
                    accessor.dimensions()
                ),
            ));
        }
        Some(accessor) => Some(per_vertex(
            &accessor,
            "TANGENT",
            reader.read_tangents().map(Iterator::collect),
        )?),
        None => None,
    };
    let colours = match primitive.get(&Semantic::Colors(0)) {
        Some(accessor)
            if !matches!(
                accessor.data_type(),
                DataType::F32 | DataType::U8 | DataType::U16
            ) || !matches!(accessor.dimensions(), Dimensions::Vec3 | Dimensions::Vec4) =>
        {
            return Err(accessor_error(
                &accessor,
                format!(
                    "COLOR_0 is {:?} {:?}, expected F32, U8 or U16 Vec3 or Vec4",
                    accessor.data_type(),
                    accessor.dimensions()
                ),
            ));
        }
        Some(accessor) => Some(per_vertex(
            &accessor,
            "COLOR_0",
            reader
                .read_colors(0)
                .map(|c| c.into_rgba_f32().map(|c| c.map(|v| v.max(0.0))).collect()),
        )?),
        None => None,
    };

    let mut triangles = Vec::new();
    match mode {
        Mode::TriangleStrip => push_strip(&indices, &mut triangles),
        Mode::TriangleFan => push_fan(&indices, &mut triangles),
        _ => {
            if !indices.len().is_multiple_of(3) {
                return Err(SceneError::malformed(
                    path,
                    location,
                    format!("{} vertices do not make whole triangles", indices.len()),
                ));
            }
            triangles.extend(indices.chunks_exact(3).map(|t| [t[0], t[1], t[2]]));
        }
    }
    Ok(Some(PrimitiveRead {
        part: Mesh {
            positions,
            normals,
            triangles,
        },
        texcoords,
        sets: present,
        tangents,
        colours,
    }))
}
