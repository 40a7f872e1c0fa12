//! `canopy render`: frames of the animated default scene (or a mesh file, orbited by the
//! camera) rendered headless to PNG files. Each frame the scene's vertices are made on the
//! GPU (default scene), the LBVH is rebuilt from scratch, and camera rays, shadow rays and
//! `--bounces` bounces of reflected and refracted rays are traced and shaded; PNG encoding runs
//! on worker threads while the GPU renders the next frame.

use super::CliError;
use super::interrupt;
use canopy::accel::BuildParams;
use canopy::accel::StructureKind;
use canopy::accel::bvh::lbvh::{BvhLayout, BvhQuality, LbvhParams};
use canopy::export::{
    self, Aov, ExrCompression, ExrOptions, FrameSet, ImageFormat, OutputNaming, PngCompression,
    PngOptions, Shard, ShardMode, VideoCodec, VideoEncoder, VideoError, WriterOptions,
    frame_ranges,
};
use canopy::geom::morton::MortonBits;
use canopy::job::{
    FramePlan, ImageOutput, JobEvent, JobOutputs, JobReport, JobSetup, RenderJob, ResumeMode,
    StatsLog, count_of,
};
use canopy::render::photons::PhotonParams;
use canopy::render::presets::{CameraOverrides, MeshLook, MeshShading, Refinement, Subject};
use canopy::render::{
    BounceStats, FrameSource, MAX_BOUNCES, MAX_SAMPLES, OutputChannel, RenderParams,
};
use canopy::scene::animated::subdivision::MAX_LEVELS;
use canopy::scene::animated::{MeshInput, OpenOptions};
use canopy::scene::{AssetAccess, Environment};
use canopy::sequence::{
    DEFAULT_FRAMES_IN_FLIGHT, DEFAULT_READBACK_BUDGET, FrameSequence, SequenceConfig,
};
use canopy::vk::{Context, ContextOptions};
use glam::Vec3;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of `canopy render`.
#[derive(clap::Args, Clone, Debug)]
pub struct RenderArgs {
    /// Render this mesh (.obj, .ply, .gltf, .glb) over a ground plane instead of the default
    /// scene. It is framed in units of its size: moved to the origin and scaled to a radius of
    /// 1, so a model far from the origin or in any unit renders alike. A glTF file with
    /// animations plays one (skinning and morph targets on the GPU); a printf pattern
    /// ('cloth/frame_%04d.obj') or a folder of numbered OBJ/PLY files is a vertex-animation
    /// sequence, frame n showing its n-th file.
    #[arg(long, value_name = "FILE")]
    pub mesh: Option<PathBuf>,
    /// The glTF animation played, by name or 0-based index [default: the first].
    #[arg(long, value_name = "NAME|INDEX", requires = "mesh")]
    pub animation: Option<String>,
    /// Repeat the animation (or sequence) after its end instead of holding its last pose.
    #[arg(long = "loop", requires = "mesh")]
    pub looping: bool,
    /// Let a glTF file read buffers outside its own folder (absolute paths, `..`, `file:`
    /// URIs, links leading out). Without it a model file can make canopy read only what lies
    /// in the model's folder.
    #[arg(long, requires = "mesh")]
    pub allow_outside_assets: bool,
    /// Levels of Loop subdivision of the mesh every frame, on the GPU (0 to 4; each makes 4
    /// triangles of one).
    #[arg(long, default_value_t = 0, value_parser = parse_levels, requires = "mesh")]
    pub subdivide: u32,
    /// Displace the (refined) surface along its normals by procedural noise every frame, by
    /// up to AMOUNT of the mesh's radius.
    #[arg(long, value_name = "AMOUNT", num_args = 0..=1, default_missing_value = "0.02", value_parser = parse_amount, requires = "mesh")]
    pub displace: Option<f32>,
    /// See the frames through the glTF file's camera of this name (or 0-based index).
    #[arg(long, value_name = "NAME", requires = "mesh")]
    pub camera: Option<String>,
    /// Put the eye here (x,y,z, in the framed scene: a mesh is centred on the origin with
    /// radius 1).
    #[arg(long, value_parser = parse_point, value_name = "X,Y,Z", allow_hyphen_values = true)]
    pub camera_eye: Option<Vec3>,
    /// Look at this point (x,y,z, in the framed scene).
    #[arg(long, value_parser = parse_point, value_name = "X,Y,Z", allow_hyphen_values = true)]
    pub camera_target: Option<Vec3>,
    /// Vertical field of view in degrees.
    #[arg(long, value_parser = parse_fov, value_name = "DEG")]
    pub fov: Option<f32>,
    /// The mesh file's axis that points up: y (glTF's convention), z (many scanned and CAD
    /// models), x, or a negated one (-x, -y, -z).
    #[arg(long, default_value = "y", value_parser = parse_up, allow_hyphen_values = true, value_name = "AXIS", requires = "mesh")]
    pub up: Vec3,
    /// Normals of the mesh file: auto (the file's where it has them, else flat), flat (hard
    /// edges everywhere) or smooth (averaged at every vertex).
    #[arg(long, value_enum, default_value_t = ShadingArg::Auto, requires = "mesh")]
    pub shading: ShadingArg,
    /// Where the frames go: a folder (frame_0000.png, ...), or a pattern whose #### or %04d
    /// is the frame's number ('shots/shot_####.png'), or for one frame a file ('still.png');
    /// the folder is created if missing. Several renders may share a folder: see
    /// docs/troubleshooting.md.
    /// [default: frames, unless --video is given]
    #[arg(long, conflicts_with = "no_write")]
    pub out: Option<PathBuf>,
    /// Also (or, without --out, only) encode the frames into this video by piping them to
    /// ffmpeg (.mp4, .mov, .mkv); frames stream through, so memory stays one frame's.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["shard", "skip_existing"])]
    pub video: Option<PathBuf>,
    /// The video's codec: h264, hevc, prores (422 HQ) or ffv1 (lossless).
    #[arg(long, value_enum, default_value_t = CodecArg::H264, requires = "video")]
    pub codec: CodecArg,
    /// The video's quality for h264 and hevc (0 lossless to 51; lower is better).
    #[arg(long, default_value_t = 18, value_parser = clap::value_parser!(u32).range(0..=51), requires = "video")]
    pub crf: u32,
    /// The image format: png, ppm or exr (linear radiance, with --aovs) [default: the
    /// pattern's extension, else png].
    #[arg(long, value_enum, conflicts_with = "no_write")]
    pub format: Option<FormatArg>,
    /// OpenEXR frames also hold these channels, comma-separated: depth (Z), normal (N.X..),
    /// albedo (albedo.R..), position (P.X..), object_id (the material index), instance_id
    /// (the glTF node, or 0 for an OBJ or PLY file; --stats names them).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub aovs: Vec<AovArg>,
    /// OpenEXR colour, normal and albedo channels as 16-bit floats (else 32-bit).
    #[arg(long)]
    pub half: bool,
    /// PNG bits per channel: 8, or 16 (encoded from the linear radiance).
    #[arg(long, default_value_t = 8, value_parser = parse_png_depth, value_name = "BITS")]
    pub depth: u32,
    /// PNG alpha from the camera rays' coverage: 0 where they see the sky (for compositing
    /// over another background).
    #[arg(long)]
    pub transparent: bool,
    /// How hard PNG frames are compressed (docs/cli.md gives sizes and speeds).
    #[arg(long, value_enum, default_value = "fast", value_name = "LEVEL")]
    pub png_compression: PngCompression,
    /// How OpenEXR frames are compressed, every method lossless (docs/cli.md gives sizes and
    /// speeds).
    #[arg(long, value_enum, default_value = "rle", value_name = "METHOD")]
    pub exr_compression: ExrCompression,
    /// Threads encoding frames [default: one per CPU core, fewer where the frames in
    /// flight would pass 1 GiB].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Frames to render: 3, a..b (b excluded), a..=b, with :step (0..240:2), or a list of
    /// those (1,5,9..12). Frame n shows time n / fps, and its file carries n. Any range is
    /// fine (0..4294967295 starts at once): the frames are never listed up front.
    #[arg(long, default_value = "0..24", value_parser = canopy::export::parse_frames)]
    pub frames: FrameSet,
    /// Render only shard I of N of the frames (0-based): with a Slurm array,
    /// $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT; with a Kubernetes Indexed Job,
    /// $JOB_COMPLETION_INDEX/N.
    #[arg(long, value_parser = parse_shard, value_name = "I/N")]
    pub shard: Option<(u32, u32)>,
    /// How shards split the frames: interleaved (every N-th frame) or block (contiguous runs).
    #[arg(long, value_enum, default_value_t = ShardArg::Interleaved, requires = "shard")]
    pub shard_mode: ShardArg,
    /// Render only the frames whose file is missing (a complete file is never partial, so an
    /// interrupted render resumes where it stopped).
    #[arg(long, conflicts_with_all = ["overwrite", "no_write"])]
    pub skip_existing: bool,
    /// Write over frames that exist (without this or --skip-existing, existing frames are an
    /// error).
    #[arg(long, conflicts_with = "no_write")]
    pub overwrite: bool,
    /// Render on several devices at once: all, or device indices or names, comma-separated
    /// (`canopy info` lists them); frames go to whichever device is free and are written in
    /// order.
    #[arg(long, value_name = "all|0,2")]
    pub devices: Option<String>,
    /// Append one JSON line per finished frame to this file: its GPU stage times, rays, device
    /// memory, wall time and file.
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// Image size.
    #[arg(long, default_value = "960x540", value_parser = parse_size, value_name = "WxH")]
    pub size: (u32, u32),
    /// Triangles of the default scene's deforming torus (1,000 to 20,000,000); the ground and
    /// the two spheres add 4,418.
    #[arg(long, default_value_t = 250_000, conflicts_with = "mesh")]
    pub triangles: u64,
    /// Bounces of reflected and refracted rays after the camera rays (0 to 16).
    #[arg(long, default_value_t = 2, value_parser = parse_bounces)]
    pub bounces: u32,
    /// Samples per pixel (1 to 4096): each from a point of its own in the pixel, stratified
    /// and jittered the same way on every device; the pixel is their mean (a box filter).
    #[arg(long, default_value_t = 1, value_parser = parse_samples)]
    pub spp: u32,
    /// An equirectangular environment map (Radiance .hdr or OpenEXR .exr): the sky seen in
    /// the background, reflections and refractions, and, with more than one sample per pixel
    /// (or --sky-light), the light of diffuse surfaces.
    #[arg(long, value_name = "FILE")]
    pub environment: Option<PathBuf>,
    /// What the environment's radiance is multiplied by.
    #[arg(long, default_value_t = 1.0, requires = "environment", value_parser = parse_intensity)]
    pub environment_intensity: f32,
    /// The environment's turn about the vertical axis, in degrees.
    #[arg(long, default_value_t = 0.0, requires = "environment", value_parser = parse_degrees)]
    pub environment_rotation: f32,
    /// Light diffuse surfaces by the sky (the environment, or the procedural sky) through one
    /// sampled occlusion ray per hit and sample instead of the ambient term, even at one
    /// sample per pixel (noisy there). On by itself with --environment and --spp above 1.
    #[arg(long)]
    pub sky_light: bool,
    /// Frames per second of animation time.
    #[arg(long, default_value_t = 24.0, value_parser = parse_fps)]
    pub fps: f32,
    /// The acceleration structure rebuilt every frame: lbvh, kdtree, bih or grid (the screen
    /// grid casts the camera rays; secondary and shadow rays go through an LBVH built in the
    /// same frame).
    #[arg(long, default_value = "lbvh", value_parser = super::parse_traced_structure)]
    pub structure: StructureKind,
    /// Morton code width of the LBVH: 30 or 63 [default: 30].
    #[arg(long, value_enum)]
    pub morton_bits: Option<MortonArg>,
    /// The LBVH's tree: fast (the radix tree), high (clustered by surface area) or best
    /// (restructured by treelets) [default: fast].
    #[arg(long, value_enum)]
    pub bvh_quality: Option<QualityArg>,
    /// How rays read the LBVH: binary (as built) or wide (collapsed into an 8-wide
    /// compressed tree) [default: binary].
    #[arg(long, value_enum)]
    pub bvh_layout: Option<LayoutArg>,
    /// Trace one tree over every copy of a mesh a glTF file places more than once (nodes
    /// sharing a mesh, EXT_mesh_gpu_instancing), rebuilt every frame, instead of two levels:
    /// each mesh's tree built once and a top tree over the copies every frame (the default
    /// with the binary LBVH).
    #[arg(long)]
    pub flatten: bool,
    /// Caustics by photon mapping: every frame, photons are traced from the lights towards the
    /// mirror and glass objects, the caustic ones stored and their kd-tree built, and each
    /// diffuse hit gathers the light of its nearest photons. Off by default (it costs a photon
    /// pass per frame); scenes without mirrors or glass store no photons.
    #[arg(long)]
    pub caustics: bool,
    /// Photons per frame (with --caustics).
    #[arg(long, default_value_t = 200_000, requires = "caustics")]
    pub photons: u32,
    /// The most mirror and glass bounces of a photon (with --caustics).
    #[arg(long, default_value_t = 6, requires = "caustics")]
    pub photon_bounces: u32,
    /// Photons per radiance estimate (with --caustics; 1 to 64).
    #[arg(long, default_value_t = 50, requires = "caustics")]
    pub photon_k: u32,
    /// Start each gather from its Alg. 7 estimate (node queries after every photon tree
    /// build, as seed 000 does) rather than from the largest gather radius; the same image,
    /// slower (with --caustics).
    #[arg(long, requires = "caustics")]
    pub photon_estimated_radii: bool,
    /// The largest gather radius, as a fraction of the scene's radius (with --caustics).
    #[arg(long, default_value_t = 0.02, requires = "caustics")]
    pub photon_radius: f32,
    /// Frames rendered ahead of the one being written: each holds its own readback and, for
    /// an animated subject, its own geometry. More hide a slow writer behind the GPU.
    #[arg(long, default_value_t = DEFAULT_FRAMES_IN_FLIGHT as u16,
          value_parser = clap::value_parser!(u16).range(1..=16))]
    pub frames_in_flight: u16,
    /// The most MiB the frames in flight may be read back into: fewer frames fly (not fewer
    /// than two) where as many readbacks would pass it, as 1080p with every f32 AOV would.
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_READBACK_BUDGET >> 20,
          value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub readback_budget_mib: u64,
    /// Print per-stage GPU times and rays/s of every frame.
    #[arg(long)]
    pub profile: bool,
    /// Render without writing PNG files (for timing the GPU work alone).
    #[arg(long)]
    pub no_write: bool,
    /// No progress: neither the bar on a terminal nor the line per frame written otherwise.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `--format` on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum FormatArg {
    /// 8-bit RGBA PNG.
    Png,
    /// Binary 8-bit RGB PPM.
    Ppm,
    /// OpenEXR, linear radiance.
    Exr,
}

