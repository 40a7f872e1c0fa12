//! `canopy bench render`: whole frames of the default scene or of mesh files through each
//! structure asked for, and their camera rays alone ([`canopy::bench::frames`]).

use super::{CliError, mib};
use canopy::accel::StructureKind;
use canopy::bench::frames::{FrameConfig, FrameReport, measure};
use canopy::render::presets::Subject;
use canopy::scene::MaterialMesh;
use canopy::vk::Context;
use std::path::PathBuf;

/// Options of `canopy bench render`.
#[derive(clap::Args, Clone, Debug)]
pub struct RenderBenchArgs {
    /// Triangles of the default scene.
    #[arg(long, default_value_t = 1_000_000)]
    pub triangles: u64,
    /// Render this mesh file over a ground plane instead of the default scene; repeat for more.
    #[arg(long, value_name = "FILE", action = clap::ArgAction::Append)]
    pub mesh: Vec<PathBuf>,
    /// Image size.
    #[arg(long, default_value = "1920x1080", value_parser = super::render::parse_size, value_name = "WxH")]
    pub size: (u32, u32),
    /// Timed runs (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 15)]
    pub repeats: u32,
    /// Bounces of reflected and refracted rays (0 to 16).
    #[arg(long, default_value_t = 2, value_parser = super::render::parse_bounces)]
    pub bounces: u32,
    /// The structures rebuilt every frame, comma-separated: lbvh, kdtree.
    #[arg(long, value_delimiter = ',', default_value = "lbvh", value_parser = super::parse_traced_structure)]
    pub structure: Vec<StructureKind>,
    /// Also write the figures to this file as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Prints one subject through one structure.
fn print_report(r: &FrameReport) {
    println!(
        "{}, {} triangles, {}, {}x{}, {} lights, {} bounces: median of {} runs",
        r.scene, r.triangles, r.structure, r.width, r.height, r.lights, r.bounces, r.frame.runs
    );
    println!(
        "whole frame (deform, rebuild, camera rays, {} bounces, shadows, shading): {:.3} ms = {:.1} frames/s (GPU)",
        r.bounces,
        r.frame.median_ms,
        1e3 / r.frame.median_ms
    );
    for stage in &r.frame.stages {
        println!("    {:<30} {:>10.4} ms", stage.name, stage.ms);
    }
    for t in &r.traces {
        println!(
            "{}: {} rays, {:.3} G rays/s",
            t.stage,
            t.rays,
            t.rays as f64 / t.ms * 1e-6
        );
    }
    if r.dropped_rays > 0 {
        println!("warning: {} rays dropped (ray lists full)", r.dropped_rays);
    }
    println!(
        "work of a frame: {} dispatches ({} indirect), {} with work, {} barriers; peak {:.1} MiB for the structure and the renderer",
        r.work.dispatches,
        r.work.indirect_dispatches,
        r.work
            .dispatches_with_work
            .map_or("?".into(), |n| n.to_string()),
        r.work.barriers,
        mib(r.peak_bytes)
    );
    for t in &r.camera_rays {
        let ms = t.time.as_ref().map_or(0.0, |time| time.median_ms);
        println!(
            "{}-hit, camera rays alone: {:.4} ms = {:.3} G rays/s; nodes/ray {:.2} (max {}), tests/ray {:.2} (max {})",
            t.query,
            ms,
            t.work.rays as f64 / ms * 1e-6,
            t.work.mean_nodes,
            t.work.max_nodes,
            t.work.mean_primitives,
            t.work.max_primitives
        );
    }
}

/// Runs `canopy bench render`.
pub fn run(ctx: &Context, args: &RenderBenchArgs) -> Result<(), CliError> {
    let (width, height) = args.size;
    let config = FrameConfig {
        width,
        height,
        repeats: args.repeats,
        bounces: args.bounces,
        ..FrameConfig::default()
    };
    let mut subjects = Vec::new();
    if args.mesh.is_empty() {
        subjects.push((
            "default scene".to_string(),
            Subject::default_scene(ctx, args.triangles)?,
        ));
    }
    for path in &args.mesh {
        let loaded = MaterialMesh::load(path).map_err(|e| CliError::Failed(e.to_string()))?;
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        );
        subjects.push((label, Subject::mesh(ctx, loaded)?));
    }
    println!("canopy bench render on {}", ctx.caps().name);
    let mut reports = Vec::new();
    for (label, subject) in &subjects {
        for &structure in &args.structure {
            let report = measure(ctx, subject, label, structure, &config)?;
            print_report(&report);
            reports.push(report);
        }
    }
    super::write_json(args.json.as_deref(), ctx, "bench render", &reports)
}
