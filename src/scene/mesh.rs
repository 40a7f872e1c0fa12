//! The triangle mesh every structure is built from, stored as structure of arrays so each
//! attribute uploads to the GPU as one tightly packed buffer.
//!
//! [`Mesh::load`] reads OBJ, PLY and glTF files through the readers in [`super::obj`],
//! [`super::ply`] and [`super::gltf_loader`] and checks the result with [`Mesh::validate`];
//! [`MaterialMesh::load`] also keeps a glTF file's materials.

use std::path::{Path, PathBuf};

use glam::{DVec3, Mat3, Mat4, Vec3};

use super::material::Material;
use super::{AssetAccess, e57, gltf_loader, las, obj, pcd, ply};

/// A triangle mesh: one array per attribute.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    /// Vertex positions.
    pub positions: Vec<[f32; 3]>,
    /// Per-vertex normals: empty, or one per position.
    pub normals: Vec<[f32; 3]>,
    /// Triangles as three vertex indices each.
    pub triangles: Vec<[u32; 3]>,
}

/// Why a mesh could not be loaded or used. Every variant names the file (or `<memory>`) and,
/// where there is one, the line or element at fault.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// The file's contents are malformed.
    #[error("{path}:{location}: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Where: "line 12", "face 3041", "accessor 2", ...
        location: String,
        /// What is wrong.
        message: String,
    },
    /// The file holds no triangles.
    #[error("{path}: the mesh has no triangles")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The path names something other than a regular file (a folder, a device, a pipe).
    #[error("{path}: {what}, not a mesh file")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        what: &'static str,
    },
    /// Every triangle of the mesh has zero area (all its vertices on one point or one line):
    /// no ray can hit it and it has no size to frame.
    #[error(
        "{path}: all {triangles} triangles have zero area (the vertices lie on one point or one line): nothing to build or render"
    )]
    NoArea {
        /// The file.
        path: PathBuf,
        /// How many triangles it has.
        triangles: usize,
    },
    /// A numbered file of a vertex-animation sequence is missing.
    #[error(
        "{path}: frame {number} of the sequence is missing (its files are numbered {first} to {last})"
    )]
    MissingFrame {
        /// The missing file.
        path: PathBuf,
        /// Its number.
        number: u64,
        /// The lowest number found.
        first: u64,
        /// The highest number found.
        last: u64,
    },
    /// A sequence's files do not make one animation (its topology changes, it has no files).
    #[error("{path}: {message}")]
    Sequence {
        /// The file (or the pattern or folder).
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The file's extension names no format canopy reads.
    #[error(
        "{path}: unknown format (expected .obj, .ply, .gltf or .glb; .pcd, .las, .laz or .e57 for points)"
    )]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
}

impl SceneError {
    /// A [`SceneError::Malformed`] for `path` at `location`.
    pub(crate) fn malformed(
        path: &Path,
        location: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::Malformed {
            path: path.to_path_buf(),
            location: location.into(),
            message: message.into(),
        }
    }

