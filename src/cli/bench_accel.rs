//! `canopy bench lbvh` and `canopy bench render`: GPU-timestamp timings of the LBVH build
//! over the default scene from 10K to 4M triangles and over a random triangle soup (per stage,
//! with the cost per triangle and the tree's SAH cost against a CPU SAH BVH), and of ray
//! casting and whole frames at 1920x1080. Each figure is the median of `--repeats` runs
//! recorded in one command buffer after a warm-up run (see `bench::time_runs`).

use super::CliError;
use super::bench::time_runs;
use super::render::MortonArg;
use super::structure::{FrameStructure, StructureArg};
use canopy::accel::bvh::Bvh;
use canopy::accel::lbvh::{LbvhBuilder, LbvhParams, MortonBits, TriangleInput};
use canopy::accel::native::NativeBlasBuilder;
use canopy::cpu::rng::Rng;
use canopy::cpu::{lbvh as cpu_lbvh, morton, sah_bvh};
use canopy::prims::{Count, Slice};
use canopy::render::{RenderParams, Renderer, presets};
use canopy::scene::default_scene::DefaultScene;
use canopy::trace::{Query, Ray};
use canopy::vk::{Context, MemoryKind};

/// Options of `canopy bench lbvh`.
#[derive(clap::Args, Clone, Debug)]
pub struct LbvhArgs {
    /// Triangle counts of the default scene to build (the scaling table).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10000,40000,160000,640000,1000000,2500000,4000000"
    )]
    pub triangles: Vec<u64>,
    /// Triangles of the random soup built besides (0: none).
    #[arg(long, default_value_t = 1_000_000)]
    pub soup: u32,
    /// Timed runs per size (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 15)]
    pub repeats: u32,
    /// Morton code width.
    #[arg(long, value_enum, default_value_t = super::render::MortonArg::Bits30)]
    pub morton_bits: super::render::MortonArg,
    /// Invocations per workgroup of the bottom-up pass (a tuning knob; see LbvhParams).
    #[arg(long, default_value_t = LbvhParams::default().climb_workgroup_size)]
    pub climb_workgroup_size: u32,
    /// Compare the SAH cost with a CPU full-sweep SAH BVH at sizes up to this many triangles.
    #[arg(long, default_value_t = 1_000_000)]
    pub sah_up_to: u64,
}

/// Options of `canopy bench render`.
#[derive(clap::Args, Clone, Debug)]
pub struct RenderBenchArgs {
    /// Triangles of the default scene.
    #[arg(long, default_value_t = 1_000_000)]
    pub triangles: u64,
    /// Image size.
    #[arg(long, default_value = "1920x1080", value_parser = super::render::parse_size, value_name = "WxH")]
    pub size: (u32, u32),
    /// Timed runs (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 15)]
    pub repeats: u32,
    /// Bounces of reflected and refracted rays (0 to 16).
    #[arg(long, default_value_t = 2, value_parser = super::render::parse_bounces)]
    pub bounces: u32,
    /// The acceleration structure rebuilt every frame.
    #[arg(long, value_enum, default_value_t = StructureArg::Lbvh)]
    pub structure: StructureArg,
}

/// A triangle mesh on the device.
pub(super) struct DeviceMesh {
    pub(super) positions: canopy::vk::Buffer,
    pub(super) triangles: canopy::vk::Buffer,
    pub(super) triangle_count: u32,
}

impl DeviceMesh {
    pub(super) fn input(&self) -> TriangleInput<'_> {
        TriangleInput {
            positions: Slice::whole(&self.positions),
            triangles: Slice::whole(&self.triangles),
            count: self.triangle_count,
        }
    }
}

/// The default scene at time 0 with about `triangles` triangles, made on the GPU.
pub(super) fn default_scene_mesh(ctx: &Context, triangles: u64) -> Result<DeviceMesh, CliError> {
    let scene = DefaultScene::new(ctx, triangles)?;
    let vertex_bytes = scene.vertex_count() as u64 * 12;
    let positions = ctx.create_buffer("bench positions", vertex_bytes, MemoryKind::Device)?;
    let normals = ctx.create_buffer("bench normals", vertex_bytes, MemoryKind::Device)?;
    ctx.submit_and_wait(|rec| scene.record(rec, &positions, &normals, 0.0))?;
    let (topology, _) = scene.topology();
    Ok(DeviceMesh {
        positions,
        triangles: ctx.create_buffer_with("bench triangles", &topology)?,
        triangle_count: scene.triangle_count(),
    })
}

