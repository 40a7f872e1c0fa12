//! Animated input measured (`canopy bench animation`): the skinning kernel over a glTF rig's
//! vertices repeated to a given count, Loop subdivision of closed control meshes of given
//! sizes (GPU levels, and the CPU's one-off stencil build), and a vertex-animation sequence
//! streamed from disk against the same mesh held still, frames rendered three in flight (wall
//! time: whether reading the next file hides behind the GPU's work).
//!
//! Every figure also carries its work counters (dispatches, barriers) and the bytes uploaded
//! per frame, which are the same on every device.

use super::harness::{Timing, count_work, time_runs};
use super::{Error, Result};
use crate::accel::StructureKind;
use crate::render::presets::{MeshLook, Motion, Refinement, Subject};
use crate::scene::animated::subdivide::Subdivider;
use crate::scene::animated::subdivision::LoopSubdivision;
use crate::scene::animated::{MeshInput, OpenOptions, VertexSource, skin::Skinner};
use crate::scene::rig::{ClipTime, Rig};
use crate::scene::{MaterialMesh, Mesh};
use crate::sequence::{DEFAULT_FRAMES_IN_FLIGHT, Flow, FrameSequence, SequenceConfig};
use crate::vk::{Context, MemoryKind, WorkCounts};
use glam::Mat4;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What `canopy bench animation` measures.
#[derive(Clone, Debug)]
pub struct AnimationConfig {
    /// The glTF rig skinned (its vertices repeated up to each count).
    pub rig: PathBuf,
    /// Vertex counts skinned.
    pub skin_vertices: Vec<u32>,
    /// Triangle counts of the control meshes subdivided.
    pub control_triangles: Vec<u32>,
    /// Levels of Loop subdivision.
    pub levels: u32,
    /// A vertex-animation sequence streamed (a folder or printf pattern), if any.
    pub sequence: Option<PathBuf>,
    /// Frames rendered of the sequence (it loops) and of the still mesh.
    pub frames: u32,
    /// Image size of those frames.
    pub size: (u32, u32),
    /// Timed runs of the kernels (after a warm-up); the median is reported.
    pub repeats: u32,
}

/// The skinning kernel over one vertex count.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SkinReport {
    /// Vertices posed.
    pub vertices: u32,
    /// Median GPU time of a frame's pose: its upload and the kernel.
    pub timing: Timing,
    /// Bytes uploaded per frame (joint matrices and morph weights).
    pub uploaded_bytes: u64,
    /// Device bytes of the rig's vertex data.
    pub memory_bytes: u64,
    /// Dispatches and barriers of one frame's pose.
    pub work: WorkCounts,
}

/// Loop subdivision of one control mesh.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SubdivisionReport {
    /// Triangles of the control mesh.
    pub control_triangles: u32,
    /// Levels.
    pub levels: u32,
    /// Triangles and vertices of the refined mesh.
    pub refined: (u32, u32),
    /// Median GPU time of every level.
    pub timing: Timing,
    /// The CPU's stencil build, once, in ms.
    pub setup_ms: f64,
    /// Device bytes of the stencils and intermediate levels.
    pub memory_bytes: u64,
    /// Dispatches and barriers of one frame's levels.
    pub work: WorkCounts,
}

/// A sequence streamed from disk against the same mesh held still.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StreamReport {
    /// The sequence.
    pub sequence: String,
    /// Its files and vertices per file.
    pub files: usize,
    /// Vertices per frame.
    pub vertices: u32,
    /// Frames rendered each way.
    pub frames: u32,
    /// Frames per second of wall time, streamed.
    pub streamed_fps: f64,
    /// Frames per second of wall time, the first frame held still.
    pub still_fps: f64,
    /// Bytes uploaded per streamed frame.
    pub uploaded_bytes: u64,
    /// Milliseconds the streamed frames' recordings waited for files not yet read, in all.
    pub waited_ms: f64,
    /// Reader threads.
    pub readers: usize,
    /// Mean milliseconds a reader takes to read (parse and place) a file.
    pub read_ms: f64,
}

