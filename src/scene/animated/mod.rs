//! Animated input evaluated on the GPU (seed 000 §4): geometry made every frame by kernels
//! and written straight into the builders' input buffers, with no copy of it through the CPU.
//!
//! - [`skin`]: glTF skinning and morph targets ([`crate::scene::rig`] samples the animation);
//! - [`files`]: vertex-animation sequences streamed from disk;
//! - [`subdivision`], [`subdivide`]: Loop subdivision's stencils (CPU, once) and levels (GPU);
//! - [`normals`]: vertex normals from the posed triangles, and displacement along them.

pub mod files;
pub mod normals;
pub mod skin;
pub mod subdivide;
pub mod subdivision;

use crate::scene::gltf_source::GltfFile;
use crate::scene::rig::{ClipTime, Rig};
use crate::scene::{AssetAccess, MaterialMesh, Mesh, SceneError, gltf_loader};
use crate::vk::{Buffer, Context, MemoryKind, Recorder, Result};
use files::{FileStream, FrameFiles};
use glam::{Mat4, Vec3};
use normals::SurfaceNormals;
use skin::Skinner;
use std::path::Path;
use subdivide::Subdivider;

/// Which frame a recording is for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameTime {
    /// The frame's number (a sequence's file).
    pub frame: u32,
    /// Its time in seconds (a clip's time).
    pub seconds: f32,
    /// The frame-in-flight slot it is recorded into (which staging buffer it may use).
    pub slot: usize,
}

/// Where a mesh's (control) vertices come from each frame.
pub enum VertexSource {
    /// Vertices that do not move, uploaded once (a still mesh refined every frame).
    Still(Buffer),
    /// A glTF scene posed by the skinning kernel.
    Skinned(Box<Skinner>),
    /// A vertex-animation sequence streamed from disk.
    Files(FileStream),
}

impl VertexSource {
    /// Vertices it makes.
    pub fn vertex_count(&self) -> u32 {
        match self {
            Self::Still(buffer) => (buffer.size() / 12) as u32,
            Self::Skinned(skinner) => skinner.vertex_count(),
            Self::Files(stream) => stream.vertex_count(),
        }
    }

    /// Bytes it uploads per frame.
    pub fn uploaded_bytes(&self) -> u64 {
        match self {
            Self::Still(_) => 0,
            Self::Skinned(skinner) => skinner.uploaded_bytes(),
            Self::Files(stream) => stream.uploaded_bytes(),
        }
    }

    /// Records frame `at`'s vertices into `out` (a still source copies them).
    pub fn record(&self, rec: &mut Recorder, at: FrameTime, out: &Buffer) -> Result<()> {
        match self {
            Self::Still(buffer) => {
                rec.barrier_compute_to_transfer();
                rec.copy_buffer(buffer, 0, out, 0, buffer.size());
                rec.barrier_transfer_to_compute();
                Ok(())
            }
            Self::Skinned(skinner) => skinner.record(rec, at.seconds, out),
            Self::Files(stream) => stream.record(rec, at.frame, at.slot, out),
        }
    }
}

/// Displacement of a refined surface along its normals: a height per refined vertex (made
/// once) times `amount`.
pub struct Displacement {
    /// Height per refined vertex, about -1 to 1.
    pub heights: Buffer,
    /// Distance per unit height.
    pub amount: f32,
}

/// A mesh of fixed topology whose vertices the GPU makes every frame: its source, optionally
/// refined by Loop subdivision and displaced along its normals, then its normals (see the
/// module docs). [`Self::record`] writes the final vertices from the start of the builders'
/// position buffer.
pub struct AnimatedMesh {
    source: VertexSource,
    subdivider: Option<Subdivider>,
    displacement: Option<Displacement>,
    normals: SurfaceNormals,
    /// Whether the normals are written (else the renderer shades flat).
    smooth: bool,
    /// The source's output when it is refined.
    control: Option<Buffer>,
    /// The refined positions when they are displaced.
    undisplaced: Option<Buffer>,
    vertex_count: u32,
}