/// `n` random triangles of edge up to 1% of the unit cube they fill (a soup with no
/// coherence, as in the driver builders' published figures).
fn random_soup(ctx: &Context, n: u32) -> Result<DeviceMesh, CliError> {
    let mut rng = Rng::new(42);
    let mut positions: Vec<[f32; 3]> = Vec::with_capacity(3 * n as usize);
    for _ in 0..n {
        let c: [f32; 3] = std::array::from_fn(|_| rng.f32_in(0.0, 1.0));
        for _ in 0..3 {
            positions.push(std::array::from_fn(|a| c[a] + rng.f32_in(-0.01, 0.01)));
        }
    }
    let triangles: Vec<[u32; 3]> = (0..n).map(|t| [3 * t, 3 * t + 1, 3 * t + 2]).collect();
    Ok(DeviceMesh {
        positions: ctx.create_buffer_with("bench soup positions", &positions)?,
        triangles: ctx.create_buffer_with("bench soup triangles", &triangles)?,
        triangle_count: n,
    })
}

/// The short names of the LBVH's stages, in order.
const STAGES: [(&str, &str); 5] = [
    ("lbvh: bounds", "bounds"),
    ("lbvh: morton codes", "morton"),
    ("lbvh: sort", "sort"),
    ("lbvh: radix tree", "tree"),
    ("lbvh: bottom-up boxes", "boxes"),
];

fn bench_build(
    ctx: &Context,
    args: &LbvhArgs,
    label: &str,
    mesh: &DeviceMesh,
) -> Result<(), CliError> {
    let n = mesh.triangle_count;
    let bits: MortonBits = args.morton_bits.into();
    let params = LbvhParams {
        morton_bits: bits,
        climb_workgroup_size: args.climb_workgroup_size,
    };
    let builder = LbvhBuilder::new(ctx, params, n)?;
    let mut bvh = Bvh::new(ctx, n)?;
    let input = mesh.input();
    let t = time_runs(
        ctx,
        args.repeats,
        |_| Ok(()),
        |rec| builder.record(rec, &input, &mut bvh),
    )?;
    let stage = |name: &str| t.stages.iter().find(|s| s.0 == name).map_or(0.0, |s| s.1);
    let split: Vec<String> = STAGES
        .iter()
        .map(|(name, short)| format!("{short} {:.3}", stage(name)))
        .collect();
    println!(
        "{label:<14} {n:>9} tris {:>8.4} ms {:>7.2} ns/tri {:>7.0} Mtris/s  [{}]",
        t.median_ms,
        t.median_ms * 1e6 / n as f64,
        n as f64 / t.median_ms * 1e-3,
        split.join(", ")
    );
    let vertices = (mesh.positions.size() / 12) as u32;
    if let Some(native) = NativeBlasBuilder::new(ctx, n, vertices)? {
        let t_native = time_runs(
            ctx,
            args.repeats,
            |_| Ok(()),
            |rec| native.record(rec, &mesh.positions, vertices, &mesh.triangles, n),
        )?;
        println!(
            "{:<14} {n:>9} tris {:>8.4} ms: the driver's builder (VK_KHR_acceleration_structure, \
             PREFER_FAST_BUILD); canopy/driver time {:.3}",
            "  native",
            t_native.median_ms,
            t.median_ms / t_native.median_ms
        );
    }
    Ok(())
}

/// Checks the tree of `mesh` and prints its depth and SAH cost against the CPU's full-sweep
/// SAH BVH (run after the timings: the CPU build leaves the GPU idle long enough to clock
/// down).
fn quality(
    ctx: &Context,
    bits: MortonBits,
    label: &str,
    mesh: &DeviceMesh,
) -> Result<(), CliError> {
    let n = mesh.triangle_count;
    let params = LbvhParams {
        morton_bits: bits,
        ..LbvhParams::default()
    };
    let builder = LbvhBuilder::new(ctx, params, n)?;
    let mut bvh = Bvh::new(ctx, n)?;
    ctx.submit_and_wait(|rec| builder.record(rec, &mesh.input(), &mut bvh))?;
    let (nodes, leaves) = bvh.download(ctx)?;
    let positions: Vec<[f32; 3]> =
        ctx.download(&mesh.positions, 0, (mesh.positions.size() / 12) as usize)?;
    let triangles: Vec<[u32; 3]> = ctx.download(&mesh.triangles, 0, n as usize)?;
    let boxes = morton::triangle_bounds(&positions, &triangles);
    let stats = cpu_lbvh::check_invariants(&nodes, &leaves, &boxes)
        .map_err(|e| CliError::Failed(format!("{label}: invalid tree: {e}")))?;
    let sah = cpu_lbvh::tree_stats(
        &sah_bvh::build_sah_bvh(&positions, &triangles).nodes,
        n as usize,
    );
    println!(
        "{label:<14} {n:>9} tris: valid; depth {}, SAH cost {:.2}; CPU full-sweep SAH BVH {:.2}: LBVH/SAH {:.3}",
        stats.depth,
        stats.sah_cost,
        sah.sah_cost,
        stats.sah_cost / sah.sah_cost
    );
    Ok(())
}

