//! `canopy build`: builds one structure over a file on the GPU and reports it. For an LBVH:
//! node count, depth and SAH cost against the CPU LBVH and a CPU full-sweep SAH BVH, with the
//! GPU time per stage. For an octree: node counts per level, distinct points and GPU time.

use super::CliError;
use canopy::accel::bvh::Bvh;
use canopy::accel::lbvh::{LbvhBuilder, LbvhParams, MortonBits, TriangleInput};
use canopy::accel::octree::OctreeBuilder;
use canopy::cpu::{lbvh as cpu_lbvh, morton, sah_bvh};
use canopy::prims::Slice;
use canopy::scene::Mesh;
use canopy::vk::{Context, Profiler};
use std::path::PathBuf;

/// Options of `canopy build`.
#[derive(clap::Args, Clone, Debug)]
pub struct BuildArgs {
    /// The structure to build.
    #[arg(long, value_enum, default_value_t = Structure::Lbvh)]
    pub structure: Structure,
    /// Morton code width.
    #[arg(long, value_enum, default_value_t = super::render::MortonArg::Bits30)]
    pub morton_bits: super::render::MortonArg,
    /// A mesh (.obj, .ply, .gltf, .glb); for octrees any file with vertices (point clouds too).
    pub file: PathBuf,
}

/// A structure `canopy build` makes.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Structure {
    /// Linear BVH over the triangles.
    Lbvh,
    /// Octree (and point k-d tree) over the vertices.
    Octree,
}

fn print_stages(profiler: &Profiler) -> Result<(), CliError> {
    for (name, ms) in profiler.results()? {
        println!("  {name:<28} {ms:>9.3} ms");
    }
    Ok(())
}

/// Runs `canopy build`.
pub fn run(ctx: &Context, args: &BuildArgs) -> Result<(), CliError> {
    let bits: MortonBits = args.morton_bits.into();
    let failed = |e: canopy::scene::SceneError| CliError::Failed(e.to_string());
    let mut profiler = Profiler::new(ctx, 64)?;
    match args.structure {
        Structure::Lbvh => {
            let mesh = Mesh::load(&args.file).map_err(failed)?;
            let n = mesh.triangle_count() as u32;
            let builder = LbvhBuilder::new(
                ctx,
                LbvhParams {
                    morton_bits: bits,
                    ..LbvhParams::default()
                },
                n,
            )?;
            let mut bvh = Bvh::new(ctx, n)?;
            let positions = ctx.create_buffer_with("positions", &mesh.positions)?;
            let triangles = ctx.create_buffer_with("triangles", &mesh.triangles)?;
            let input = TriangleInput {
                positions: Slice::whole(&positions),
                triangles: Slice::whole(&triangles),
                count: n,
            };
            ctx.submit_profiled(&mut profiler, |rec| builder.record(rec, &input, &mut bvh))?;
            let (nodes, leaves) = bvh.download(ctx)?;
            let boxes = morton::triangle_bounds(&mesh.positions, &mesh.triangles);
            let stats = cpu_lbvh::check_invariants(&nodes, &leaves, &boxes)
                .map_err(|e| CliError::Failed(format!("the GPU tree is invalid: {e}")))?;
            let cpu = cpu_lbvh::build_lbvh(&mesh.positions, &mesh.triangles, bits);
            let sah = sah_bvh::build_sah_bvh(&mesh.positions, &mesh.triangles);
            let cpu_stats = cpu_lbvh::tree_stats(&cpu.nodes, n as usize);
            let sah_stats = cpu_lbvh::tree_stats(&sah.nodes, n as usize);
            println!(
                "LBVH of {} ({n} triangles, {:?}):",
                args.file.display(),
                bits
            );
            println!(
                "  {} internal nodes, {} leaves, depth {}",
                stats.internal_nodes, stats.leaves, stats.depth
            );
            println!(
                "  SAH cost {:.2}; CPU LBVH {:.2}; CPU full-sweep SAH BVH {:.2} (LBVH/SAH = {:.3})",
                stats.sah_cost,
                cpu_stats.sah_cost,
                sah_stats.sah_cost,
                stats.sah_cost / sah_stats.sah_cost
            );
            println!("  device memory: {} bytes of tree", bvh.bytes());
            print_stages(&profiler)
        }
        Structure::Octree => {
            let points = Mesh::load_points(&args.file).map_err(failed)?;
            let n = points.len() as u32;
            let builder = OctreeBuilder::new(ctx, bits, n)?;
            let octree = builder.allocate(ctx)?;
            let buffer = ctx.create_buffer_with("points", &points)?;
            ctx.submit_profiled(&mut profiler, |rec| {
                builder.record(rec, Slice::whole(&buffer), n, &octree)
            })?;
            let host = octree.download(ctx)?;
            println!(
                "octree of {} ({n} points, {} distinct cells of {} levels): {} nodes",
                args.file.display(),
                host.distinct_points,
                host.levels,
                host.nodes.len()
            );
            for (level, count) in host.nodes_per_level().iter().enumerate() {
                println!("  level {level:>2}: {count:>9} nodes");
            }
            println!(
                "  point k-d tree: {} splits (x {}, y {}, z {})",
                host.splits.len(),
                host.splits.iter().filter(|s| s.axis == 0).count(),
                host.splits.iter().filter(|s| s.axis == 1).count(),
                host.splits.iter().filter(|s| s.axis == 2).count()
            );
            print_stages(&profiler)
        }
    }
}