    /// A [`SceneError::Io`] for `path`.
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl Mesh {
    /// Loads the mesh in `path`, choosing the reader by the extension (`.obj`, `.ply`, `.gltf`,
    /// `.glb`, in any case), and [validates](Self::validate) it.
    pub fn load(path: &Path) -> Result<Mesh, SceneError> {
        let mesh = Self::read(path)?;
        mesh.validate(path)?;
        Ok(mesh)
    }

    /// The vertex positions in `path` as a point cloud (every vertex, used by a face or not):
    /// for octrees and point k-d trees. Rejects a file without vertices ([`SceneError::Empty`])
    /// or with a non-finite one (`vertex N`).
    pub fn load_points(path: &Path) -> Result<Vec<[f32; 3]>, SceneError> {
        let mesh = Self::read(path)?;
        if mesh.positions.is_empty() {
            return Err(SceneError::Empty {
                path: path.to_path_buf(),
            });
        }
        mesh.check_finite(path)?;
        Ok(mesh.positions)
    }

    /// Reads `path` with the reader its extension names, unvalidated.
    fn read(path: &Path) -> Result<Mesh, SceneError> {
        Ok(MaterialMesh::read(path)?.mesh)
    }

    /// Checks that the mesh can be built into an acceleration structure; `path` names the
    /// source in the error. Rejects a mesh with no triangles ([`SceneError::Empty`]), a
    /// non-finite position (`vertex N`), a triangle index past the last vertex (`triangle N`),
    /// a normal count other than zero or one per position (`normals`), and a mesh whose
    /// triangles all have zero area ([`SceneError::NoArea`]; measured in `f64`, so a mesh of
    /// any scale that `f32` holds passes).
    ///
    /// Degenerate (zero-area) triangles are kept: no ray ever hits one, so they cost only their
    /// place in the structure. [`Self::degenerate_triangle_count`] counts them.
    pub fn validate(&self, path: &Path) -> Result<(), SceneError> {
        if self.triangles.is_empty() {
            return Err(SceneError::Empty {
                path: path.to_path_buf(),
            });
        }
        self.check_finite(path)?;
        let vertices = self.positions.len();
        if let Some(t) = self.first_triangle_past_the_vertices() {
            return Err(SceneError::malformed(
                path,
                format!("triangle {t}"),
                format!(
                    "indices {:?} reach past the last of {vertices} vertices",
                    self.triangles[t]
                ),
            ));
        }
        if !self.normals.is_empty() && self.normals.len() != vertices {
            return Err(SceneError::malformed(
                path,
                "normals",
                format!("{} normals for {vertices} vertices", self.normals.len()),
            ));
        }
        if !self.triangles.iter().any(|&t| self.has_area_f64(t)) {
            return Err(SceneError::NoArea {
                path: path.to_path_buf(),
                triangles: self.triangles.len(),
            });
        }
        Ok(())
    }

    /// Whether triangle `t` has a non-zero area, with its edges' cross product in `f64`
    /// (where the product of two `f32` coordinate differences neither overflows nor underflows).
    fn has_area_f64(&self, t: [u32; 3]) -> bool {
        let [a, b, c] = t.map(|i| DVec3::from(Vec3::from(self.positions[i as usize])));
        (b - a).cross(c - a) != DVec3::ZERO
    }

    /// Moves and scales the mesh so that its bounding box is centred on the origin with a
    /// half-diagonal of 1, and returns what was done. The arithmetic is in `f64`, so every
    /// finite `f32` mesh fits; normals keep their directions. This is how `canopy render` and
    /// `canopy build` take a file: rays, boxes and areas are computed in `f32`, which loses
    /// precision far from the origin (shadow acne on a model placed at x = 1e6) and overflows
    /// or underflows at extreme scales (areas of a model measured in 1e30 or 1e-30 units).
    ///
    /// A mesh with no extent (every vertex on one point) is only moved to the origin.
    pub fn fit_unit_sphere(&mut self) -> Framing {
        let Some((lo, hi)) = self.bounds() else {
            return Framing {
                centre: DVec3::ZERO,
                scale: 1.0,
            };
        };
        let Framing { centre, scale } = Framing::of_box(Vec3::from(lo), Vec3::from(hi));
        for p in &mut self.positions {
            *p = ((Vec3::from(*p).as_dvec3() - centre) * scale)
                .as_vec3()
                .into();
        }
        Framing { centre, scale }
    }

    /// Rejects a non-finite position, naming its vertex.
    fn check_finite(&self, path: &Path) -> Result<(), SceneError> {
        match self.first_non_finite_vertex() {
            Some(v) => Err(SceneError::malformed(
                path,
                format!("vertex {v}"),
                format!("non-finite position {:?}", self.positions[v]),
            )),
            None => Ok(()),
        }
    }

    /// The first vertex with a coordinate that is not finite, if any.
    pub fn first_non_finite_vertex(&self) -> Option<usize> {
        (self.positions.iter()).position(|p| !p.iter().all(|c| c.is_finite()))
    }

    /// The first triangle with an index past the last vertex, if any.
    pub fn first_triangle_past_the_vertices(&self) -> Option<usize> {
        let vertices = self.positions.len();
        (self.triangles.iter()).position(|t| t.iter().any(|&i| i as usize >= vertices))
    }

    /// Number of triangles.
    pub fn triangle_count(&self) -> usize {
        self.triangles.len()
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }

    /// Number of triangles of zero area: a repeated vertex, or corners on one line (exactly, in
    /// `f32`). They stay in the mesh; see [`Self::validate`].
    ///
    /// Panics if a triangle refers to a missing vertex (which [`Self::validate`] rejects).
    pub fn degenerate_triangle_count(&self) -> usize {
        self.triangles
            .iter()
            .filter(|&&t| self.area_normal(t) == Vec3::ZERO)
            .count()
    }

    /// The smallest box holding every position, as `(min, max)`; `None` for a mesh with no
    /// vertices.
    pub fn bounds(&self) -> Option<([f32; 3], [f32; 3])> {
        let (first, rest) = self.positions.split_first()?;
        let (min, max) = rest.iter().fold(
            (Vec3::from(*first), Vec3::from(*first)),
            |(min, max), &p| (min.min(p.into()), max.max(p.into())),
        );
        Some((min.into(), max.into()))
    }

    /// Replaces the normals with area-weighted averages of the adjacent triangles' normals.
    /// Degenerate triangles contribute nothing; a vertex with no adjacent area gets `[0, 0, 1]`.
    ///
    /// Panics if a triangle refers to a missing vertex (which [`Self::validate`] rejects).
    pub fn compute_vertex_normals(&mut self) {
        let mut sums = vec![Vec3::ZERO; self.positions.len()];
        for &t in &self.triangles {
            // The cross product's length is twice the area: the weighting comes for free.
            let n = self.area_normal(t);
            for i in t {
                sums[i as usize] += n;
            }
        }
        self.normals = sums
            .into_iter()
            .map(|n| n.normalize_or(Vec3::Z).into())
            .collect();
    }

    /// Makes every normal zero, which the renderer reads as "shade with the triangle's own
    /// normal": flat shading, hard edges everywhere.
    pub fn flatten_normals(&mut self) {
        self.normals = vec![[0.0; 3]; self.positions.len()];
    }

    /// Adds `other`'s vertices and triangles after this mesh's own. Normals are kept where both
    /// meshes have them (or this one has no vertices yet), and dropped otherwise.
    ///
    /// Panics if this mesh already has more vertices than a `u32` index can reach.
    pub fn append(&mut self, other: &Mesh) {
        let offset =
            u32::try_from(self.positions.len()).expect("a mesh holds at most u32::MAX vertices");
        let keep_normals = if self.positions.is_empty() {
            !other.normals.is_empty()
        } else {
            !self.normals.is_empty() && !other.normals.is_empty()
        };
        if keep_normals {
            self.normals.extend_from_slice(&other.normals);
        } else {
            self.normals.clear();
        }
        self.positions.extend_from_slice(&other.positions);
        self.triangles
            .extend(other.triangles.iter().map(|t| t.map(|i| i + offset)));
    }

    /// The mesh with `m` applied: positions as points, normals by the inverse transpose of
    /// `m`'s upper 3x3 and renormalised (a normal that collapses to zero becomes `[0, 0, 1]`).
    /// A mirroring `m` (negative determinant) also reverses each triangle's winding, so
    /// triangles keep facing the way their normals point.
    pub fn transformed(&self, m: Mat4) -> Mesh {
        let normal_matrix = Mat3::from_mat4(m).inverse().transpose();
        let mirrored = m.determinant() < 0.0;
        Mesh {
            positions: self
                .positions
                .iter()
                .map(|&p| m.transform_point3(p.into()).into())
                .collect(),
            normals: self
                .normals
                .iter()
                .map(|&n| (normal_matrix * Vec3::from(n)).normalize_or(Vec3::Z).into())
                .collect(),
            triangles: self
                .triangles
                .iter()
                .map(|&[a, b, c]| if mirrored { [a, c, b] } else { [a, b, c] })
                .collect(),
        }
    }

    /// Triangle `t`'s normal with a length of twice its area: the cross product of two edges.
    fn area_normal(&self, t: [u32; 3]) -> Vec3 {
        let [a, b, c] = t.map(|i| Vec3::from(self.positions[i as usize]));
        (b - a).cross(c - a)
    }
}

/// Appends polygon `corners` as a fan of `corners.len() - 2` triangles around the first corner
/// (nothing for fewer than three corners).
pub(crate) fn push_fan(corners: &[u32], triangles: &mut Vec<[u32; 3]>) {
    if let Some((&first, rest)) = corners.split_first() {
        triangles.extend(rest.windows(2).map(|w| [first, w[0], w[1]]));
    }
}

/// Appends the triangles of one triangle strip. Every other triangle has its first two corners
/// swapped so that all keep the strip's winding, and triangles with a repeated vertex (the
/// degenerate joins strips use to turn corners or restart) are left out.
pub(crate) fn push_strip(strip: &[u32], triangles: &mut Vec<[u32; 3]>) {
    triangles.extend(
        strip
            .windows(3)
            .enumerate()
            .map(|(k, w)| {
                if k % 2 == 0 {
                    [w[0], w[1], w[2]]
                } else {
                    [w[1], w[0], w[2]]
                }
            })
            .filter(|&[a, b, c]| a != b && b != c && a != c),
    );
}

/// Refuses what is not a regular file before any reader opens it: reading a device such as
/// `/dev/zero` or a pipe would never end.
fn check_regular_file(path: &Path) -> Result<(), SceneError> {
    let kind = std::fs::metadata(path)
        .map_err(|e| SceneError::io(path, e))?
        .file_type();
    if kind.is_file() {
        return Ok(());
    }
    Err(SceneError::NotAFile {
        path: path.to_path_buf(),
        what: if kind.is_dir() {
            "a folder"
        } else {
            "a device, pipe or socket"
        },
    })
}

/// How [`Mesh::fit_unit_sphere`] moved and scaled a mesh: a file position `p` is now at
/// `(p - centre) * scale`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Framing {
    /// The centre of the file's bounding box, in the file's units.
    pub centre: DVec3,
    /// The factor that made the bounding box's half-diagonal 1.
    pub scale: f64,
}

