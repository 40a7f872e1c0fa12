//! glTF animation on the CPU: a file's skins, morph targets, node hierarchy and animations,
//! sampled at any time into the few numbers a frame needs (joint matrices and morph weights),
//! and the posed vertices computed from them (the reference of the GPU skinning kernel,
//! `glsl/scene/skin.comp`).
//!
//! [`Rig::load`] walks the default scene like the static loader ([`super::gltf_loader`]) and
//! keeps every triangle primitive of every node's mesh as a *part*: its rest positions (in the
//! mesh's own space), its morph targets' position offsets, and up to eight joint influences
//! per vertex (`JOINTS_0/1`, `WEIGHTS_0/1`). A part without a skin is moved rigidly by its
//! node's world transform, as one influence of weight 1. [`Rig::pose`] samples a [`Clip`] at
//! a time (step, linear and cubic-spline keyframes; rotations by shortest-arc slerp) into a
//! [`Pose`]: the *palette*, one matrix per skin joint (`root * world(joint) * inverse bind`;
//! the skinned mesh's own node transform is ignored, as glTF says) and one per unskinned part
//! (`root * world(node)`), and every part's morph weights. A vertex is posed as
//! `sum_i w_i palette[j_i] * (rest + sum_t weight_t * offset_t)`: morph first, then skin.

use std::path::Path;

use glam::{Mat4, Quat, Vec3, Vec4};
use gltf::Semantic;
use gltf::accessor::{DataType, Dimensions};
use gltf::animation::util::ReadOutputs;
use gltf::animation::{Interpolation, Property};

use super::gltf_loader::{VertexValues, VisitedPrimitive, node_names, walk_primitives};
use super::gltf_source::{AssetAccess, GltfFile, guarded};
use super::{MaterialMesh, Mesh, SceneError};

/// The most joint influences per vertex (`JOINTS_0` and `JOINTS_1`).
pub const MAX_INFLUENCES: usize = 8;

/// The most matrices a palette holds (joint indices are 16-bit on the GPU).
pub const MAX_PALETTE: usize = 1 << 16;

/// A node of the hierarchy at rest.
#[derive(Clone, Debug)]
struct RigNode {
    parent: Option<usize>,
    /// The local transform at rest (the file's matrix, or its translation, rotation, scale).
    rest: Mat4,
    translation: Vec3,
    rotation: Quat,
    scale: Vec3,
    /// Whether an animation channel targets its transform (then it is rebuilt from TRS).
    animated: bool,
    /// Default morph weights (the node's, else its mesh's).
    weights: Vec<f32>,
}

/// A skin: its joints (node indices) and their inverse bind matrices.
#[derive(Clone, Debug)]
struct RigSkin {
    joints: Vec<usize>,
    inverse_bind: Vec<Mat4>,
    /// Index of its first joint's matrix in the palette.
    palette_offset: u32,
}

/// One triangle primitive of one node: a range of the rig's vertices.
#[derive(Clone, Debug)]
pub struct RigPart {
    /// The glTF node.
    pub node: usize,
    /// The skin (index into the file's skins) that poses it; none for a rigid part.
    pub skin: Option<usize>,
    /// First vertex.
    pub first_vertex: u32,
    /// Vertices.
    pub vertex_count: u32,
    /// Morph targets.
    pub targets: u32,
    /// Index of its first morph offset (target-major: `targets` x `vertex_count`).
    pub first_offset: u32,
    /// Index of its first morph weight in [`Pose::morph_weights`].
    pub first_weight: u32,
    /// Its palette matrix when rigid.
    pub matrix: u32,
}

/// A channel: one node's translation, rotation, scale or morph weights over time.
#[derive(Clone, Debug)]
struct Channel {
    node: usize,
    property: Property,
    interpolation: Interpolation,
    times: Vec<f32>,
    /// `width` floats per key (three per key, in-tangent, value, out-tangent, for cubic
    /// splines).
    values: Vec<f32>,
    width: usize,
}

/// An animation of the file.
#[derive(Clone, Debug)]
pub struct Clip {
    /// Its name, if the file gives one.
    pub name: Option<String>,
    /// Its last keyframe's time, in seconds.
    pub duration: f32,
    channels: Vec<Channel>,
}