impl From<FormatArg> for ImageFormat {
    fn from(arg: FormatArg) -> Self {
        match arg {
            FormatArg::Png => ImageFormat::Png,
            FormatArg::Ppm => ImageFormat::Ppm,
            FormatArg::Exr => ImageFormat::Exr,
        }
    }
}

/// `--aovs` on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum AovArg {
    /// Z.
    Depth,
    /// N.X, N.Y, N.Z.
    Normal,
    /// albedo.R, albedo.G, albedo.B.
    Albedo,
    /// P.X, P.Y, P.Z.
    Position,
    /// object_id.
    #[value(name = "object_id")]
    ObjectId,
    /// instance_id.
    #[value(name = "instance_id")]
    InstanceId,
}

impl From<AovArg> for Aov {
    fn from(arg: AovArg) -> Self {
        match arg {
            AovArg::Depth => Aov::Depth,
            AovArg::Normal => Aov::Normal,
            AovArg::Albedo => Aov::Albedo,
            AovArg::Position => Aov::Position,
            AovArg::ObjectId => Aov::ObjectId,
            AovArg::InstanceId => Aov::InstanceId,
        }
    }
}

/// `--codec` on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum CodecArg {
    /// H.264.
    H264,
    /// H.265.
    Hevc,
    /// ProRes 422 HQ.
    Prores,
    /// FFV1, lossless.
    Ffv1,
}