impl Framing {
    /// What fits the box from `lo` to `hi` into the unit sphere: its centre, and 1 over its
    /// half-diagonal (1 for a box without extent).
    pub fn of_box(lo: Vec3, hi: Vec3) -> Self {
        let (lo, hi) = (lo.as_dvec3(), hi.as_dvec3());
        let half_diagonal = (hi - lo).length() * 0.5;
        Self {
            centre: (lo + hi) * 0.5,
            scale: if half_diagonal > 0.0 {
                1.0 / half_diagonal
            } else {
                1.0
            },
        }
    }
}

/// A mesh with a material per triangle, as [`MaterialMesh::load`] reads it.
#[derive(Clone, Debug, Default)]
pub struct MaterialMesh {
    /// The mesh.
    pub mesh: Mesh,
    /// Index into `materials` of each triangle (empty when `materials` is).
    pub triangle_materials: Vec<u32>,
    /// The materials; empty for a file without any (OBJ, PLY, a glTF without materials).
    pub materials: Vec<Material>,
    /// The instance each triangle came from, an index into `instances` (a glTF node's index
    /// in the file); empty when every triangle is instance 0 (an OBJ or PLY file).
    pub triangle_instances: Vec<u32>,
    /// The name of each instance: a glTF file's nodes' names in the file's order (`None` for
    /// a node without one), or an OBJ or PLY file's name.
    pub instances: Vec<Option<String>>,
    /// Texture coordinates of each vertex (`TEXCOORD_0` in the first two, `TEXCOORD_1` in the
    /// last two); empty when no material reads a texture.
    pub texcoords: Vec<[f32; 4]>,
    /// The textures the materials read.
    pub textures: Vec<super::Texture>,
    /// Tangent of each vertex (xyz, and in w the handedness of the bitangent: 1 or -1, the
    /// bitangent being w times the normal crossed with the tangent), as the normal textures
    /// read them; empty when no material reads a normal texture, zero where a vertex's
    /// material reads none.
    pub tangents: Vec<[f32; 4]>,
    /// Colour of each vertex (linear RGBA, glTF's `COLOR_0`), multiplying the base colour and
    /// alpha; empty when no vertex has one, white where a vertex lacks it.
    pub colours: Vec<[f32; 4]>,
    /// The meshes `mesh` copies out and where each copy goes, when a file places a mesh more
    /// than once (glTF nodes sharing a mesh, `EXT_mesh_gpu_instancing`): what tracing through
    /// two levels needs. None otherwise.
    pub placements: Option<Box<Placements>>,
}

