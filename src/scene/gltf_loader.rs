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

use super::gltf_source::{AssetAccess, GltfFile, guarded};
use super::material::Material;
use super::mesh::{push_fan, push_strip};
use super::{MaterialMesh, Mesh, SceneError};

/// Reads the glTF or GLB file at `path` and the buffers it refers to (from the model's folder
/// only, see [`AssetAccess`]). The mesh is not [validated](Mesh::validate).
pub fn load(path: &Path) -> Result<Mesh, SceneError> {
    Ok(load_with_materials(path, AssetAccess::ModelFolder)?.mesh)
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
    let materials = walk_primitives(path, file, |visited| {
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
    buffers: &[Vec<u8>],
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