impl From<CodecArg> for VideoCodec {
    fn from(arg: CodecArg) -> Self {
        match arg {
            CodecArg::H264 => VideoCodec::H264,
            CodecArg::Hevc => VideoCodec::Hevc,
            CodecArg::Prores => VideoCodec::ProRes,
            CodecArg::Ffv1 => VideoCodec::Ffv1,
        }
    }
}

/// `--shard-mode` on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ShardArg {
    /// Every N-th frame from the I-th.
    Interleaved,
    /// Contiguous blocks.
    Block,
}

impl From<ShardArg> for ShardMode {
    fn from(arg: ShardArg) -> Self {
        match arg {
            ShardArg::Interleaved => ShardMode::Interleaved,
            ShardArg::Block => ShardMode::Block,
        }
    }
}

fn parse_png_depth(text: &str) -> Result<u32, String> {
    match text {
        "8" => Ok(8),
        "16" => Ok(16),
        _ => Err(format!("'{text}': expected 8 or 16 bits")),
    }
}

/// `I/N` with I < N.
fn parse_shard(text: &str) -> Result<(u32, u32), String> {
    let parsed = text
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse::<u32>().ok()?, n.trim().parse::<u32>().ok()?)));
    match parsed {
        Some((i, n)) if i < n => Ok((i, n)),
        _ => Err(format!("'{text}': expected I/N with 0 <= I < N")),
    }
}