/// The copies a mesh of placed meshes is made of ([`MaterialMesh::placements`]): copy i's
/// triangles follow copy i - 1's, each copy's in its mesh's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Placements {
    /// Each mesh in its own space.
    pub meshes: Vec<Mesh>,
    /// Each copy: its mesh (an index into `meshes`) and its transform into the copied-out
    /// mesh's space.
    pub copies: Vec<(u32, Mat4)>,
}

impl Placements {
    /// Moves every copy by `m` after its own transform.
    pub fn transform(&mut self, m: Mat4) {
        for (_, placement) in &mut self.copies {
            *placement = m * *placement;
        }
    }
}

impl MaterialMesh {
    /// Drops the textures: every material keeps its factors alone (a preview, or a measure of
    /// what the textures cost).
    pub fn drop_textures(&mut self) {
        for material in &mut self.materials {
            *material = material.untextured();
        }
        self.textures.clear();
        self.texcoords.clear();
        self.tangents.clear();
    }

    /// Drops the normal textures and the tangents, saying so when a material had one: a mesh
    /// deformed on the GPU every frame (posed, streamed or refined) moves its normals but has
    /// no tangents moved with them, and a normal texture read with the rest tangents would
    /// shade wrongly.
    pub fn drop_normal_textures(&mut self) {
        let mut dropped = 0;
        for material in &mut self.materials {
            if material.normal_texture.is_some() {
                dropped += 1;
                *material = material.with_normal_map(super::TextureRef::NONE, 1.0);
            }
        }
        if dropped > 0 {
            log::warn!(
                "normal textures are not applied to meshes deformed on the GPU: {dropped} \
                 material(s) shade with their vertex normals"
            );
        }
        self.tangents.clear();
    }

