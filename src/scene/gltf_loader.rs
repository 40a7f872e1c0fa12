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
//! fully metallic (metallic factor at least 0.99), smooth (roughness at most 0.05) one is a
//! mirror reflecting its base colour; anything else is diffuse with the base colour as albedo
//! (textures are not read). A primitive without a material gets glTF's default material, white
//! diffuse; a file with no materials at all yields none (the caller picks).

use std::path::Path;

use glam::Mat4;
use gltf::Semantic;
use gltf::accessor::{self, DataType, Dimensions};
use gltf::mesh::Mode;

use super::material::Material;
use super::mesh::{push_fan, push_strip};
use super::{MaterialMesh, Mesh, SceneError};

/// Reads the glTF or GLB file at `path` and the buffers it refers to. The mesh is not
/// [validated](Mesh::validate).
pub fn load(path: &Path) -> Result<Mesh, SceneError> {
    Ok(load_with_materials(path)?.mesh)
}

/// The material canopy renders for a glTF material (see the module docs), or an error saying
/// which of its values is out of range.
pub fn convert_material(material: &gltf::Material) -> Result<Material, String> {
    let pbr = material.pbr_metallic_roughness();
    let [r, g, b, _] = pbr.base_color_factor();
    let colour = [r, g, b];
    let transmission = material
        .transmission()
        .map_or(0.0, |t| t.transmission_factor());
    let converted = if transmission >= 0.5 {
        Material::glass(material.ior().unwrap_or(1.5), colour)
    } else if pbr.metallic_factor() >= 0.99 && pbr.roughness_factor() <= 0.05 {
        Material::mirror(colour)
    } else {
        Material::diffuse(colour)
    };
    converted.validate()?;
    Ok(converted)
}

/// A GLB file (by its magic) shorter than its header or than the length its header declares
/// is truncated: say so and where, rather than the reader's "failed to fill whole buffer".
fn check_glb_length(path: &Path) -> Result<(), SceneError> {
    let bytes = std::fs::metadata(path)
        .map_err(|e| SceneError::io(path, e))?
        .len();
    let mut header = [0u8; 12];
    let mut file = std::fs::File::open(path).map_err(|e| SceneError::io(path, e))?;
    let read = std::io::Read::read(&mut file, &mut header).map_err(|e| SceneError::io(path, e))?;
    let is_glb = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("glb"));
    if is_glb && read < header.len() {
        return Err(SceneError::malformed(
            path,
            "header",
            format!("the file is truncated: {bytes} bytes, a GLB header alone is 12"),
        ));
    }
    if &header[..4] == b"glTF" {
        let declared = u32::from_le_bytes([header[8], header[9], header[10], header[11]]) as u64;
        if declared > bytes {
            return Err(SceneError::malformed(
                path,
                "header",
                format!(
                    "the file is truncated: its header declares {declared} bytes, the file has \
                     {bytes} (it ends {} bytes early)",
                    declared - bytes
                ),
            ));
        }
    }
    Ok(())
}

/// After a buffer failed to load: the first buffer kept in a file beside a `.gltf` that cannot
/// be read, named with its file (the reader's own error names only the `.gltf`).
fn missing_buffer(path: &Path, document: &gltf::Document) -> Option<SceneError> {
    let folder = path.parent().unwrap_or(Path::new("."));
    document.buffers().find_map(|buffer| match buffer.source() {
        gltf::buffer::Source::Uri(uri) if !uri.starts_with("data:") => {
            let file = folder.join(uri);
            std::fs::metadata(&file).err().map(|e| {
                SceneError::malformed(
                    path,
                    format!("buffer {}", buffer.index()),
                    format!("its file {} cannot be read: {e}", file.display()),
                )
            })
        }
        _ => None,
    })
}

/// A glTF or GLB file read with its buffers.
pub(super) struct GltfFile {
    /// The JSON document.
    pub document: gltf::Document,
    /// The buffers' bytes.
    pub buffers: Vec<gltf::buffer::Data>,
}

impl GltfFile {
    /// Reads the file at `path` and the buffers it refers to.
    pub fn open(path: &Path) -> Result<Self, SceneError> {
        let document_error = |e: gltf::Error| match e {
            gltf::Error::Io(e) => SceneError::io(path, e),
            e => SceneError::malformed(path, "document", e.to_string()),
        };
        check_glb_length(path)?;
        let gltf::Gltf { document, blob } = gltf::Gltf::open(path).map_err(document_error)?;
        let buffers =
            gltf::import_buffers(&document, path.parent(), blob).map_err(|e| match e {
                gltf::Error::Io(e) => {
                    missing_buffer(path, &document).unwrap_or(SceneError::io(path, e))
                }
                e => document_error(e),
            })?;
        Ok(Self { document, buffers })
    }