impl AnimatedMesh {
    /// The mesh made by `source`, refined by `subdivider` (its control mesh is the source's),
    /// displaced as `displacement` says along the normals `normals` computes (over the final
    /// mesh), which are written every frame when `smooth` (else the normal buffer is left as it
    /// is: zero normals shade flat).
    pub fn new(
        ctx: &Context,
        source: VertexSource,
        subdivider: Option<Subdivider>,
        displacement: Option<Displacement>,
        normals: SurfaceNormals,
        smooth: bool,
    ) -> Result<Self> {
        let subdivider = subdivider.filter(|s| s.levels() > 0);
        let control_vertices = source.vertex_count();
        let vertex_count = subdivider
            .as_ref()
            .map_or(control_vertices, Subdivider::refined_vertex_count);
        let control = match &subdivider {
            Some(_) => Some(ctx.create_buffer(
                "animated control positions",
                12 * control_vertices as u64,
                MemoryKind::Device,
            )?),
            None => None,
        };
        let undisplaced = match &displacement {
            Some(_) => Some(ctx.create_buffer(
                "animated undisplaced positions",
                12 * vertex_count as u64,
                MemoryKind::Device,
            )?),
            None => None,
        };
        Ok(Self {
            source,
            subdivider,
            displacement,
            normals,
            smooth,
            control,
            undisplaced,
            vertex_count,
        })
    }

    /// Vertices written per frame.
    pub fn vertex_count(&self) -> u32 {
        self.vertex_count
    }

    /// The source of the (control) vertices.
    pub fn source(&self) -> &VertexSource {
        &self.source
    }

    /// Bytes uploaded per frame (see [`VertexSource::uploaded_bytes`]).
    pub fn uploaded_bytes(&self) -> u64 {
        self.source.uploaded_bytes()
    }

    /// Records frame `at`'s vertices into `positions` and, when shaded smooth, their normals
    /// into `normals`; `triangles` are the final mesh's (its triangles first in the buffer).
    pub fn record(
        &self,
        rec: &mut Recorder,
        at: FrameTime,
        positions: &Buffer,
        triangles: &Buffer,
        normals: &Buffer,
    ) -> Result<()> {
        let refined = self.undisplaced.as_ref().unwrap_or(positions);
        match (&self.subdivider, &self.control) {
            (Some(subdivider), Some(control)) => {
                self.source.record(rec, at, control)?;
                subdivider.record(rec, control, refined)?;
            }
            _ => self.source.record(rec, at, refined)?,
        }
        rec.begin_stage("scene: normals");
        if let (Some(displacement), Some(undisplaced)) = (&self.displacement, &self.undisplaced) {
            self.normals.record_displacement(
                rec,
                undisplaced,
                triangles,
                &displacement.heights,
                displacement.amount,
                positions,
            )?;
        }
        if self.smooth {
            self.normals.record(rec, positions, triangles, normals)?;
        }
        rec.end_stage();
        Ok(())
    }
}

/// A mesh file as animated input: still, a glTF scene with a clip to play, or a
/// vertex-animation sequence; with the bounds of every frame for framing it.
pub enum MeshInput {
    /// A mesh that does not move (OBJ, PLY, or a glTF file without animations).
    Still(MaterialMesh),
    /// A glTF scene and the clip it plays.
    Rig(Box<Rig>, ClipTime),
    /// A vertex-animation sequence.
    Files {
        /// Its files.
        files: FrameFiles,
        /// Its first frame (every frame's topology).
        first: Mesh,
        /// Whether it repeats after its last frame (else it holds it).
        looping: bool,
    },
}

/// How [`MeshInput::open`] reads and plays a mesh file.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// The glTF animation to play, by name or 0-based index (none: the first, if any).
    pub clip: Option<String>,
    /// Whether an animation or sequence repeats after its end (else it holds its last frame).
    pub looping: bool,
    /// Whether a glTF file is posed every frame even without animations (for its cameras).
    pub posed: bool,
    /// Where a glTF file's external buffers may be read from.
    pub assets: AssetAccess,
}

/// The most poses of a clip sampled to find the bounds of its frames.
const FRAMING_SAMPLES: usize = 256;