/// Runs `canopy bench lbvh`.
pub fn run_lbvh(ctx: &Context, args: &LbvhArgs) -> Result<(), CliError> {
    println!(
        "LBVH build on {} ({:?} codes), median of {} runs, GPU timestamps; stage split in ms",
        ctx.caps().name,
        MortonBits::from(args.morton_bits),
        args.repeats
    );
    for &triangles in &args.triangles {
        let mesh = default_scene_mesh(ctx, triangles)?;
        bench_build(ctx, args, "default scene", &mesh)?;
    }
    let soup = (args.soup > 0)
        .then(|| random_soup(ctx, args.soup))
        .transpose()?;
    if let Some(soup) = &soup {
        bench_build(ctx, args, "random soup", soup)?;
    }
    println!("tree quality (SAH cost: traversal 1, intersection 1, one triangle per leaf)");
    let bits = args.morton_bits.into();
    for &triangles in args.triangles.iter().filter(|&&t| t <= args.sah_up_to) {
        quality(
            ctx,
            bits,
            "default scene",
            &default_scene_mesh(ctx, triangles)?,
        )?;
    }
    if let Some(soup) = soup.filter(|s| s.triangle_count as u64 <= args.sah_up_to) {
        quality(ctx, bits, "random soup", &soup)?;
    }
    Ok(())
}

/// Runs `canopy bench render`.
pub fn run_render(ctx: &Context, args: &RenderBenchArgs) -> Result<(), CliError> {
    let (width, height) = args.size;
    let scene = DefaultScene::new(ctx, args.triangles)?;
    let gpu = presets::default_scene_gpu(ctx, &scene)?;
    let n = gpu.triangle_count;
    let mut accel = FrameStructure::new(ctx, args.structure, MortonArg::Bits30, n, 1)?;
    // One untimed frame, rebuilt until the structure's lists fit.
    loop {
        ctx.submit_and_wait(|rec| {
            scene.record(rec, &gpu.positions, &gpu.normals, 1.0)?;
            accel.record_build(rec, &gpu, 0)
        })?;
        if !accel.grow_if_overflowed(ctx, 0)? {
            break;
        }
    }
    let lights = gpu.light_count;
    let params = RenderParams {
        bounces: args.bounces,
        ..RenderParams::default()
    };
    let renderer = Renderer::new(ctx, width, height, lights, params)?;
    let readback = renderer.readback(ctx)?;
    let camera = presets::orbit_camera(
        presets::DEFAULT_SCENE_CENTRE,
        presets::DEFAULT_SCENE_RADIUS,
        1.0,
        width as f32 / height as f32,
        presets::DEFAULT_SCENE_ORBIT,
    );
    let shading = presets::shading(presets::DEFAULT_SCENE_RADIUS);
    println!(
        "default scene, {n} triangles, {:?}, {width}x{height}, {} lights, {} bounces, on {}; median of {} runs",
        args.structure,
        lights,
        args.bounces,
        ctx.caps().name,
        args.repeats
    );
    let frame = time_runs(
        ctx,
        args.repeats,
        |_| Ok(()),
        |rec| {
            scene.record(rec, &gpu.positions, &gpu.normals, 1.0)?;
            accel.record_build(rec, &gpu, 0)?;
            renderer.record(
                rec,
                &gpu,
                accel.structure(&gpu),
                &camera,
                &shading,
                &readback,
            )
        },
    )?;
    println!(
        "whole frame (deform + rebuild + {} bounces of rays + shadows + shading): {:.3} ms = {:.1} frames/s (GPU)",
        args.bounces,
        frame.median_ms,
        1e3 / frame.median_ms
    );
    frame.print_stages();
    let bounces = readback.stats();
    for (stage, ms) in &frame.stages {
        if let Some(rays) = super::render::rays_of_stage(stage, &bounces) {
            println!(
                "{stage}: {rays} rays, {:.3} G rays/s",
                rays as f64 / ms * 1e-6
            );
        }
    }
    let dropped: u64 = bounces
        .iter()
        .map(|b| b.dropped_rays as u64 + b.dropped_shadow_rays as u64)
        .sum();
    if dropped > 0 {
        println!("warning: {dropped} rays dropped (ray lists full)");
    }

    // Closest-hit rate on the rays of a frame, alone: the camera's primary rays.
    let rays: Vec<Ray> = (0..height)
        .flat_map(|y| (0..width).map(move |x| (x, y)))
        .map(|(x, y)| camera.primary_ray(x, y, width, height))
        .collect();
    let ray_buffer = ctx.create_buffer_with("bench rays", &rays)?;
    let hits = ctx.create_buffer("bench hits", rays.len() as u64 * 16, MemoryKind::Device)?;
    let tracer = canopy::trace::Tracer::new(ctx)?;
    for query in [Query::Closest, Query::Any] {
        let t = time_runs(
            ctx,
            args.repeats,
            |_| Ok(()),
            |rec| {
                tracer.record(
                    rec,
                    accel.structure(&gpu),
                    query,
                    Slice::whole(&ray_buffer),
                    Slice::whole(&hits),
                    Count::Host(rays.len() as u32),
                )
            },
        )?;
        println!(
            "{query:?}-hit, primary rays alone: {:.4} ms = {:.3} G rays/s",
            t.median_ms,
            rays.len() as f64 / t.median_ms * 1e-6
        );
    }
    Ok(())
}
