//! `canopy bench kdtree`: the GPU SAH kd-tree build (GPU timestamps, per stage, median of
//! `--repeats` runs in one command buffer after a warm-up) over the default scene at the sizes
//! asked for and over mesh files, with the dispatches per build and device memory; then the
//! tree's quality against the CPU full-SAH builder's tree of the same triangles: SAH cost, and
//! GPU trace time of the same camera rays through both trees.

use super::CliError;
use super::bench::time_runs;
use super::bench_accel::{DeviceMesh, default_scene_mesh};
use canopy::accel::kdtree::KdTreeGpu;
use canopy::accel::kdtree_build::{KdBuildParams, KdTreeBuilder};
use canopy::cpu::kdtree::{KdParams, build_sah_kdtree, check_kdtree, kdtree_stats};
use canopy::prims::{Count, Slice};
use canopy::render::Camera;
use canopy::scene::Mesh;
use canopy::trace::{Query, Ray, Structure, Tracer};
use canopy::vk::{Context, MemoryKind};
use std::path::PathBuf;
use std::time::Instant;

/// Options of `canopy bench kdtree`.
#[derive(clap::Args, Clone, Debug)]
pub struct KdTreeBenchArgs {
    /// Default scene sizes (torus triangles; the scene adds 4,418).
    #[arg(long, value_delimiter = ',', default_values_t = [170_000u64, 1_000_000])]
    pub triangles: Vec<u64>,
    /// Mesh files to build over too.
    #[arg(long, value_delimiter = ',')]
    pub mesh: Vec<PathBuf>,
    /// Timed runs per build.
    #[arg(long, default_value_t = 15)]
    pub repeats: u32,
    /// Compare with the CPU full-SAH tree up to this many triangles (the CPU build is single
    /// threaded).
    #[arg(long, default_value_t = 1_100_000)]
    pub quality_up_to: u32,
    /// Rays for the trace comparison: a square image of this side.
    #[arg(long, default_value_t = 1024)]
    pub rays: u32,
}

const STAGES: [&str; 4] = [
    "kd-tree: init",
    "kd-tree: large nodes",
    "kd-tree: small nodes",
    "kd-tree: output",
];

fn mesh_on_device(ctx: &Context, mesh: &Mesh) -> Result<DeviceMesh, CliError> {
    Ok(DeviceMesh {
        positions: ctx.create_buffer_with("bench positions", &mesh.positions)?,
        triangles: ctx.create_buffer_with("bench triangles", &mesh.triangles)?,
        triangle_count: mesh.triangle_count() as u32,
    })
}

fn bench_one(
    ctx: &Context,
    args: &KdTreeBenchArgs,
    label: &str,
    mesh: &DeviceMesh,
) -> Result<(), CliError> {
    let n = mesh.triangle_count;
    let mut builder = KdTreeBuilder::new(ctx, KdBuildParams::default(), n)?;
    // Grown until the lists fit; the timed runs rebuild the same tree.
    let (tree, _) = builder.build(ctx, &mesh.input())?;
    let readback = builder.status_readback(ctx)?;
    let input = mesh.input();
    let t = time_runs(
        ctx,
        args.repeats,
        |_| Ok(()),
        |rec| builder.record(rec, &input, &tree, &readback),
    )?;
    // The last run's counts: runs may differ in ties between equally good splits.
    let status = readback.status();
    let stage = |name: &str| t.stages.iter().find(|s| s.0 == name).map_or(0.0, |s| s.1);
    let split: Vec<String> = STAGES
        .iter()
        .map(|name| format!("{} {:.3}", &name[9..], stage(name)))
        .collect();
    let tree_bytes = tree.nodes.size() + tree.leaf_triangles.size() + tree.bounds.size();
    println!(
        "{label:<22} {n:>9} tris {:>8.3} ms  [{}]  {} dispatches; {} nodes, {} leaf refs; \
         memory {:.0} MiB scratch + {:.0} MiB tree",
        t.median_ms,
        split.join(", "),
        builder.dispatches(n),
        status.nodes,
        status.leaf_triangles,
        builder.scratch_bytes() as f64 / (1 << 20) as f64,
        tree_bytes as f64 / (1 << 20) as f64,
    );
    if n > args.quality_up_to {
        return Ok(());
    }
    // Quality: the GPU tree against the CPU full-SAH tree of the same triangles.
    let positions: Vec<[f32; 3]> =
        ctx.download(&mesh.positions, 0, (mesh.positions.size() / 12) as usize)?;
    let triangles: Vec<[u32; 3]> = ctx.download(&mesh.triangles, 0, n as usize)?;
    let gpu_tree = tree.download(ctx, status.nodes, status.leaf_triangles)?;
    let gpu_stats = check_kdtree(&positions, &triangles, &gpu_tree)
        .map_err(|e| CliError::Failed(format!("{label}: invalid GPU kd-tree: {e}")))?;
    let started = Instant::now();
    let cpu_tree = build_sah_kdtree(&positions, &triangles, &KdParams::default());
    let cpu_seconds = started.elapsed().as_secs_f64();
    let cpu_stats = kdtree_stats(&cpu_tree, &KdParams::default());
    let cpu_gpu = KdTreeGpu::upload(ctx, &cpu_tree)?;
    let trace_ms = |tree: &KdTreeGpu| -> Result<(f64, f64), CliError> {
        trace_time(ctx, args, mesh, tree, &positions, &triangles)
    };
    let (gpu_trace, gpu_any) = trace_ms(&tree)?;
    let (cpu_trace, cpu_any) = trace_ms(&cpu_gpu)?;
    println!(
        "{:<22} SAH cost {:.2} (CPU full SAH {:.2}, built in {cpu_seconds:.1} s): ratio {:.3}; \
         {} rays closest hit {gpu_trace:.3} ms vs {cpu_trace:.3} ms ({:.3}), any hit {gpu_any:.3} \
         vs {cpu_any:.3} ms; leaves {} vs {}, refs {} vs {}, depth {} vs {}",
        "",
        gpu_stats.sah_cost,
        cpu_stats.sah_cost,
        gpu_stats.sah_cost / cpu_stats.sah_cost,
        args.rays * args.rays,
        gpu_trace / cpu_trace,
        gpu_stats.leaves,
        cpu_stats.leaves,
        gpu_stats.triangle_references,
        cpu_stats.triangle_references,
        gpu_stats.depth,
        cpu_stats.depth,
    );
    Ok(())
}