/// `--shading` on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ShadingArg {
    /// The file's normals where it has them, else flat.
    Auto,
    /// Each triangle's own normal.
    Flat,
    /// Normals averaged at every vertex.
    Smooth,
}

impl From<ShadingArg> for MeshShading {
    fn from(arg: ShadingArg) -> Self {
        match arg {
            ShadingArg::Auto => MeshShading::Auto,
            ShadingArg::Flat => MeshShading::Flat,
            ShadingArg::Smooth => MeshShading::Smooth,
        }
    }
}

/// An axis: `x`, `y`, `z`, `-x`, `-y` or `-z` (`+x` too).
fn parse_up(text: &str) -> Result<Vec3, String> {
    let (sign, axis) = match text.trim().strip_prefix('-') {
        Some(axis) => (-1.0, axis),
        None => (1.0, text.trim().trim_start_matches('+')),
    };
    let axis = match axis.to_ascii_lowercase().as_str() {
        "x" => Vec3::X,
        "y" => Vec3::Y,
        "z" => Vec3::Z,
        _ => return Err(format!("'{text}': expected x, y, z, -x, -y or -z")),
    };
    Ok(sign * axis)
}

/// BVH quality on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum QualityArg {
    /// The radix tree of the Morton codes (LBVH): the fastest build.
    Fast,
    /// Clusters merged by surface area on the way up (H-PLOC): fewer nodes and triangles
    /// tested per ray for a slower build.
    High,
    /// The fast tree restructured by treelets: the lowest SAH cost for the slowest build.
    Best,
}

impl From<QualityArg> for BvhQuality {
    fn from(arg: QualityArg) -> Self {
        match arg {
            QualityArg::Fast => BvhQuality::Fast,
            QualityArg::High => BvhQuality::High,
            QualityArg::Best => BvhQuality::Best,
        }
    }
}

/// BVH layout on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum LayoutArg {
    /// The binary tree as built.
    Binary,
    /// The binary tree collapsed into an 8-wide compressed tree (one more dispatch): about a
    /// third of the node reads per ray.
    Wide,
}

impl From<LayoutArg> for BvhLayout {
    fn from(arg: LayoutArg) -> Self {
        match arg {
            LayoutArg::Binary => BvhLayout::Binary,
            LayoutArg::Wide => BvhLayout::Wide,
        }
    }
}

/// Morton code width on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum MortonArg {
    /// 30-bit codes.
    #[value(name = "30")]
    Bits30,
    /// 63-bit codes.
    #[value(name = "63")]
    Bits63,
}

impl From<MortonArg> for MortonBits {
    fn from(arg: MortonArg) -> Self {
        match arg {
            MortonArg::Bits30 => MortonBits::Bits30,
            MortonArg::Bits63 => MortonBits::Bits63,
        }
    }
}

pub(super) fn parse_levels(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if n <= MAX_LEVELS => Ok(n),
        _ => Err(format!("'{text}': expected 0..={MAX_LEVELS} levels")),
    }
}

pub(super) fn parse_amount(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(a) if a.is_finite() && (0.0..=1.0).contains(&a) => Ok(a),
        _ => Err(format!(
            "'{text}': expected a fraction of the mesh's radius from 0 to 1"
        )),
    }
}

fn parse_fov(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(fov) if fov > 0.0 && fov < 180.0 => Ok(fov),
        _ => Err(format!("'{text}': expected degrees between 0 and 180")),
    }
}

/// `x,y,z`, as `--camera-eye` takes it.
fn point_text(p: Vec3) -> String {
    format!("{},{},{}", p.x, p.y, p.z)
}

fn parse_point(text: &str) -> Result<Vec3, String> {
    let parts: Vec<&str> = text.split(',').collect();
    let values: Result<Vec<f32>, _> = parts.iter().map(|p| p.trim().parse::<f32>()).collect();
    match values {
        Ok(v) if v.len() == 3 && v.iter().all(|c| c.is_finite()) => Ok(Vec3::new(v[0], v[1], v[2])),
        _ => Err(format!("'{text}': expected three numbers x,y,z")),
    }
}

pub(super) fn parse_bounces(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if n <= MAX_BOUNCES => Ok(n),
        _ => Err(format!("'{text}': expected 0..={MAX_BOUNCES} bounces")),
    }
}

pub(super) fn parse_samples(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if (1..=MAX_SAMPLES).contains(&n) => Ok(n),
        _ => Err(format!(
            "'{text}': expected 1..={MAX_SAMPLES} samples per pixel"
        )),
    }
}

fn parse_intensity(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{text}': expected a finite number, 0 or more")),
    }
}

fn parse_degrees(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("'{text}': expected a finite number of degrees")),
    }
}

fn parse_fps(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(fps) if fps.is_finite() && fps > 0.0 => Ok(fps),
        _ => Err(format!(
            "'{text}': expected a positive number of frames per second"
        )),
    }
}

pub(super) fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let (w, h) = text
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("'{text}': expected WxH, e.g. 1920x1080"))?;
    let dim = |s: &str| match s.trim().parse::<u32>() {
        Ok(v) if (1..=16384).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' in '{text}': expected a whole number from 1 to 16384"
        )),
    };
    Ok((dim(w)?, dim(h)?))
}

/// `shot.png` as a pattern: `shot_####.png`.
fn single_to_pattern(path: &Path) -> PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let extension = path.extension().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!("{stem}_####.{extension}"))
}