impl Clip {
    /// Every keyframe time of the clip, ascending, without repeats.
    pub fn key_times(&self) -> Vec<f32> {
        let mut times: Vec<f32> = self
            .channels
            .iter()
            .flat_map(|c| c.times.iter().copied())
            .collect();
        times.sort_by(f32::total_cmp);
        times.dedup();
        times
    }
}

/// What a frame needs to pose the rig: one matrix per palette entry and the morph weights of
/// every part.
#[derive(Clone, Debug, PartialEq)]
pub struct Pose {
    /// Joint matrices of every skin, then one matrix per rigid part.
    pub palette: Vec<Mat4>,
    /// Morph weights, [`RigPart::targets`] per part from [`RigPart::first_weight`].
    pub morph_weights: Vec<f32>,
}

/// A glTF camera: its node (whose world transform places it) and vertical field of view.
#[derive(Clone, Debug)]
pub struct RigCamera {
    /// The camera's name (or its node's).
    pub name: Option<String>,
    /// The node it hangs from.
    pub node: usize,
    /// Vertical field of view in radians (perspective; an orthographic camera is read with
    /// 40 degrees).
    pub yfov: f32,
}

/// A glTF scene ready to be posed (see the module docs).
#[derive(Clone, Debug)]
pub struct Rig {
    /// Rest positions of every part (each in its mesh's own space), its triangles and
    /// materials (as [`MaterialMesh::load`] reads them).
    pub rest: MaterialMesh,
    /// Joint influences per vertex: palette indices and weights, [`Self::influences`] used.
    pub joints: Vec<[u16; MAX_INFLUENCES]>,
    /// Weights of [`Self::joints`].
    pub weights: Vec<[f32; MAX_INFLUENCES]>,
    /// Influences per vertex that may be non-zero: 4, or 8 when some primitive has
    /// `JOINTS_1`.
    pub influences: u32,
    /// Morph target position offsets of every part (see [`RigPart::first_offset`]).
    pub morph_offsets: Vec<[f32; 3]>,
    /// The part of each vertex.
    pub part_of_vertex: Vec<u32>,
    /// The parts.
    pub parts: Vec<RigPart>,
    /// The animations.
    pub clips: Vec<Clip>,
    /// The cameras of the scene's nodes.
    pub cameras: Vec<RigCamera>,
    nodes: Vec<RigNode>,
    /// Nodes of the scene, parents before children.
    order: Vec<usize>,
    skins: Vec<RigSkin>,
    palette_len: usize,
    morph_weight_count: usize,
}

/// How a frame's time maps to a clip's time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClipTime {
    /// The clip (index into [`Rig::clips`]); none poses the rest pose.
    pub clip: Option<usize>,
    /// Whether the clip repeats after its end (else it holds its last pose).
    pub looping: bool,
}

impl Rig {
    /// Reads the glTF or GLB file at `path` with its skins, morph targets, animations and
    /// cameras. The rest mesh is [validated](Mesh::validate) only for what posing needs
    /// (finite positions); errors name the accessor or node at fault.
    /// External buffers are read from the model's folder only ([`AssetAccess::ModelFolder`]).
    pub fn load(path: &Path) -> Result<Self, SceneError> {
        Self::from_file(path, &GltfFile::open(path, AssetAccess::ModelFolder)?)
    }

    /// The rig of a file read already, as [`Self::load`] makes it.
    pub(super) fn from_file(path: &Path, file: &GltfFile) -> Result<Self, SceneError> {
        guarded(path, "document", || Self::read(path, file))?
    }