impl MeshInput {
    /// Opens `path` as `options` say: a printf pattern or a folder is a sequence (every file
    /// read once here, so a missing or malformed one is an error before any frame is made); a
    /// glTF file with animations plays clip `options.clip` (a name or a 0-based index; none: the
    /// first), looping or holding its end, and so is posed every frame (as is any glTF file when
    /// `options.posed`: its cameras are then at hand); anything else is still. A glTF file is
    /// read once, its external buffers from where `options.assets` allows.
    pub fn open(path: &Path, options: &OpenOptions) -> std::result::Result<Self, SceneError> {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() || (name.contains('%') && !path.exists()) {
            let files = FrameFiles::open(path)?;
            let first = files.load(0, None)?;
            first.validate(files.path(0))?;
            return Ok(Self::Files {
                files,
                first,
                looping: options.looping,
            });
        }
        let gltf = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("gltf") || e.eq_ignore_ascii_case("glb"));
        if !gltf {
            return Ok(Self::Still(MaterialMesh::load(path)?));
        }
        let file = GltfFile::open(path, options.assets)?;
        if file.document.animations().len() == 0 && options.clip.is_none() && !options.posed {
            let still = gltf_loader::static_mesh(path, &file)?;
            still.mesh.validate(path)?;
            return Ok(Self::Still(still));
        }
        let rig = Rig::from_file(path, &file)?;
        let index = match &options.clip {
            None => (!rig.clips.is_empty()).then_some(0),
            Some(name) => Some(rig.find_clip(name).ok_or_else(|| SceneError::Sequence {
                path: path.to_path_buf(),
                message: format!(
                    "no animation named or numbered '{name}'; the file has {}",
                    rig.clip_list()
                ),
            })?),
        };
        let at = ClipTime {
            clip: index,
            looping: options.looping,
        };
        let posed = Mesh {
            positions: rig.posed_positions(&rig.pose(at, 0.0, Mat4::IDENTITY)),
            normals: Vec::new(),
            triangles: rig.rest.mesh.triangles.clone(),
        };
        posed.validate(path)?;
        Ok(Self::Rig(Box::new(rig), at))
    }

    /// The control mesh's triangles.
    pub fn triangles(&self) -> &[[u32; 3]] {
        match self {
            Self::Still(mesh) => &mesh.mesh.triangles,
            Self::Rig(rig, _) => &rig.rest.mesh.triangles,
            Self::Files { first, .. } => &first.triangles,
        }
    }

    /// Drops the file's textures ([`MaterialMesh::drop_textures`]).
    pub fn drop_textures(&mut self) {
        match self {
            Self::Still(mesh) => mesh.drop_textures(),
            Self::Rig(rig, _) => rig.rest.drop_textures(),
            Self::Files { .. } => {}
        }
    }

    /// The file's mesh with its materials, textures and texture coordinates (a rig's rest
    /// pose); none for a sequence, whose files have no materials.
    pub fn dressed(&self) -> Option<&MaterialMesh> {
        match self {
            Self::Still(mesh) => Some(mesh),
            Self::Rig(rig, _) => Some(&rig.rest),
            Self::Files { .. } => None,
        }
    }

    /// The first frame's positions, in the file's space.
    pub fn first_positions(&self) -> Vec<[f32; 3]> {
        match self {
            Self::Still(mesh) => mesh.mesh.positions.clone(),
            Self::Rig(rig, at) => rig.posed_positions(&rig.pose(*at, 0.0, Mat4::IDENTITY)),
            Self::Files { first, .. } => first.positions.clone(),
        }
    }

    /// The bounds of every frame's positions after `placement`: each file of a sequence (read
    /// and checked against the first), a clip's poses at its key times (at most
    /// 256 of them, evenly chosen) and at its start and end.
    pub fn bounds(&self, placement: Mat4) -> std::result::Result<(Vec3, Vec3), SceneError> {
        let mut lo = Vec3::INFINITY;
        let mut hi = Vec3::NEG_INFINITY;
        let mut add = |positions: &[[f32; 3]]| {
            for &p in positions {
                let p = placement.transform_point3(Vec3::from(p));
                lo = lo.min(p);
                hi = hi.max(p);
            }
        };
        match self {
            Self::Still(mesh) => add(&mesh.mesh.positions),
            Self::Rig(rig, at) => {
                let mut times = vec![0.0];
                if let Some(clip) = at.clip.map(|c| &rig.clips[c]) {
                    let keys = clip.key_times();
                    let stride = keys.len().div_ceil(FRAMING_SAMPLES).max(1);
                    times.extend(keys.into_iter().step_by(stride));
                    times.push(clip.duration);
                }
                for time in times {
                    let at = ClipTime {
                        looping: false,
                        ..*at
                    };
                    add(&rig.posed_positions(&rig.pose(at, time, Mat4::IDENTITY)));
                }
            }
            Self::Files { files, first, .. } => {
                add(&first.positions);
                for n in 1..files.len() {
                    let mesh = files.load(n, Some(first))?;
                    mesh.validate(files.path(n))?;
                    add(&mesh.positions);
                }
            }
        }
        Ok((lo, hi))
    }
}