/// Everything `canopy bench animation` measures.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AnimationReport {
    /// The skinning kernel.
    pub skins: Vec<SkinReport>,
    /// Loop subdivision.
    pub subdivisions: Vec<SubdivisionReport>,
    /// The streamed sequence.
    pub stream: Option<StreamReport>,
}

/// `rig` with its vertices repeated until there are at least `vertices` (the skinning
/// kernel's work grows with them; the pose is the same).
fn repeated(rig: &Rig, vertices: u32) -> Result<Rig> {
    if rig.has_morph_targets() {
        return Err(Error::Invalid(
            "the skinning benchmark repeats a rig without morph targets".into(),
        ));
    }
    let n = rig.rest.mesh.positions.len().max(1);
    let copies = (vertices as usize).div_ceil(n);
    let mut big = rig.clone();
    big.rest.mesh.positions = rig.rest.mesh.positions.repeat(copies);
    big.rest.mesh.positions.truncate(vertices as usize);
    big.joints = rig.joints.repeat(copies);
    big.weights = rig.weights.repeat(copies);
    big.part_of_vertex = rig.part_of_vertex.repeat(copies);
    big.joints.truncate(vertices as usize);
    big.weights.truncate(vertices as usize);
    big.part_of_vertex.truncate(vertices as usize);
    Ok(big)
}

/// A closed torus of about `triangles` triangles (a grid of three times as many segments
/// around the ring as around the tube, two triangles per cell).
pub fn torus(triangles: u32) -> Mesh {
    let v = ((triangles as f64 / 6.0).sqrt().round() as u32).max(3);
    let u = 3 * v;
    let tau = std::f32::consts::TAU;
    let mut mesh = Mesh::default();
    for j in 0..v {
        for i in 0..u {
            let (a, b) = (tau * i as f32 / u as f32, tau * j as f32 / v as f32);
            let r = 1.0 + 0.35 * b.cos();
            mesh.positions
                .push([r * a.cos(), 0.35 * b.sin(), r * a.sin()]);
            let at = |i: u32, j: u32| (j % v) * u + (i % u);
            let (p, q, r, s) = (at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1));
            mesh.triangles.push([p, q, r]);
            mesh.triangles.push([p, r, s]);
        }
    }
    mesh
}

/// Measures what `config` asks for.
pub fn measure(ctx: &Context, config: &AnimationConfig) -> Result<AnimationReport> {
    let rig = Rig::load(&config.rig)?;
    let at = ClipTime {
        clip: (!rig.clips.is_empty()).then_some(0),
        looping: true,
    };
    let mut skins = Vec::new();
    for &vertices in &config.skin_vertices {
        let big = repeated(&rig, vertices)?;
        let before = ctx.device_memory().live;
        let skinner = Skinner::new(ctx, big, at, Mat4::IDENTITY)?;
        let memory_bytes = ctx.device_memory().live - before;
        let out = ctx.create_buffer("bench posed", 12 * vertices as u64, MemoryKind::Device)?;
        let timing = time_runs(
            ctx,
            config.repeats,
            |_| Ok(()),
            |rec| skinner.record(rec, 0.5, &out),
        )?;
        let work = count_work(ctx, |rec| skinner.record(rec, 0.5, &out))?;
        skins.push(SkinReport {
            vertices,
            timing,
            uploaded_bytes: skinner.uploaded_bytes(),
            memory_bytes,
            work,
        });
    }
    let mut subdivisions = Vec::new();
    for &triangles in &config.control_triangles {
        let control = torus(triangles);
        let started = Instant::now();
        let subdivision = LoopSubdivision::new(
            &control.triangles,
            control.positions.len() as u32,
            config.levels,
        )
        .map_err(|e| Error::Invalid(e.to_string()))?;
        let setup_ms = started.elapsed().as_secs_f64() * 1e3;
        let before = ctx.device_memory().live;
        let subdivider = Subdivider::new(ctx, &subdivision)?;
        let memory_bytes = ctx.device_memory().live - before;
        let input = ctx.create_buffer_with("bench control", &control.positions)?;
        let refined = subdivider.refined_vertex_count();
        let out = ctx.create_buffer("bench refined", 12 * refined as u64, MemoryKind::Device)?;
        let timing = time_runs(
            ctx,
            config.repeats,
            |_| Ok(()),
            |rec| subdivider.record(rec, &input, &out),
        )?;
        let work = count_work(ctx, |rec| subdivider.record(rec, &input, &out))?;
        subdivisions.push(SubdivisionReport {
            control_triangles: control.triangles.len() as u32,
            levels: config.levels,
            refined: (subdivision.triangles.len() as u32, refined),
            timing,
            setup_ms,
            memory_bytes,
            work,
        });
    }
    let stream = match &config.sequence {
        Some(path) => Some(measure_stream(ctx, path, config)?),
        None => None,
    };
    Ok(AnimationReport {
        skins,
        subdivisions,
        stream,
    })
}