/// A video that could not be made: ffmpeg missing is bad input (the machine lacks it), a
/// failure writing it an I/O error.
pub(super) fn video_error(e: VideoError) -> CliError {
    match e {
        VideoError::NoFfmpeg => CliError::Input(e.to_string()),
        e => CliError::Io(e.to_string()),
    }
}

/// The longest file name canopy writes: `NAME_MAX` (255 bytes) less what a temporary file's
/// name adds to it (`.NAME.XXXXXX.partial`).
const MAX_FILE_NAME: usize = 255 - ".".len() - ".XXXXXX".len() - ".partial".len();

/// Checks up front that every component of `path` fits `NAME_MAX`, and its file name
/// [`MAX_FILE_NAME`] (for `what`, e.g. "--out"), so that a long name is a usage error before
/// rendering rather than a failed write after.
fn check_name_length(path: &Path, what: &str) -> Result<(), CliError> {
    let too_long = |component: &std::ffi::OsStr, limit: usize| {
        CliError::Usage(format!(
            "{what} '{}': the name '{}' is {} bytes long; file names here are at most {limit} \
             bytes",
            path.display(),
            component.to_string_lossy(),
            component.len()
        ))
    };
    for component in path.components() {
        let component = component.as_os_str();
        if component.len() > 255 {
            return Err(too_long(component, 255));
        }
    }
    match path.file_name() {
        Some(name) if name.len() > MAX_FILE_NAME => Err(too_long(name, MAX_FILE_NAME)),
        _ => Ok(()),
    }
}

pub fn run(options: &ContextOptions, args: &RenderArgs) -> Result<(), CliError> {
    let files = output_files(args)?;
    check_camera(args)?;
    let devices = device_options(options, args.devices.as_deref())?;
    let Some(frames) = frame_plan(args, files.naming.as_ref())? else {
        return Ok(());
    };
    let stats = args.stats.as_deref().map(StatsLog::append).transpose()?;
    let environment = load_environment(args)?;
    let video = open_video(args)?;
    let destination = destination(args);
    let OutputFiles {
        naming,
        options: writer_options,
        channels,
    } = files;
    let job = RenderJob {
        frames: &frames,
        devices: &devices,
        setup: JobSetup {
            context: &super::context,
            source: &|ctx| build_subject(ctx, args, environment.as_ref()),
            config: &|subject| sequence_config(args, subject, channels.clone()),
            attributes: &|frame, subject| frame_attributes(frame, args, subject),
            finished: &print_caustics,
        },
        outputs: JobOutputs {
            images: naming.clone().map(|naming| ImageOutput {
                naming,
                options: writer_options,
            }),
            video,
            stats,
        },
    };
    let mut printer = Printer::new(args, frames.len(), destination);
    // While frames are rendered, SIGINT or SIGTERM stops the render after the frames already
    // being written; a second signal while stopping ends the process at once (frames are
    // still never left half-written under their own names). Before (loading the mesh,
    // building the structures) an interrupt ends canopy at once.
    let mut _graceful = None;
    let stop = interrupt::stop_flag();
    let report = job.run(&stop, |event| {
        if let JobEvent::Started { .. } = event {
            _graceful = Some(interrupt::graceful());
        }
        printer.print(event);
    });
    printer.finish();
    report_outcome(report, (&naming, args, frames.len()), stop.is_stopped())
}

/// The image files a render writes, as its arguments ask.
struct OutputFiles {
    /// Their names and format; none without files (`--no-write`, or a video alone).
    naming: Option<OutputNaming>,
    /// How they are encoded.
    options: WriterOptions,
    /// The channels the frames carry for them.
    channels: Vec<canopy::render::OutputChannel>,
}

/// The files `args` ask for ([`out_path`]), checked: a single file name for one frame only;
/// the PNG and OpenEXR settings only with their format.
fn output_files(args: &RenderArgs) -> Result<OutputFiles, CliError> {
    let naming = match &out_path(args) {
        None => None,
        Some(out) => Some(
            OutputNaming::parse(out, args.format.map(ImageFormat::from))
                .map_err(CliError::Usage)?,
        ),
    };
    if let Some(naming) = &naming {
        if naming.is_single_file() && args.frames.len() != 1 {
            return Err(CliError::Usage(format!(
                "--out '{}' names one file, and {} frames are asked for: give the file name a \
                 frame number ('{}'), or render one frame (--frames N)",
                naming.path(0).display(),
                args.frames.len(),
                single_to_pattern(&naming.path(0)).display()
            )));
        }
        let last = args
            .frames
            .get(args.frames.len().saturating_sub(1))
            .unwrap_or(0);
        check_name_length(&naming.path(last), "--out")?;
    }
    if let Some(video) = &args.video {
        check_name_length(video, "--video")?;
    }
    let format = naming.as_ref().map(OutputNaming::format);
    let exr_asked = !args.aovs.is_empty() || args.half;
    if (exr_asked || args.exr_compression != ExrCompression::default())
        && format != Some(ImageFormat::Exr)
    {
        return Err(CliError::Usage(
            "--aovs, --half and --exr-compression describe OpenEXR frames: write them with an \
             .exr pattern or --format exr"
                .into(),
        ));
    }
    let png = PngOptions {
        sixteen_bit: args.depth == 16,
        transparent: args.transparent,
        compression: args.png_compression,
    };
    if png != PngOptions::default() && format != Some(ImageFormat::Png) {
        return Err(CliError::Usage(
            "--depth, --transparent and --png-compression describe PNG frames: write them \
             with a .png pattern, a folder or --format png"
                .into(),
        ));
    }
    let options = WriterOptions {
        png,
        exr: ExrOptions {
            aovs: args.aovs.iter().map(|&a| a.into()).collect(),
            half: args.half,
            compression: args.exr_compression,
        },
        threads: args
            .threads
            .map_or(WriterOptions::default().threads, |n| n as usize),
        memory: WriterOptions::DEFAULT_MEMORY,
    };
    let channels = format.map_or(Vec::new(), |f| {
        export::output_channels(f, png, &options.exr)
    });
    Ok(OutputFiles {
        naming,
        options,
        channels,
    })
}

