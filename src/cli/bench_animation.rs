//! `canopy bench animation`: skinning, Loop subdivision and a vertex-animation sequence
//! streamed from disk ([`canopy::bench::animation`]).

use super::CliError;
use canopy::bench::animation::{AnimationConfig, measure};
use canopy::scene::animated::subdivision::MAX_LEVELS;
use canopy::vk::Context;
use std::path::PathBuf;

/// Options of `canopy bench animation`.
#[derive(clap::Args, Clone, Debug)]
pub struct AnimationBenchArgs {
    /// The glTF rig skinned (its vertices repeated up to each --skin-vertices count).
    #[arg(
        long,
        default_value = "tests/data/gltf/CesiumMan.glb",
        value_name = "FILE"
    )]
    pub rig: PathBuf,
    /// Vertex counts skinned.
    #[arg(long, value_delimiter = ',', default_value = "100000,1000000")]
    pub skin_vertices: Vec<u32>,
    /// Triangles of the closed control meshes (tori) subdivided.
    #[arg(long, value_delimiter = ',', default_value = "50000,200000")]
    pub control_triangles: Vec<u32>,
    /// Levels of Loop subdivision (1 to 4).
    #[arg(long, default_value_t = 2)]
    pub levels: u32,
    /// A vertex-animation sequence (a folder of numbered OBJ/PLY files or a printf pattern)
    /// streamed from disk and rendered against its first frame held still.
    #[arg(long, value_name = "FOLDER|PATTERN")]
    pub sequence: Option<PathBuf>,
    /// Frames rendered each way for --sequence (the sequence loops).
    #[arg(long, default_value_t = 60)]
    pub frames: u32,
    /// Image size of those frames.
    #[arg(long, default_value = "960x540", value_parser = super::render::parse_size, value_name = "WxH")]
    pub size: (u32, u32),
    /// Timed runs (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 9)]
    pub repeats: u32,
    /// Also write the figures to this file as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Runs `canopy bench animation`.
pub fn run(ctx: &Context, args: &AnimationBenchArgs) -> Result<(), CliError> {
    if !(1..=MAX_LEVELS).contains(&args.levels) {
        return Err(CliError::Failed(format!(
            "--levels {}: 1 to {MAX_LEVELS}",
            args.levels
        )));
    }
    if args.skin_vertices.contains(&0) || args.control_triangles.contains(&0) {
        return Err(CliError::Failed("a count of 0".into()));
    }
    println!(
        "canopy bench animation on {}: median of {} runs, GPU timestamps",
        ctx.caps().name,
        args.repeats.max(1)
    );
    let config = AnimationConfig {
        rig: args.rig.clone(),
        skin_vertices: args.skin_vertices.clone(),
        control_triangles: args.control_triangles.clone(),
        levels: args.levels,
        sequence: args.sequence.clone(),
        frames: args.frames,
        size: args.size,
        repeats: args.repeats,
    };
    let report = measure(ctx, &config)?;
    print!("{report}");
    super::write_json(args.json.as_deref(), ctx, "bench animation", &report)
}