    fn read(path: &Path, file: &GltfFile) -> Result<Self, SceneError> {
        let document = &file.document;
        let mut nodes = read_nodes(document);
        let (skins, palette_len) = read_skins(path, file)?;
        let mut parts = PartsRead {
            palette_len,
            influences: 4,
            ..PartsRead::default()
        };
        let appearance = walk_primitives(path, file, |visited| {
            parts.read_primitive(path, file, &skins, &visited)
        })?;
        if appearance.textures.is_empty() {
            parts.texcoords.clear();
        }
        let mut rest = parts.rest;
        rest.normals.clear();
        if let Some(v) = rest
            .positions
            .iter()
            .position(|p| !p.iter().all(|c| c.is_finite()))
        {
            return Err(SceneError::malformed(
                path,
                format!("vertex {v}"),
                format!("non-finite position {:?}", rest.positions[v]),
            ));
        }
        // Every node of the scene in hierarchy order, not only those with meshes: parents
        // before children, as a walk from the scene's roots.
        let order = scene_order(document);
        let clips = read_animations(path, file, &mut nodes)?;
        let cameras = read_cameras(document, &order);
        let mut rest = MaterialMesh {
            mesh: rest,
            triangle_materials: parts.triangle_materials,
            materials: appearance.materials,
            triangle_instances: parts.triangle_instances,
            instances: node_names(document),
            texcoords: parts.texcoords,
            textures: appearance.textures,
            tangents: Vec::new(),
            colours: parts.colours.finish(),
            placements: None,
        };
        rest.drop_normal_textures();
        Ok(Self {
            rest,
            joints: parts.joints,
            weights: parts.weights,
            influences: parts.influences,
            morph_offsets: parts.morph_offsets,
            part_of_vertex: parts.part_of_vertex,
            parts: parts.parts,
            clips,
            cameras,
            nodes,
            order,
            skins,
            palette_len: parts.palette_len,
            morph_weight_count: parts.morph_weight_count,
        })
    }

    /// Matrices in a palette.
    pub fn palette_len(&self) -> usize {
        self.palette_len
    }

    /// Morph weights in a pose.
    pub fn morph_weight_count(&self) -> usize {
        self.morph_weight_count
    }

    /// Whether any part has morph targets.
    pub fn has_morph_targets(&self) -> bool {
        self.morph_weight_count > 0
    }

    /// The clip named `name`, or numbered `name` (0-based), if the file has it.
    pub fn find_clip(&self, name: &str) -> Option<usize> {
        find_named(self.clips.iter().map(|c| c.name.as_deref()), name)
    }

    /// The camera named `name`, or numbered `name` (0-based), if the scene has it.
    pub fn find_camera(&self, name: &str) -> Option<usize> {
        find_named(self.cameras.iter().map(|c| c.name.as_deref()), name)
    }

    /// The clips, to say what there is: "3 animations: Survey (0), Walk (1), Run (2)".
    pub fn clip_list(&self) -> String {
        named_list(self.clips.iter().map(|c| c.name.as_deref()), "animation")
    }

    /// The cameras, to say what there is: "1 camera: front (0)".
    pub fn camera_list(&self) -> String {
        named_list(self.cameras.iter().map(|c| c.name.as_deref()), "camera")
    }

    /// The clip's own time at frame time `time` seconds: `time` wrapped into its duration
    /// when looping, else held at its end (and at 0 before it).
    pub fn clip_seconds(&self, at: ClipTime, time: f32) -> f32 {
        let duration = at.clip.map_or(0.0, |c| self.clips[c].duration);
        if duration <= 0.0 {
            0.0
        } else if at.looping {
            time.rem_euclid(duration)
        } else {
            time.clamp(0.0, duration)
        }
    }

    /// World transforms of every node at frame time `time` (the rest pose for no clip).
    pub fn world_transforms(&self, at: ClipTime, time: f32) -> (Vec<Mat4>, Vec<Vec<f32>>) {
        let mut translation: Vec<Vec3> = self.nodes.iter().map(|n| n.translation).collect();
        let mut rotation: Vec<Quat> = self.nodes.iter().map(|n| n.rotation).collect();
        let mut scale: Vec<Vec3> = self.nodes.iter().map(|n| n.scale).collect();
        let mut morph: Vec<Vec<f32>> = self.nodes.iter().map(|n| n.weights.clone()).collect();
        if let Some(clip) = at.clip {
            let seconds = self.clip_seconds(at, time);
            for channel in &self.clips[clip].channels {
                let value = channel.sample(seconds);
                match channel.property {
                    Property::Translation => translation[channel.node] = Vec3::from_slice(&value),
                    Property::Scale => scale[channel.node] = Vec3::from_slice(&value),
                    Property::Rotation => {
                        rotation[channel.node] =
                            Quat::from_vec4(Vec4::from_slice(&value)).normalize()
                    }
                    Property::MorphTargetWeights => morph[channel.node] = value,
                }
            }
        }
        let mut world = vec![Mat4::IDENTITY; self.nodes.len()];
        for &n in &self.order {
            let node = &self.nodes[n];
            let local = if node.animated {
                Mat4::from_scale_rotation_translation(scale[n], rotation[n], translation[n])
            } else {
                node.rest
            };
            world[n] = match node.parent {
                Some(parent) => world[parent] * local,
                None => local,
            };
        }
        (world, morph)
    }