/// Refuses a camera that looks at its own position.
fn check_camera(args: &RenderArgs) -> Result<(), CliError> {
    match (args.camera_eye, args.camera_target) {
        (Some(eye), Some(target)) if eye == target => Err(CliError::Usage(format!(
            "--camera-eye and --camera-target are both {}: the camera needs a direction to \
             look in",
            point_text(eye)
        ))),
        _ => Ok(()),
    }
}

/// The frames this run renders (its shard, less those written already as the resume flags
/// say), with the skipped ones said; none when nothing is left to render.
fn frame_plan(
    args: &RenderArgs,
    naming: Option<&OutputNaming>,
) -> Result<Option<FramePlan>, CliError> {
    let resume = match (args.skip_existing, args.overwrite) {
        (true, _) => ResumeMode::SkipExisting,
        (false, true) => ResumeMode::Overwrite,
        (false, false) => ResumeMode::Error,
    };
    let (index, count) = args.shard.unwrap_or((0, 1));
    let shard = Shard {
        index,
        count,
        mode: args.shard_mode.into(),
    };
    let frames = FramePlan::new(&args.frames, shard, naming, resume)?;
    if !frames.skipped().is_empty() {
        println!(
            "skipping {} written already: {}",
            count_of(frames.skipped().len(), "frame"),
            frame_ranges(frames.skipped())
        );
    }
    if frames.is_empty() {
        println!("nothing to render: every frame asked for is written already");
        return Ok(None);
    }
    Ok(Some(frames))
}

/// The video encoder `--video` asks for, its process and temporary file removed if an
/// interrupt ends canopy before the frames are rendered.
fn open_video(args: &RenderArgs) -> Result<Option<VideoEncoder>, CliError> {
    let Some(path) = &args.video else {
        return Ok(None);
    };
    let (width, height) = args.size;
    let video = VideoEncoder::new(path, (width, height), args.fps, args.codec.into(), args.crf)
        .map_err(video_error)?;
    interrupt::on_abort(interrupt::Cleanup::Kill(video.process_id()));
    if let Some(temporary) = video.temporary_path() {
        interrupt::on_abort(interrupt::Cleanup::Remove(temporary.to_path_buf()));
    }
    Ok(Some(video))
}

/// Where image files go: --out, or frames/ unless only a video is asked for.
fn out_path(args: &RenderArgs) -> Option<PathBuf> {
    match (&args.out, &args.video) {
        _ if args.no_write => None,
        (Some(out), _) => Some(out.clone()),
        (None, Some(_)) => None,
        (None, None) => Some(PathBuf::from("frames")),
    }
}

/// Where the frames go, as the first line says it.
fn destination(args: &RenderArgs) -> String {
    match (out_path(args), &args.video) {
        (Some(out), Some(video)) => format!("{} and {}", out.display(), video.display()),
        (Some(out), None) => out.display().to_string(),
        (None, Some(video)) => video.display().to_string(),
        (None, None) => "nowhere (--no-write)".to_string(),
    }
}

/// Says how the job ended: the frames written when it failed or stopped, the video, the
/// rate; the error whose exit code the process takes (the render's own, else a frame's).
fn report_outcome(
    report: JobReport<CliError>,
    (naming, args, planned): (&Option<OutputNaming>, &RenderArgs, u64),
    interrupted: bool,
) -> Result<(), CliError> {
    let mut outcome = report.outcome;
    match report.video {
        Some(Ok((path, frames))) => println!(
            "wrote {} ({})",
            path.display(),
            count_of(frames as usize, "frame")
        ),
        Some(Err(e)) => outcome = outcome.and(Err(video_error(e))),
        None => {}
    }
    if let Some(naming) = naming
        && (report.write_failure.is_some() || interrupted || outcome.is_err())
    {
        eprintln!(
            "frames written to {}: {} ({} of {planned})",
            naming.folder().display(),
            frame_ranges(&report.written),
            report.written.len(),
        );
    }
    if let Some(failure) = report.write_failure {
        let failure = CliError::Io(failure.to_string());
        match outcome {
            // Both: the render's own error is the exit's, the frame's is said too.
            Err(_) => eprintln!("error: {failure}"),
            Ok(()) => outcome = Err(failure),
        }
    }
    outcome?;
    if interrupted {
        return Err(CliError::Interrupted);
    }
    let frames = report.gpu_ms.len() as f64;
    let mean_gpu = report.gpu_ms.iter().sum::<f64>() / frames;
    println!(
        "{} in {:.2} s: {:.1} frames/s{}; GPU {mean_gpu:.3} ms per frame",
        count_of(report.gpu_ms.len(), "frame"),
        report.wall_s,
        frames / report.wall_s,
        match (naming, &args.video) {
            (None, None) => String::new(),
            (None, Some(_)) => " with video output".to_string(),
            (Some(naming), video) => format!(
                " with {} output{}",
                naming.format().extension().to_uppercase(),
                if video.is_some() { " and video" } else { "" }
            ),
        },
    );
    if report.dropped_rays > 0 {
        eprintln!(
            "warning: {} rays did not fit in the renderer's ray lists and were not traced \
             (their paths end early); see --profile for the bounces",
            report.dropped_rays
        );
    }
    Ok(())
}

/// Prints a job's progress: the start, then a bar on a terminal or one line per frame on
/// stderr (a farm's log), or each frame's profile with `--profile`.
struct Printer<'a> {
    args: &'a RenderArgs,
    planned: u64,
    destination: String,
    progress: indicatif::ProgressBar,
    log_lines: bool,
    started: Instant,
}

