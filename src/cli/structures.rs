//! `canopy bench lbvh`, `canopy bench kdtree` and `canopy build`: builds of the structures
//! asked for (`--structure`) over the default scene, a random soup and mesh files (`--mesh`),
//! measured by [`canopy::bench::structures`] and printed one block per structure and mesh,
//! then a table of the work counters of every run.

use super::CliError;
use canopy::accel::bih::BihParams;
use canopy::accel::bvh::lbvh::LbvhParams;
use canopy::accel::grid::GridParams;
use canopy::accel::{BuildParams, StructureKind};
use canopy::bench::structures::BuildConfig;
use canopy::bench::{BenchMesh, MeshBench, StructureReport, WorkTable};
use canopy::vk::Context;
use std::path::{Path, PathBuf};

/// Options every structure benchmark takes.
#[derive(clap::Args, Clone, Debug)]
pub struct MeshBenchArgs {
    /// A mesh file (.obj, .ply, .gltf, .glb) to build over; repeat for more. With --mesh or
    /// --soup, the default scene is built only at the sizes --triangles names.
    #[arg(long, value_name = "FILE", action = clap::ArgAction::Append)]
    pub mesh: Vec<PathBuf>,
    /// Triangles of a random soup to build over (edges up to 1% of the unit cube).
    #[arg(long)]
    pub soup: Option<u32>,
    /// Timed runs per build and per trace (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 15)]
    pub repeats: u32,
    /// Camera rays whose traversal is counted and timed: a square image of this side (0: none).
    #[arg(long, default_value_t = 1024)]
    pub rays: u32,
    /// Morton code width of the LBVH and the octree: 30 or 63 [default: 30].
    #[arg(long, value_enum)]
    pub morton_bits: Option<super::render::MortonArg>,
    /// The LBVH's tree: fast (the radix tree), high (clustered by surface area) or best
    /// (restructured by treelets) [default: fast].
    #[arg(long, value_enum)]
    pub bvh_quality: Option<super::render::QualityArg>,
    /// How rays read the LBVH: binary (as built) or wide (collapsed into an 8-wide
    /// compressed tree) [default: binary].
    #[arg(long, value_enum)]
    pub bvh_layout: Option<super::render::LayoutArg>,
    /// Do not time the driver's own builder beside the LBVH.
    #[arg(long)]
    pub no_native: bool,
    /// Order the shadow and reflected rays by direction octant and origin Morton code (on the
    /// host) instead of by pixel before tracing them: what reordering them would buy.
    #[arg(long)]
    pub sorted_secondary_rays: bool,
    /// The BIH's leaf size: nodes of at most this many triangles are leaves.
    #[arg(long, default_value_t = BihParams::default().max_leaf)]
    pub bih_leaf: u32,
    /// Build BIHs without clip nodes (every internal node a split, as seed 004).
    #[arg(long)]
    pub bih_no_clip: bool,
    /// The screen grid's depth slabs per tile.
    #[arg(long, default_value_t = GridParams::default().slabs)]
    pub grid_slabs: u32,
    /// The screen grid's tile side in pixels.
    #[arg(long, default_value_t = GridParams::default().tile_size)]
    pub grid_tile: u32,
    /// Also write the figures to this file as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Options of `canopy bench lbvh`.
#[derive(clap::Args, Clone, Debug)]
pub struct LbvhArgs {
    /// Triangle counts of the default scene [default without --mesh:
    /// 10000,40000,160000,640000,1000000,2500000,4000000 and a 1,000,000-triangle soup].
    #[arg(long, value_delimiter = ',')]
    pub triangles: Vec<u64>,
    /// The structures to build, comma-separated: lbvh, kdtree, octree, bih, grid, pointkd
    /// (the screen grid for the camera rays' view, its LBVH for the other rays).
    #[arg(long, value_delimiter = ',', default_value = "lbvh", value_parser = super::parse_structure)]
    pub structure: Vec<StructureKind>,
    /// Invocations per workgroup of the fast BVH's climb (a tuning knob; see LbvhParams).
    #[arg(long, default_value_t = LbvhParams::default().climb_workgroup_size)]
    pub climb_workgroup_size: u32,
    /// Compare with the CPU reference tree (full-sweep SAH BVH, full-SAH kd-tree) up to this
    /// many triangles.
    #[arg(long, alias = "sah-up-to", default_value_t = 1_000_000)]
    pub reference_up_to: u32,
    #[command(flatten)]
    pub common: MeshBenchArgs,
}

/// Options of `canopy bench kdtree`.
#[derive(clap::Args, Clone, Debug)]
pub struct KdTreeBenchArgs {
    /// Triangle counts of the default scene's torus (the scene adds 4,418) [default without
    /// --mesh: 170000,1000000].
    #[arg(long, value_delimiter = ',')]
    pub triangles: Vec<u64>,
    /// The structures to build, comma-separated: lbvh, kdtree, octree, bih, grid, pointkd
    /// (the screen grid for the camera rays' view, its LBVH for the other rays).
    #[arg(long, value_delimiter = ',', default_value = "kdtree", value_parser = super::parse_structure)]
    pub structure: Vec<StructureKind>,
    /// Compare with the CPU reference tree (full-SAH kd-tree, full-sweep SAH BVH) up to this
    /// many triangles (the CPU builds are single threaded).
    #[arg(long, alias = "quality-up-to", default_value_t = 1_100_000)]
    pub reference_up_to: u32,
    #[command(flatten)]
    pub common: MeshBenchArgs,
}

/// What to build over, and how to measure it.
pub struct Plan<'a> {
    /// The command, as the JSON names it.
    pub command: &'a str,
    /// Default scene sizes.
    pub default_scene: Vec<u64>,
    /// A random soup's triangles.
    pub soup: Option<u32>,
    /// Mesh files.
    pub meshes: &'a [PathBuf],
    /// The structures.
    pub structures: &'a [StructureKind],
    /// How.
    pub config: BuildConfig,
    /// Where to write the JSON.
    pub json: Option<&'a Path>,
}