    /// The pose at frame time `time`, every matrix multiplied on the left by `root` (the
    /// transform that places the whole scene).
    pub fn pose(&self, at: ClipTime, time: f32, root: Mat4) -> Pose {
        let (world, morph) = self.world_transforms(at, time);
        let mut palette = vec![Mat4::IDENTITY; self.palette_len];
        for skin in &self.skins {
            for (k, (&joint, inverse_bind)) in
                skin.joints.iter().zip(&skin.inverse_bind).enumerate()
            {
                palette[skin.palette_offset as usize + k] = root * world[joint] * *inverse_bind;
            }
        }
        let mut morph_weights = vec![0.0; self.morph_weight_count];
        for part in &self.parts {
            if part.skin.is_none() {
                palette[part.matrix as usize] = root * world[part.node];
            }
            let weights = &morph[part.node];
            for t in 0..part.targets as usize {
                morph_weights[part.first_weight as usize + t] =
                    weights.get(t).copied().unwrap_or(0.0);
            }
        }
        Pose {
            palette,
            morph_weights,
        }
    }

    /// The posed positions of every vertex (the CPU reference of the skinning kernel).
    pub fn posed_positions(&self, pose: &Pose) -> Vec<[f32; 3]> {
        let influences = self.influences as usize;
        (0..self.rest.mesh.positions.len())
            .map(|v| {
                let part = &self.parts[self.part_of_vertex[v] as usize];
                let mut p = Vec3::from(self.rest.mesh.positions[v]);
                let local = v - part.first_vertex as usize;
                for t in 0..part.targets as usize {
                    let w = pose.morph_weights[part.first_weight as usize + t];
                    let offset =
                        part.first_offset as usize + t * part.vertex_count as usize + local;
                    p += w * Vec3::from(self.morph_offsets[offset]);
                }
                let mut skin = Mat4::ZERO;
                for i in 0..influences {
                    skin += pose.palette[self.joints[v][i] as usize] * self.weights[v][i];
                }
                skin.transform_point3(p).to_array()
            })
            .collect()
    }
}

/// Every node of the file at rest, with its parent.
fn read_nodes(document: &gltf::Document) -> Vec<RigNode> {
    let mut nodes: Vec<RigNode> = document
        .nodes()
        .map(|node| {
            let (t, r, s) = node.transform().decomposed();
            let weights = node
                .weights()
                .or_else(|| node.mesh().and_then(|m| m.weights()))
                .map(<[f32]>::to_vec)
                .unwrap_or_default();
            RigNode {
                parent: None,
                rest: Mat4::from_cols_array_2d(&node.transform().matrix()),
                translation: Vec3::from(t),
                rotation: Quat::from_array(r),
                scale: Vec3::from(s),
                animated: false,
                weights,
            }
        })
        .collect();
    for node in document.nodes() {
        for child in node.children() {
            nodes[child.index()].parent = Some(node.index());
        }
    }
    nodes
}

/// Every skin of the file, its joints' matrices placed in the palette one skin after the
/// other, and the palette's length so far.
fn read_skins(path: &Path, file: &GltfFile) -> Result<(Vec<RigSkin>, usize), SceneError> {
    let mut palette_len = 0usize;
    let mut skins = Vec::new();
    for skin in file.document.skins() {
        let joints: Vec<usize> = skin.joints().map(|j| j.index()).collect();
        let inverse_bind: Vec<Mat4> = match skin.reader(file.buffer()).read_inverse_bind_matrices()
        {
            Some(matrices) => matrices.map(|m| Mat4::from_cols_array_2d(&m)).collect(),
            None => vec![Mat4::IDENTITY; joints.len()],
        };
        if let Some(k) = inverse_bind.iter().position(|m| !m.is_finite()) {
            return Err(SceneError::malformed(
                path,
                format!("skin {}", skin.index()),
                format!("inverse bind matrix {k} is not finite"),
            ));
        }
        if inverse_bind.len() != joints.len() {
            return Err(SceneError::malformed(
                path,
                format!("skin {}", skin.index()),
                format!(
                    "{} inverse bind matrices for {} joints",
                    inverse_bind.len(),
                    joints.len()
                ),
            ));
        }
        skins.push(RigSkin {
            palette_offset: palette_len as u32,
            joints,
            inverse_bind,
        });
        palette_len += skins.last().map_or(0, |s| s.joints.len());
    }
    Ok((skins, palette_len))
}