impl<'a> Printer<'a> {
    fn new(args: &'a RenderArgs, planned: u64, destination: String) -> Self {
        let progress = indicatif::ProgressBar::new(planned).with_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} frames {per_sec} eta {eta}",
            )
            .expect("a valid template"),
        );
        let log_lines = !args.quiet && !args.profile && !std::io::stderr().is_terminal();
        if args.profile || args.quiet || log_lines {
            progress.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        Self {
            args,
            planned,
            destination,
            progress,
            log_lines,
            started: Instant::now(),
        }
    }

    fn print(&mut self, event: JobEvent) {
        match event {
            JobEvent::Started { devices, triangles } => {
                let devices = match devices {
                    [one] => one.clone(),
                    several => format!("{} devices ({})", several.len(), several.join(", ")),
                };
                let (width, height) = self.args.size;
                println!(
                    "rendering {} of {triangles} triangles at {width}x{height}, {} bounces, on \
                     {devices} to {}",
                    count_of(self.planned as usize, "frame"),
                    self.args.bounces,
                    self.destination
                );
                self.started = Instant::now();
            }
            JobEvent::Frame {
                record,
                file,
                done,
                written,
                backlog,
            } => {
                if self.args.profile {
                    print_frame_profile(record.frame, &record.stages, &record.bounces);
                }
                self.progress.inc(1);
                if self.log_lines {
                    let rate = done as f64 / self.started.elapsed().as_secs_f64();
                    let left = self.planned - done;
                    let target = match file {
                        None => "not written".to_string(),
                        Some(file) => format!(
                            "to {} ({written} written, {backlog} encoding)",
                            file.display()
                        ),
                    };
                    eprintln!(
                        "frame {} ({done}/{}): GPU {:.3} ms, {rate:.2} frames/s, ETA {:.0} s, \
                         {target}",
                        record.frame,
                        self.planned,
                        record.gpu_ms(),
                        left as f64 / rate
                    );
                }
            }
        }
    }

    fn finish(&self) {
        self.progress.finish_and_clear();
    }
}

/// The environment map `args` names, read once for every device, with its intensity and turn.
fn load_environment(args: &RenderArgs) -> Result<Option<Environment>, CliError> {
    let Some(path) = &args.environment else {
        return Ok(None);
    };
    let mut environment = Environment::load(path).map_err(|e| CliError::Input(e.to_string()))?;
    environment.intensity = args.environment_intensity;
    environment.rotation_degrees = args.environment_rotation;
    Ok(Some(environment))
}

/// The subject `args` asks for, on `ctx`: the default scene or `--mesh`, with the camera
/// overrides, lit by `environment` where there is one.
fn build_subject(
    ctx: &Context,
    args: &RenderArgs,
    environment: Option<&Environment>,
) -> Result<Subject, CliError> {
    let mut subject = match &args.mesh {
        Some(path) => {
            let options = MeshOptions {
                look: MeshLook {
                    up: args.up,
                    shading: args.shading.into(),
                },
                animation: args.animation.as_deref(),
                looping: args.looping,
                refinement: Refinement {
                    levels: args.subdivide,
                    displace: args.displace,
                },
                camera: args.camera.as_deref(),
                assets: if args.allow_outside_assets {
                    AssetAccess::Anywhere
                } else {
                    AssetAccess::ModelFolder
                },
                textures: true,
                frames_in_flight: args.frames_in_flight.into(),
            };
            mesh_subject(ctx, path, &options)?
        }
        None => Subject::default_scene(ctx, args.triangles)?,
    };
    subject.scene.set_environment(ctx, environment)?;
    subject.camera_overrides = CameraOverrides {
        eye: args.camera_eye,
        target: args.camera_target,
        fov_degrees: args.fov,
    };
    let (width, height) = args.size;
    let camera = subject.camera(0.0, width as f32 / height as f32);
    if camera.position == camera.target {
        return Err(CliError::Usage(format!(
            "the camera's eye {} is the point it looks at: give --camera-eye and \
             --camera-target different points",
            point_text(camera.position)
        )));
    }
    Ok(subject)
}

/// How `args` renders `subject`'s frames.
fn sequence_config(
    args: &RenderArgs,
    subject: &Subject,
    channels: Vec<OutputChannel>,
) -> Result<SequenceConfig, CliError> {
    let (width, height) = args.size;
    Ok(SequenceConfig {
        structure: args.structure,
        build: BuildParams {
            lbvh: LbvhParams {
                morton_bits: super::morton_bits(args.morton_bits, &[args.structure])?,
                quality: super::bvh_quality(args.bvh_quality, &[args.structure])?,
                layout: super::bvh_layout(args.bvh_layout, &[args.structure])?,
                ..LbvhParams::default()
            },
            ..BuildParams::default()
        },
        render: RenderParams {
            bounces: args.bounces,
            samples: args.spp,
            sky_light: args.sky_light || (args.environment.is_some() && args.spp > 1),
            ..RenderParams::default()
        },
        width,
        height,
        fps: args.fps,
        caustics: args.caustics.then_some(PhotonParams {
            photons: args.photons,
            bounces: args.photon_bounces,
            k: args.photon_k,
            max_radius: args.photon_radius * subject.radius,
            seed: 1,
            estimated_radii: args.photon_estimated_radii,
        }),
        channels,
        frames_in_flight: args.frames_in_flight.into(),
        readback_budget: args.readback_budget_mib << 20,
        two_levels: !args.flatten,
    })
}

/// The caustics' figures of the last frame, when on.
fn print_caustics(ctx: &Context, sequence: &FrameSequence) -> Result<(), CliError> {
    let Some(map) = sequence.renderer().photon_map() else {
        return Ok(());
    };
    let stats = map.stats(ctx)?;
    let gathers = sequence.renderer().gather_stats(ctx)?.unwrap_or_default();
    let c = stats.counters;
    println!(
        "caustics (last frame): {} photons emitted towards {} (light, target) pairs, {} \
         stored ({:.1}%); going on after each bounce: {:?}; {} gathers ({} dropped)",
        c.emitted,
        c.emitters,
        c.stored,
        100.0 * c.stored as f64 / c.emitted.max(1) as f64,
        stats.scattered,
        gathers.1,
        gathers.0 - gathers.1
    );
    Ok(())
}