    /// Applies `m` to the mesh ([`Mesh::transformed`]) and its tangents (by `m`'s upper 3x3;
    /// the handedness flips where `m` mirrors).
    pub fn transform(&mut self, m: Mat4) {
        self.mesh = self.mesh.transformed(m);
        transform_tangents(&mut self.tangents, m);
        if let Some(placements) = &mut self.placements {
            placements.transform(m);
        }
    }

    /// Loads the mesh in `path` as [`Mesh::load`] does, with the materials of a glTF file
    /// (see [`gltf_loader::load_with_materials`] for how they are mapped).
    pub fn load(path: &Path) -> Result<Self, SceneError> {
        let loaded = Self::read(path)?;
        loaded.mesh.validate(path)?;
        Ok(loaded)
    }

    fn read(path: &Path) -> Result<Self, SceneError> {
        check_regular_file(path)?;
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        let mesh = match extension.as_deref() {
            Some("obj") => obj::load(path)?,
            Some("ply") => ply::load(path)?,
            Some("pcd") => pcd::load(path)?,
            Some("las" | "laz") => Mesh {
                positions: las::load(path)?.points,
                ..Mesh::default()
            },
            Some("e57") => Mesh {
                positions: e57::load(path)?.points,
                ..Mesh::default()
            },
            Some("gltf" | "glb") => {
                return gltf_loader::load_with_materials(path, AssetAccess::ModelFolder);
            }
            _ => {
                return Err(SceneError::UnknownFormat {
                    path: path.to_path_buf(),
                });
            }
        };
        Ok(Self {
            mesh,
            instances: vec![path.file_name().map(|n| n.to_string_lossy().into_owned())],
            ..Self::default()
        })
    }
}

/// `tangents` moved by `m`'s upper 3x3, as surface directions are; the handedness (w) flips
/// where `m` mirrors, so that the bitangent stays w times the normal crossed with the tangent.
pub(crate) fn transform_tangents(tangents: &mut [[f32; 4]], m: Mat4) {
    let linear = Mat3::from_mat4(m);
    let handedness = if linear.determinant() < 0.0 {
        -1.0
    } else {
        1.0
    };
    for t in tangents {
        let turned = linear * Vec3::new(t[0], t[1], t[2]);
        *t = [turned.x, turned.y, turned.z, t[3] * handedness];
    }
}