/// The parts read so far from the scene's triangle primitives ([`PartsRead::read_primitive`]).
#[derive(Default)]
struct PartsRead {
    rest: Mesh,
    texcoords: Vec<[f32; 4]>,
    colours: VertexValues,
    triangle_materials: Vec<u32>,
    triangle_instances: Vec<u32>,
    joints: Vec<[u16; MAX_INFLUENCES]>,
    weights: Vec<[f32; MAX_INFLUENCES]>,
    morph_offsets: Vec<[f32; 3]>,
    part_of_vertex: Vec<u32>,
    parts: Vec<RigPart>,
    influences: u32,
    morph_weight_count: usize,
    palette_len: usize,
}

impl PartsRead {
    /// One triangle primitive as a part: its influences (a skin's joints, or its node's
    /// matrix, which takes a palette entry), its morph targets and its rest vertices.
    fn read_primitive(
        &mut self,
        path: &Path,
        file: &GltfFile,
        skins: &[RigSkin],
        visited: &VisitedPrimitive,
    ) -> Result<(), SceneError> {
        let node = visited.node.index();
        let vertex_count = visited.part.positions.len() as u32;
        let first_vertex = self.rest.positions.len() as u32;
        let location = format!(
            "mesh {} primitive {}",
            visited.mesh.index(),
            visited.primitive.index()
        );
        let reader = visited.primitive.reader(file.buffer());
        let skin = visited
            .node
            .skin()
            .filter(|_| reader.read_joints(0).is_some());
        let matrix = match skin {
            Some(_) => u32::MAX,
            None => {
                self.palette_len += 1;
                self.palette_len as u32 - 1
            }
        };
        let influences = match &skin {
            Some(skin) => {
                read_influences(path, file, visited, skin, &skins[skin.index()], &location)?
            }
            None => Influences::rigid(vertex_count, matrix),
        };
        if influences.second_set {
            self.influences = 8;
        }
        let first_offset = self.morph_offsets.len() as u32;
        let targets = read_morph_targets(path, file, visited, &location, &mut self.morph_offsets)?;
        // A copy placed by EXT_mesh_gpu_instancing moves rigidly with its node: its rest
        // vertices are placed. A skin's or morph target's offsets would need the same.
        let placed = visited.placement != Mat4::IDENTITY;
        if placed && (skin.is_some() || targets > 0) {
            return Err(SceneError::malformed(
                path,
                location,
                "EXT_mesh_gpu_instancing places a skinned or morphed mesh, which canopy does \
                 not animate",
            ));
        }
        let palette_len = self.palette_len;
        if palette_len > MAX_PALETTE {
            return Err(SceneError::malformed(
                path,
                location.clone(),
                format!(
                    "the scene needs {palette_len} joint and node matrices; canopy poses at most {MAX_PALETTE}"
                ),
            ));
        }
        self.parts.push(RigPart {
            node,
            skin: skin.as_ref().map(|s| s.index()),
            first_vertex,
            vertex_count,
            targets,
            first_offset,
            first_weight: self.morph_weight_count as u32,
            matrix,
        });
        self.morph_weight_count += targets as usize;
        self.part_of_vertex.extend(std::iter::repeat_n(
            self.parts.len() as u32 - 1,
            vertex_count as usize,
        ));
        self.joints.extend(influences.joints);
        self.weights.extend(influences.weights);
        if placed {
            self.rest
                .append(&visited.part.transformed(visited.placement));
        } else {
            self.rest.append(&visited.part);
        }
        self.texcoords.extend_from_slice(&visited.texcoords);
        self.colours
            .extend(visited.colours.clone(), vertex_count as usize, [1.0; 4]);
        if let Some(id) = visited.material {
            self.triangle_materials
                .resize(self.rest.triangle_count(), id);
        }
        self.triangle_instances
            .resize(self.rest.triangle_count(), visited.node.index() as u32);
        Ok(())
    }
}