/// The devices `--devices` names (`all`, or indices and name substrings), each as `options`
/// with its device set; without `--devices`, `options` alone.
fn device_options(
    options: &ContextOptions,
    devices: Option<&str>,
) -> Result<Vec<ContextOptions>, CliError> {
    let Some(devices) = devices else {
        return Ok(vec![options.clone()]);
    };
    let names: Vec<String> = if devices.trim() == "all" {
        let count = canopy::vk::list_devices()?.len();
        (0..count).map(|i| i.to_string()).collect()
    } else {
        devices.split(',').map(|d| d.trim().to_string()).collect()
    };
    if names.is_empty() || names.iter().any(String::is_empty) {
        return Err(CliError::Usage(format!(
            "--devices '{devices}': expected all, or device indices or names separated by commas"
        )));
    }
    Ok(names
        .into_iter()
        .map(|device| ContextOptions {
            device: Some(device),
            ..options.clone()
        })
        .collect())
}

/// How `--mesh` is shown (`canopy render`, `canopy bench render`).
pub(super) struct MeshOptions<'a> {
    /// Its up axis and shading.
    pub look: MeshLook,
    /// The glTF animation played (none: the first).
    pub animation: Option<&'a str>,
    /// Whether the animation or sequence repeats.
    pub looping: bool,
    /// Subdivision and displacement.
    pub refinement: Refinement,
    /// The glTF camera looked through.
    pub camera: Option<&'a str>,
    /// Where a glTF file's external buffers may be read from.
    pub assets: AssetAccess,
    /// Whether its materials read their textures.
    pub textures: bool,
    /// Frames the sequence keeps in flight (an animated subject keeps a slot for each).
    pub frames_in_flight: usize,
}

/// The subject of `--mesh`: still, or animated on the GPU (a glTF animation, a sequence of
/// files, subdivision or displacement), with its glTF camera when `--camera` names one.
pub(super) fn mesh_subject(
    ctx: &Context,
    path: &Path,
    options: &MeshOptions,
) -> Result<Subject, CliError> {
    let failed = |e: canopy::scene::SceneError| CliError::Input(e.to_string());
    let (look, refinement) = (&options.look, options.refinement);
    let mut input = MeshInput::open(
        path,
        &OpenOptions {
            clip: options.animation.map(str::to_string),
            looping: options.looping,
            posed: options.camera.is_some(),
            assets: options.assets,
        },
    )
    .map_err(failed)?;
    if !options.textures {
        input.drop_textures();
    }
    let camera = match (options.camera, &input) {
        (None, _) => None,
        (Some(name), MeshInput::Rig(rig, _)) => {
            let Some(found) = rig.find_camera(name) else {
                return Err(CliError::Input(format!(
                    "{}: no camera named or numbered '{name}'; the file has {}",
                    path.display(),
                    rig.camera_list()
                )));
            };
            Some((rig.cameras[found].node, rig.cameras[found].yfov))
        }
        (Some(_), _) => {
            return Err(CliError::Usage(format!(
                "{}: --camera names a glTF camera, and this is not a glTF file",
                path.display()
            )));
        }
    };
    let mut subject = match input {
        MeshInput::Still(loaded) if refinement == Refinement::default() => {
            Subject::mesh(ctx, loaded, look)?
        }
        input => Subject::animated(ctx, input, look, refinement, options.frames_in_flight)?,
    };
    subject.gltf_camera = camera;
    Ok(subject)
}

/// The header attributes of frame `frame`'s OpenEXR file: canopy's version, the frame and its
/// time, and the camera.
fn frame_attributes(frame: u32, args: &RenderArgs, subject: &Subject) -> Vec<(String, String)> {
    let (width, height) = args.size;
    let seconds = frame as f32 / args.fps;
    let camera = subject.camera(seconds, width as f32 / height as f32);
    let point = |p: Vec3| format!("{} {} {}", p.x, p.y, p.z);
    [
        ("canopy:version", env!("CARGO_PKG_VERSION").to_string()),
        ("canopy:frame", frame.to_string()),
        ("canopy:time", seconds.to_string()),
        ("canopy:camera_position", point(camera.position)),
        ("canopy:camera_target", point(camera.target)),
        ("canopy:camera_up", point(camera.up)),
        (
            "canopy:camera_fov_y_degrees",
            camera.fov_y_degrees.to_string(),
        ),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_string(), value))
    .collect()
}

fn print_frame_profile(frame: u32, stages: &[(String, f64)], bounces: &[BounceStats]) {
    println!("frame {frame}:");
    let traced = canopy::render::traced_rays(bounces);
    let mut sums: Vec<(String, f64)> = Vec::new();
    for (name, ms) in stages {
        match sums.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 += ms,
            None => sums.push((name.clone(), *ms)),
        }
    }
    for (name, ms) in &sums {
        let rate = match traced.iter().find(|(stage, _)| stage == name) {
            Some(&(_, rays)) => {
                format!("  {rays:>10} rays  {:.3} G rays/s", rays as f64 / ms * 1e-6)
            }
            None => String::new(),
        };
        println!("  {name:<28} {ms:>9.3} ms{rate}");
    }
    for (b, stats) in bounces.iter().enumerate() {
        if stats.dropped_rays > 0 || stats.dropped_shadow_rays > 0 {
            println!(
                "  bounce {b}: {} reflected/refracted and {} shadow rays dropped (lists full)",
                stats.dropped_rays, stats.dropped_shadow_rays
            );
        }
    }
}