/// GPU time of closest-hit and any-hit queries of a square image of camera rays framing the
/// mesh, through `tree`.
fn trace_time(
    ctx: &Context,
    args: &KdTreeBenchArgs,
    mesh: &DeviceMesh,
    tree: &KdTreeGpu,
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
) -> Result<(f64, f64), CliError> {
    let bounds = canopy::cpu::morton::triangle_bounds(positions, triangles)
        .iter()
        .fold(canopy::cpu::morton::EMPTY_BOUNDS, |a, b| {
            canopy::cpu::morton::union(&a, b)
        });
    let centre = glam::Vec3::from(bounds.0).lerp(glam::Vec3::from(bounds.1), 0.5);
    let radius = (glam::Vec3::from(bounds.1) - glam::Vec3::from(bounds.0)).length() * 0.5;
    let camera = Camera::orbit(centre, radius * 2.2, 30.0, 20.0, 45.0);
    let side = args.rays;
    let rays: Vec<Ray> = (0..side * side)
        .map(|i| camera.primary_ray(i % side, i / side, side, side))
        .collect();
    let ray_buffer = ctx.create_buffer_with("bench rays", &rays)?;
    let hits = ctx.create_buffer("bench hits", rays.len() as u64 * 16, MemoryKind::Device)?;
    let tracer = Tracer::new(ctx)?;
    let structure = Structure::KdTree {
        tree,
        positions: Slice::whole(&mesh.positions),
        triangles: Slice::whole(&mesh.triangles),
    };
    let mut times = [0.0; 2];
    for (time, query) in times.iter_mut().zip([Query::Closest, Query::Any]) {
        *time = time_runs(
            ctx,
            args.repeats,
            |_| Ok(()),
            |rec| {
                tracer.record(
                    rec,
                    structure,
                    query,
                    Slice::whole(&ray_buffer),
                    Slice::whole(&hits),
                    Count::Host(rays.len() as u32),
                )
            },
        )?
        .median_ms;
    }
    Ok((times[0], times[1]))
}

/// Runs `canopy bench kdtree`.
pub fn run(ctx: &Context, args: &KdTreeBenchArgs) -> Result<(), CliError> {
    println!(
        "GPU SAH kd-tree build on {}, median of {} runs, GPU timestamps; stage split in ms",
        ctx.caps().name,
        args.repeats
    );
    for &triangles in &args.triangles {
        let mesh = default_scene_mesh(ctx, triangles)?;
        bench_one(ctx, args, "default scene", &mesh)?;
    }
    for path in &args.mesh {
        let mesh = Mesh::load(path).map_err(|e| CliError::Failed(e.to_string()))?;
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into(),
        );
        bench_one(ctx, args, &label, &mesh_on_device(ctx, &mesh)?)?;
    }
    Ok(())
}