/// The joint influences of a primitive's vertices.
struct Influences {
    /// Palette indices.
    joints: Vec<[u16; MAX_INFLUENCES]>,
    /// Their weights.
    weights: Vec<[f32; MAX_INFLUENCES]>,
    /// Whether the primitive has the second set (`JOINTS_1`).
    second_set: bool,
}

impl Influences {
    /// The influences of a part its node's matrix (palette entry `matrix`) moves rigidly:
    /// one of weight 1 per vertex.
    fn rigid(vertex_count: u32, matrix: u32) -> Self {
        let mut joints = vec![[0u16; MAX_INFLUENCES]; vertex_count as usize];
        let mut weights = vec![[0f32; MAX_INFLUENCES]; vertex_count as usize];
        for (j, w) in joints.iter_mut().zip(&mut weights) {
            j[0] = matrix as u16;
            w[0] = 1.0;
        }
        Self {
            joints,
            weights,
            second_set: false,
        }
    }
}

/// The joint influences of a skinned primitive's vertices (`JOINTS_0/1`, `WEIGHTS_0/1`) as
/// palette indices and weights.
fn read_influences(
    path: &Path,
    file: &GltfFile,
    visited: &VisitedPrimitive,
    skin: &gltf::Skin,
    rig_skin: &RigSkin,
    location: &str,
) -> Result<Influences, SceneError> {
    let vertex_count = visited.part.positions.len() as u32;
    let reader = visited.primitive.reader(file.buffer());
    let mut part_joints = vec![[0u16; MAX_INFLUENCES]; vertex_count as usize];
    let mut part_weights = vec![[0f32; MAX_INFLUENCES]; vertex_count as usize];
    let mut second_set = false;
    for set in 0..2u32 {
        let Some(read) = reader.read_joints(set) else {
            continue;
        };
        if set == 1 {
            second_set = true;
        }
        let accessor_name = |semantic: Semantic| {
            visited
                .primitive
                .get(&semantic)
                .map_or(String::new(), |a| format!(" accessor {}", a.index()))
        };
        let read_weights = reader.read_weights(set).ok_or_else(|| {
            SceneError::malformed(
                path,
                format!("{location}{}", accessor_name(Semantic::Joints(set))),
                format!("JOINTS_{set} without WEIGHTS_{set}"),
            )
        })?;
        let slots = 4 * set as usize..4 * set as usize + 4;
        let mut count = 0;
        for (v, (j, w)) in read.into_u16().zip(read_weights.into_f32()).enumerate() {
            if v >= vertex_count as usize {
                break;
            }
            count += 1;
            for (k, slot) in slots.clone().enumerate() {
                let joint = j[k] as usize;
                if joint >= rig_skin.joints.len() {
                    return Err(SceneError::malformed(
                        path,
                        format!("{location}{}", accessor_name(Semantic::Joints(set))),
                        format!(
                            "vertex {v} names joint {joint}; skin {} has {}",
                            skin.index(),
                            rig_skin.joints.len()
                        ),
                    ));
                }
                part_joints[v][slot] = (rig_skin.palette_offset as usize + joint) as u16;
                part_weights[v][slot] = w[k];
            }
        }
        if count != vertex_count {
            return Err(SceneError::malformed(
                path,
                format!("{location}{}", accessor_name(Semantic::Weights(set))),
                format!("{count} joint influences for {vertex_count} vertices"),
            ));
        }
    }
    Ok(Influences {
        joints: part_joints,
        weights: part_weights,
        second_set,
    })
}

/// A primitive's morph targets' position offsets appended to `morph_offsets` (every vertex's,
/// zero where a target moves none), and their number.
fn read_morph_targets(
    path: &Path,
    file: &GltfFile,
    visited: &VisitedPrimitive,
    location: &str,
    morph_offsets: &mut Vec<[f32; 3]>,
) -> Result<u32, SceneError> {
    let vertex_count = visited.part.positions.len() as u32;
    let reader = visited.primitive.reader(file.buffer());
    let mut targets = 0;
    for (t, (displacements, _, _)) in reader.read_morph_targets().enumerate() {
        targets += 1;
        let start = morph_offsets.len();
        if let Some(displacements) = displacements {
            morph_offsets.extend(displacements.take(vertex_count as usize));
        }
        if morph_offsets.len() - start != vertex_count as usize && morph_offsets.len() != start {
            return Err(SceneError::malformed(
                path,
                location.to_string(),
                format!(
                    "morph target {t} moves {} vertices of {vertex_count}",
                    morph_offsets.len() - start
                ),
            ));
        }
        morph_offsets.resize(start + vertex_count as usize, [0.0; 3]);
    }
    for (t, target) in visited.primitive.morph_targets().enumerate() {
        if let Some(accessor) = target.positions()
            && (accessor.data_type() != DataType::F32 || accessor.dimensions() != Dimensions::Vec3)
        {
            return Err(SceneError::malformed(
                path,
                format!("{location} accessor {}", accessor.index()),
                format!("morph target {t}'s POSITION is not F32 Vec3"),
            ));
        }
    }
    Ok(targets)
}