impl MeshBenchArgs {
    /// The plan of a benchmark whose default scene sizes are `default_sizes` and default soup
    /// `default_soup`, both only without --mesh.
    fn plan<'a>(
        &'a self,
        command: &'a str,
        triangles: &[u64],
        (default_sizes, default_soup): (&[u64], Option<u32>),
        structures: &'a [StructureKind],
        config: BuildConfig,
    ) -> Result<Plan<'a>, CliError> {
        let defaults = self.mesh.is_empty() && triangles.is_empty() && self.soup.is_none();
        let morton_bits = super::morton_bits(self.morton_bits, structures)?;
        let quality = super::bvh_quality(self.bvh_quality, structures)?;
        let layout = super::bvh_layout(self.bvh_layout, structures)?;
        Ok(Plan {
            command,
            default_scene: if defaults {
                default_sizes.to_vec()
            } else {
                triangles.to_vec()
            },
            soup: self.soup.or(default_soup.filter(|_| defaults)),
            meshes: &self.mesh,
            structures,
            config: BuildConfig {
                repeats: self.repeats,
                trace_repeats: self.repeats,
                ray_side: self.rays,
                native: !self.no_native,
                sorted_secondary_rays: self.sorted_secondary_rays,
                build: BuildParams {
                    lbvh: LbvhParams {
                        morton_bits,
                        quality,
                        layout,
                        ..config.build.lbvh
                    },
                    bih: BihParams {
                        max_leaf: self.bih_leaf,
                        clip_nodes: !self.bih_no_clip,
                        ..config.build.bih
                    },
                    grid: GridParams {
                        slabs: self.grid_slabs,
                        tile_size: self.grid_tile,
                        ..config.build.grid
                    },
                    ..config.build
                },
                ..config
            },
            json: self.json.as_deref(),
        })
    }
}

/// Runs `canopy bench lbvh`.
pub fn run_lbvh(ctx: &Context, args: &LbvhArgs) -> Result<(), CliError> {
    let config = BuildConfig {
        build: BuildParams {
            lbvh: LbvhParams {
                climb_workgroup_size: args.climb_workgroup_size,
                ..LbvhParams::default()
            },
            ..BuildParams::default()
        },
        reference_up_to: args.reference_up_to,
        ..BuildConfig::default()
    };
    let defaults = [
        10_000, 40_000, 160_000, 640_000, 1_000_000, 2_500_000, 4_000_000,
    ];
    let plan = args.common.plan(
        "bench lbvh",
        &args.triangles,
        (&defaults, Some(1_000_000)),
        &args.structure,
        config,
    )?;
    run(ctx, &plan).map(drop)
}

/// Runs `canopy bench kdtree`.
pub fn run_kdtree(ctx: &Context, args: &KdTreeBenchArgs) -> Result<(), CliError> {
    let config = BuildConfig {
        reference_up_to: args.reference_up_to,
        ..BuildConfig::default()
    };
    let plan = args.common.plan(
        "bench kdtree",
        &args.triangles,
        (&[170_000, 1_000_000], None),
        &args.structure,
        config,
    )?;
    run(ctx, &plan).map(drop)
}

/// Builds every structure of `plan` over every mesh of it, printing each as it is measured
/// and a table of the work counters at the end; writes the JSON.
pub fn run(ctx: &Context, plan: &Plan) -> Result<Vec<StructureReport>, CliError> {
    // A missing file fails now, not after the builds before it.
    for path in plan.meshes {
        std::fs::metadata(path).map_err(|e| CliError::Input(format!("{}: {e}", path.display())))?;
    }
    let c = &plan.config;
    println!(
        "{} on {}: median of {} runs, GPU timestamps; {}x{} camera rays",
        plan.command,
        ctx.caps().name,
        c.repeats.max(1),
        c.ray_side,
        c.ray_side
    );
    let mut reports = Vec::new();
    let mut measure = |mesh: BenchMesh| -> Result<(), CliError> {
        let mut bench = MeshBench::new(ctx, &mesh, c.clone())?;
        for &kind in plan.structures {
            let report = bench.measure(kind)?;
            print!("{report}");
            reports.push(report);
        }
        Ok(())
    };
    for &triangles in &plan.default_scene {
        measure(BenchMesh::default_scene(ctx, triangles)?)?;
    }
    if let Some(n) = plan.soup.filter(|&n| n > 0) {
        measure(BenchMesh::soup(ctx, n)?)?;
    }
    for path in plan.meshes {
        measure(BenchMesh::load(ctx, path)?)?;
    }
    if !reports.is_empty() {
        print!("\n{}", WorkTable(&reports));
    }
    super::write_json(plan.json, ctx, plan.command, &reports)?;
    Ok(reports)
}