/// Frames per second of wall time rendering `frames` frames of `subject`.
fn frames_per_second(ctx: &Context, subject: &Subject, config: &AnimationConfig) -> Result<f64> {
    let (width, height) = config.size;
    let sequence_config = SequenceConfig {
        structure: StructureKind::Lbvh,
        width,
        height,
        ..SequenceConfig::default()
    };
    let mut sequence = FrameSequence::new(ctx, subject, sequence_config)?;
    let frames: Vec<u32> = (0..config.frames.max(1)).collect();
    let started = Instant::now();
    sequence.render(&frames, |_| Ok::<_, crate::vk::Error>(Flow::Continue))?;
    Ok(frames.len() as f64 / started.elapsed().as_secs_f64())
}

fn measure_stream(ctx: &Context, path: &Path, config: &AnimationConfig) -> Result<StreamReport> {
    let look = MeshLook::default();
    let input = MeshInput::open(
        path,
        &OpenOptions {
            looping: true,
            ..OpenOptions::default()
        },
    )?;
    let MeshInput::Files { files, first, .. } = &input else {
        return Err(Error::Invalid(format!(
            "{}: not a sequence of files",
            path.display()
        )));
    };
    let (file_count, first) = (files.len(), first.clone());
    let streamed = Subject::animated(
        ctx,
        input,
        &look,
        Refinement::default(),
        DEFAULT_FRAMES_IN_FLIGHT,
    )?;
    let vertices = first.positions.len() as u32;
    let uploaded_bytes = 12 * vertices as u64;
    let held = MeshInput::Still(MaterialMesh {
        mesh: first,
        ..MaterialMesh::default()
    });
    let still = Subject::animated(
        ctx,
        held,
        &look,
        Refinement::default(),
        DEFAULT_FRAMES_IN_FLIGHT,
    )?;
    // Each way twice, the first a warm-up (pipelines, file cache).
    frames_per_second(ctx, &still, config)?;
    let still_fps = frames_per_second(ctx, &still, config)?;
    frames_per_second(ctx, &streamed, config)?;
    let waited = stream_waited(&streamed);
    let streamed_fps = frames_per_second(ctx, &streamed, config)?;
    let waited_ms = (stream_waited(&streamed) - waited).as_secs_f64() * 1e3;
    let (readers, read) = match &streamed.motion {
        Motion::Mesh(animated) => match animated.source() {
            VertexSource::Files(stream) => stream.readers(),
            _ => (0, std::time::Duration::ZERO),
        },
        _ => (0, std::time::Duration::ZERO),
    };
    Ok(StreamReport {
        sequence: path.display().to_string(),
        files: file_count,
        vertices,
        frames: config.frames,
        streamed_fps,
        still_fps,
        uploaded_bytes,
        waited_ms,
        readers,
        read_ms: read.as_secs_f64() * 1e3,
    })
}

/// How long `subject`'s file stream has waited for its readers.
fn stream_waited(subject: &Subject) -> std::time::Duration {
    match &subject.motion {
        Motion::Mesh(animated) => match animated.source() {
            VertexSource::Files(stream) => stream.waited(),
            _ => std::time::Duration::ZERO,
        },
        _ => std::time::Duration::ZERO,
    }
}