/// Every animation of the file as a clip; the nodes a clip moves (other than by morph
/// weights) are marked animated.
fn read_animations(
    path: &Path,
    file: &GltfFile,
    nodes: &mut [RigNode],
) -> Result<Vec<Clip>, SceneError> {
    let mut clips = Vec::new();
    for animation in file.document.animations() {
        let mut channels = Vec::new();
        let mut duration = 0f32;
        for channel in animation.channels() {
            let channel = read_channel(path, file, &animation, &channel)?;
            duration = duration.max(*channel.times.last().unwrap_or(&0.0));
            if channel.property != Property::MorphTargetWeights {
                nodes[channel.node].animated = true;
            }
            channels.push(channel);
        }
        clips.push(Clip {
            name: animation.name().map(str::to_string),
            duration,
            channels,
        });
    }
    Ok(clips)
}

/// One channel of an animation: its key times and values, checked.
fn read_channel(
    path: &Path,
    file: &GltfFile,
    animation: &gltf::Animation,
    channel: &gltf::animation::Channel,
) -> Result<Channel, SceneError> {
    let node = channel.target().node().index();
    let property = channel.target().property();
    let reader = channel.reader(file.buffer());
    let where_ = || {
        format!(
            "animation {} channel {}",
            animation.index(),
            channel.index()
        )
    };
    let times: Vec<f32> = reader
        .read_inputs()
        .ok_or_else(|| {
            SceneError::malformed(path, where_(), "its key times lie outside their buffer")
        })?
        .collect();
    let values: Vec<f32> = match reader.read_outputs() {
        Some(ReadOutputs::Translations(v)) | Some(ReadOutputs::Scales(v)) => v.flatten().collect(),
        Some(ReadOutputs::Rotations(v)) => v.into_f32().flatten().collect(),
        Some(ReadOutputs::MorphTargetWeights(v)) => v.into_f32().collect(),
        None => {
            return Err(SceneError::malformed(
                path,
                where_(),
                "its key values lie outside their buffer",
            ));
        }
    };
    let interpolation = channel.sampler().interpolation();
    let per_key = if interpolation == Interpolation::CubicSpline {
        3
    } else {
        1
    };
    // Values per key: a vector's or quaternion's components, or one weight per morph target
    // (however many the file has, read as they come).
    let width = match property {
        Property::Translation | Property::Scale => 3,
        Property::Rotation => 4,
        Property::MorphTargetWeights => values.len() / (times.len() * per_key).max(1),
    };
    if times.is_empty() || width == 0 || values.len() != times.len() * per_key * width {
        return Err(SceneError::malformed(
            path,
            where_(),
            format!(
                "{} key values for {} key times of {property:?} ({} expected)",
                values.len(),
                times.len(),
                times.len() * per_key * width.max(1)
            ),
        ));
    }
    if let Some(k) = values.iter().position(|v| !v.is_finite()) {
        return Err(SceneError::malformed(
            path,
            where_(),
            format!("key value {k} is not finite ({})", values[k]),
        ));
    }
    if times.windows(2).any(|w| w[0] >= w[1]) || !times.iter().all(|t| t.is_finite()) {
        return Err(SceneError::malformed(
            path,
            where_(),
            "its key times are not finite and strictly increasing",
        ));
    }
    Ok(Channel {
        node,
        property,
        interpolation,
        times,
        values,
        width,
    })
}

