//! `canopy bench render`: whole frames of the default scene or of mesh files through each
//! structure asked for, and their camera rays alone ([`canopy::bench::frames`]).

use super::CliError;
use super::render::{MeshOptions, mesh_subject};
use canopy::accel::bvh::lbvh::LbvhParams;
use canopy::accel::{BuildParams, StructureKind};
use canopy::bench::frames::{FrameConfig, measure};
use canopy::render::presets::{MeshLook, Refinement, Subject};
use canopy::scene::{AssetAccess, Environment};
use canopy::sequence::DEFAULT_FRAMES_IN_FLIGHT;
use canopy::vk::Context;
use std::path::PathBuf;

/// Options of `canopy bench render`.
#[derive(clap::Args, Clone, Debug)]
pub struct RenderBenchArgs {
    /// Triangles of the default scene.
    #[arg(long, default_value_t = 1_000_000)]
    pub triangles: u64,
    /// Render this mesh file over a ground plane instead of the default scene; repeat for more.
    /// An animated one (a glTF animation, a sequence of files) is measured at --time, its
    /// vertices made on the GPU in the frame.
    #[arg(long, value_name = "FILE", action = clap::ArgAction::Append)]
    pub mesh: Vec<PathBuf>,
    /// Levels of Loop subdivision of the --mesh files every frame (0 to 4).
    #[arg(long, default_value_t = 0, value_parser = super::render::parse_levels)]
    pub subdivide: u32,
    /// Displace the --mesh files' surfaces along their normals by up to AMOUNT of their radius.
    #[arg(long, value_name = "AMOUNT", num_args = 0..=1, default_missing_value = "0.02", value_parser = super::render::parse_amount)]
    pub displace: Option<f32>,
    /// The animation time measured, in seconds.
    #[arg(long, default_value_t = 0.5)]
    pub time: f32,
    /// Image size.
    #[arg(long, default_value = "1920x1080", value_parser = super::render::parse_size, value_name = "WxH")]
    pub size: (u32, u32),
    /// Timed runs (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 15)]
    pub repeats: u32,
    /// Bounces of reflected and refracted rays (0 to 16).
    #[arg(long, default_value_t = 2, value_parser = super::render::parse_bounces)]
    pub bounces: u32,
    /// Samples per pixel (1 to 4096).
    #[arg(long, default_value_t = 1, value_parser = super::render::parse_samples)]
    pub spp: u32,
    /// An equirectangular environment map (.hdr or .exr) as the sky.
    #[arg(long, value_name = "FILE")]
    pub environment: Option<PathBuf>,
    /// Light diffuse surfaces by the sky through sampled occlusion rays.
    #[arg(long)]
    pub sky_light: bool,
    /// Render the --mesh files without their textures (their materials' factors alone): the
    /// textures' cost is the difference from a run with them.
    #[arg(long)]
    pub untextured: bool,
    /// The structures rebuilt every frame, comma-separated: lbvh, kdtree, bih, grid.
    #[arg(long, value_delimiter = ',', default_value = "lbvh", value_parser = super::parse_traced_structure)]
    pub structure: Vec<StructureKind>,
    /// Also build the driver's own acceleration structure over each frame's triangles and
    /// trace the same camera rays through it with the driver's ray-tracing pipeline (skipped,
    /// with a note, where the device has none).
    #[arg(long)]
    pub native: bool,
    /// The LBVH's tree: fast (the radix tree), high (clustered by surface area) or best
    /// (restructured by treelets) [default: fast].
    #[arg(long, value_enum)]
    pub bvh_quality: Option<super::render::QualityArg>,
    /// How rays read the LBVH: binary (as built) or wide (collapsed into an 8-wide
    /// compressed tree) [default: binary].
    #[arg(long, value_enum)]
    pub bvh_layout: Option<super::render::LayoutArg>,
    /// Also write the figures to this file as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Runs `canopy bench render`.
pub fn run(ctx: &Context, args: &RenderBenchArgs) -> Result<(), CliError> {
    let (width, height) = args.size;
    let config = FrameConfig {
        width,
        height,
        repeats: args.repeats,
        bounces: args.bounces,
        samples: args.spp,
        sky_light: args.sky_light,
        native: args.native,
        time: args.time,
        build: BuildParams {
            lbvh: LbvhParams {
                quality: super::bvh_quality(args.bvh_quality, &args.structure)?,
                layout: super::bvh_layout(args.bvh_layout, &args.structure)?,
                ..LbvhParams::default()
            },
            ..BuildParams::default()
        },
    };
    if args.native && !ctx.caps().ray_tracing_pipeline {
        println!(
            "note: {} has no ray-tracing pipeline (VK_KHR_ray_tracing_pipeline): --native skipped",
            ctx.caps().name
        );
    }
    let mut subjects = Vec::new();
    if args.mesh.is_empty() {
        subjects.push((
            "default scene".to_string(),
            Subject::default_scene(ctx, args.triangles)?,
        ));
    }
    for path in &args.mesh {
        let options = MeshOptions {
            look: MeshLook::default(),
            animation: None,
            looping: true,
            refinement: Refinement {
                levels: args.subdivide,
                displace: args.displace,
            },
            camera: None,
            assets: AssetAccess::ModelFolder,
            textures: !args.untextured,
            frames_in_flight: DEFAULT_FRAMES_IN_FLIGHT,
        };
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        );
        subjects.push((label, mesh_subject(ctx, path, &options)?));
    }
    let environment = args
        .environment
        .as_deref()
        .map(Environment::load)
        .transpose()
        .map_err(|e| CliError::Input(e.to_string()))?;
    for (_, subject) in &mut subjects {
        subject.scene.set_environment(ctx, environment.as_ref())?;
    }
    println!("canopy bench render on {}", ctx.caps().name);
    let mut reports = Vec::new();
    for (label, subject) in &subjects {
        for &structure in &args.structure {
            let report = measure(ctx, subject, label, structure, &config)?;
            print!("{report}");
            reports.push(report);
        }
    }
    super::write_json(args.json.as_deref(), ctx, "bench render", &reports)
}