    /// The bytes of `buffer`, for the crate's accessor readers.
    pub fn buffer<'s>(&'s self) -> impl Clone + Fn(gltf::Buffer) -> Option<&'s [u8]> {
        |b: gltf::Buffer| self.buffers.get(b.index()).map(|data| &data.0[..])
    }
}

/// One triangle primitive of a node's mesh, as [`walk_primitives`] visits it.
pub(super) struct VisitedPrimitive<'a> {
    /// The node.
    pub node: gltf::Node<'a>,
    /// Its world transform.
    pub world: Mat4,
    /// The node's mesh.
    pub mesh: gltf::Mesh<'a>,
    /// The primitive.
    pub primitive: gltf::Primitive<'a>,
    /// Its triangles in the mesh's own space.
    pub part: Mesh,
    /// Index of its material in the walk's materials, or none for a file without materials.
    pub material: Option<u32>,
}

/// Walks the default scene (the first when none is marked default), parents before children,
/// calling `visit` for each triangle primitive of each node's mesh, and returns the materials
/// the primitives' material indices refer to (see the module docs).
pub(super) fn walk_primitives(
    path: &Path,
    file: &GltfFile,
    mut visit: impl FnMut(VisitedPrimitive) -> Result<(), SceneError>,
) -> Result<Vec<Material>, SceneError> {
    let document = &file.document;
    let Some(scene) = document
        .default_scene()
        .or_else(|| document.scenes().next())
    else {
        return Ok(Vec::new());
    };
    let with_materials = document.materials().len() > 0;
    let mut materials = Vec::new();
    // Index in `materials` of each glTF material used so far (the default one last).
    let mut material_ids = vec![None; document.materials().len() + 1];
    let mut visited = vec![false; document.nodes().len()];
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
            for primitive in node_mesh.primitives() {
                let Some(part) = read_primitive(path, &node_mesh, &primitive, &file.buffers)?
                else {
                    continue;
                };
                let material = if with_materials {
                    let material = primitive.material();
                    let slot = material.index().unwrap_or(material_ids.len() - 1);
                    Some(match material_ids[slot] {
                        Some(id) => id,
                        None => {
                            let converted = convert_material(&material).map_err(|e| {
                                let name =
                                    material.index().map_or("the default material".into(), |i| {
                                        format!("material {i}")
                                    });
                                SceneError::malformed(path, name, e)
                            })?;
                            materials.push(converted);
                            *material_ids[slot].insert(materials.len() as u32 - 1)
                        }
                    })
                } else {
                    None
                };
                visit(VisitedPrimitive {
                    node: node.clone(),
                    world,
                    mesh: node_mesh.clone(),
                    primitive,
                    part,
                    material,
                })?;
            }
        }
        let first_child = pending.len();
        pending.extend(node.children().map(|c| (c, world)));
        pending[first_child..].reverse();
    }
    Ok(materials)
}

/// Reads the glTF or GLB file at `path` like [`load`], with a material per triangle (see the
/// module docs). The mesh is not [validated](Mesh::validate).
pub fn load_with_materials(path: &Path) -> Result<MaterialMesh, SceneError> {
    let file = GltfFile::open(path)?;
    let mut mesh = Mesh::default();
    let mut triangle_materials = Vec::new();
    let materials = walk_primitives(path, &file, |visited| {
        mesh.append(&visited.part.transformed(visited.world));
        if let Some(id) = visited.material {
            triangle_materials.resize(mesh.triangle_count(), id);
        }
        Ok(())
    })?;
    Ok(MaterialMesh {
        mesh,
        triangle_materials,
        materials,
    })
}

/// The triangles of one primitive in its mesh's own space, or `None` for a primitive of points
/// or lines.
fn read_primitive(
    path: &Path,
    mesh: &gltf::Mesh,
    primitive: &gltf::Primitive,
    buffers: &[gltf::buffer::Data],
) -> Result<Option<Mesh>, SceneError> {
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
    let buffer = |b: gltf::Buffer| buffers.get(b.index()).map(|data| &data.0[..]);

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
    Ok(Some(Mesh {
        positions,
        normals,
        triangles,
    }))
}