/// The cameras of the scene's nodes (those in `order`).
fn read_cameras(document: &gltf::Document, order: &[usize]) -> Vec<RigCamera> {
    document
        .nodes()
        .filter(|n| order.contains(&n.index()))
        .filter_map(|node| {
            let camera = node.camera()?;
            let yfov = match camera.projection() {
                gltf::camera::Projection::Perspective(p) => p.yfov(),
                gltf::camera::Projection::Orthographic(_) => 40f32.to_radians(),
            };
            Some(RigCamera {
                name: camera.name().or(node.name()).map(str::to_string),
                node: node.index(),
                yfov,
            })
        })
        .collect()
}

/// The index of the item named `name`, or of the item numbered `name` (0-based).
fn find_named<'a>(
    names: impl ExactSizeIterator<Item = Option<&'a str>> + Clone,
    name: &str,
) -> Option<usize> {
    let count = names.len();
    names
        .clone()
        .position(|n| n == Some(name))
        .or_else(|| name.parse::<usize>().ok().filter(|&i| i < count))
}

/// "no cameras", "1 camera: front (0)", "2 cameras: front (0), unnamed (1)".
fn named_list<'a>(names: impl Iterator<Item = Option<&'a str>>, noun: &str) -> String {
    let names: Vec<String> = names
        .enumerate()
        .map(|(i, n)| format!("{} ({i})", n.unwrap_or("unnamed")))
        .collect();
    match names.len() {
        0 => format!("no {noun}s"),
        1 => format!("1 {noun}: {}", names[0]),
        n => format!("{n} {noun}s: {}", names.join(", ")),
    }
}

/// Every node of the default scene (the first when none is marked default), parents before
/// children.
fn scene_order(document: &gltf::Document) -> Vec<usize> {
    let Some(scene) = document
        .default_scene()
        .or_else(|| document.scenes().next())
    else {
        return Vec::new();
    };
    let mut order = Vec::new();
    let mut pending: Vec<gltf::Node> = scene.nodes().collect();
    pending.reverse();
    while let Some(node) = pending.pop() {
        order.push(node.index());
        let first_child = pending.len();
        pending.extend(node.children());
        pending[first_child..].reverse();
    }
    order
}

impl Channel {
    /// The channel's value at clip time `t` (its first key's before it, its last's after).
    fn sample(&self, t: f32) -> Vec<f32> {
        let w = self.width;
        let cubic = self.interpolation == Interpolation::CubicSpline;
        // The value of key k (the middle of a cubic spline's three).
        let value = |k: usize| {
            let at = if cubic { (3 * k + 1) * w } else { k * w };
            &self.values[at..at + w]
        };
        let last = self.times.len() - 1;
        if t <= self.times[0] {
            return value(0).to_vec();
        }
        if t >= self.times[last] {
            return value(last).to_vec();
        }
        // The key at or before t: times[k] <= t < times[k + 1].
        let k = self.times.partition_point(|&key| key <= t) - 1;
        let (t0, t1) = (self.times[k], self.times[k + 1]);
        let s = (t - t0) / (t1 - t0);
        match self.interpolation {
            Interpolation::Step => value(k).to_vec(),
            Interpolation::Linear if self.property == Property::Rotation => {
                let a = Quat::from_slice(value(k));
                let b = Quat::from_slice(value(k + 1));
                a.slerp(b, s).to_array().to_vec()
            }
            Interpolation::Linear => value(k)
                .iter()
                .zip(value(k + 1))
                .map(|(a, b)| a + (b - a) * s)
                .collect(),
            Interpolation::CubicSpline => {
                let span = t1 - t0;
                let out_tangent = &self.values[(3 * k + 2) * w..(3 * k + 3) * w];
                let in_tangent = &self.values[(3 * (k + 1)) * w..(3 * (k + 1) + 1) * w];
                let (s2, s3) = (s * s, s * s * s);
                let h00 = 2.0 * s3 - 3.0 * s2 + 1.0;
                let h10 = s3 - 2.0 * s2 + s;
                let h01 = -2.0 * s3 + 3.0 * s2;
                let h11 = s3 - s2;
                let mut out: Vec<f32> = (0..w)
                    .map(|c| {
                        h00 * value(k)[c]
                            + h10 * span * out_tangent[c]
                            + h01 * value(k + 1)[c]
                            + h11 * span * in_tangent[c]
                    })
                    .collect();
                if self.property == Property::Rotation {
                    let q = Quat::from_slice(&out).normalize();
                    out = q.to_array().to_vec();
                }
                out
            }
        }
    }
}
