//! `canopy build`: builds the structures asked for over mesh files on the GPU and reports each
//! (see [`super::structures`]): build time per stage, dispatches and barriers, device memory,
//! the tree's shape and SAH cost against a CPU reference tree, and the traversal work of
//! camera, shadow and reflected rays; the octree's nodes per level.

use super::CliError;
use super::structures::{Plan, run as run_structures};
use canopy::accel::BuildParams;
use canopy::accel::StructureKind;
use canopy::accel::bvh::lbvh::LbvhParams;
use canopy::bench::structures::BuildConfig;
use canopy::vk::Context;
use std::path::PathBuf;

/// Options of `canopy build`.
#[derive(clap::Args, Clone, Debug)]
pub struct BuildArgs {
    /// The structures to build, comma-separated: lbvh, kdtree, octree, bih, grid, pointkd (the octree
    /// and the point kd-tree are built over the vertices: point clouds too; the screen grid for the camera rays'
    /// view, with an LBVH for the other rays).
    #[arg(long, value_delimiter = ',', default_value = "lbvh", value_parser = super::parse_structure)]
    pub structure: Vec<StructureKind>,
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
    /// Timed builds (and traces) after one warm-up; the median is reported.
    #[arg(long, default_value_t = 1)]
    pub repeats: u32,
    /// Camera rays whose traversal is counted: a square image of this side (0: none).
    #[arg(long, default_value_t = 256)]
    pub rays: u32,
    /// Compare with the CPU reference tree (full-sweep SAH BVH, full-SAH kd-tree) up to this
    /// many triangles.
    #[arg(long, default_value_t = 1_000_000)]
    pub reference_up_to: u32,
    /// Also write the figures to this file as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// A mesh (.obj, .ply, .gltf, .glb) to build over; repeat for more.
    #[arg(long = "mesh", value_name = "FILE", action = clap::ArgAction::Append)]
    pub meshes: Vec<PathBuf>,
    /// Mesh files, as with --mesh.
    pub files: Vec<PathBuf>,
}

/// Runs `canopy build`.
pub fn run(ctx: &Context, args: &BuildArgs) -> Result<(), CliError> {
    let meshes: Vec<PathBuf> = args.files.iter().chain(&args.meshes).cloned().collect();
    if meshes.is_empty() {
        return Err(CliError::Usage(
            "no mesh: name a file (canopy build FILE, or --mesh FILE)".into(),
        ));
    }
    let plan = Plan {
        command: "build",
        default_scene: Vec::new(),
        soup: None,
        meshes: &meshes,
        structures: &args.structure,
        config: BuildConfig {
            repeats: args.repeats,
            trace_repeats: args.repeats,
            build: BuildParams {
                lbvh: LbvhParams {
                    morton_bits: super::morton_bits(args.morton_bits, &args.structure)?,
                    quality: super::bvh_quality(args.bvh_quality, &args.structure)?,
                    layout: super::bvh_layout(args.bvh_layout, &args.structure)?,
                    ..LbvhParams::default()
                },
                ..BuildParams::default()
            },
            ray_side: args.rays,
            native: false,
            sorted_secondary_rays: false,
            reference_up_to: args.reference_up_to,
        },
        json: args.json.as_deref(),
    };
    run_structures(ctx, &plan).map(drop)
}
