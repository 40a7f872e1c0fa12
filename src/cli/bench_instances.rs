//! `canopy bench instances`: two levels over a field of rocks, the top tree's rebuild and rays
//! through both levels beside the flattened scene ([`canopy::bench::instances`]).

use super::CliError;
use canopy::bench::instances::{InstancesConfig, run as measure};
use canopy::vk::Context;
use std::path::PathBuf;

/// Options of `canopy bench instances`.
#[derive(clap::Args, Clone, Debug)]
pub struct InstancesBenchArgs {
    /// Instances placed.
    #[arg(long, default_value_t = InstancesConfig::default().instances)]
    pub instances: u32,
    /// Distinct meshes the instances place.
    #[arg(long, default_value_t = InstancesConfig::default().meshes)]
    pub meshes: u32,
    /// Latitude bands of each mesh (a bumped sphere of 4 r (r - 1) triangles).
    #[arg(long, default_value_t = InstancesConfig::default().rings)]
    pub rings: u32,
    /// Camera rays of an N x N image (with their shadow and reflected rays).
    #[arg(long, default_value_t = InstancesConfig::default().ray_side)]
    pub rays: u32,
    /// Timed runs of each measurement (after one warm-up); the median is reported.
    #[arg(long, default_value_t = InstancesConfig::default().repeats)]
    pub repeats: u32,
    /// Also write the figures to this file as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Runs `canopy bench instances`.
pub fn run(ctx: &Context, args: &InstancesBenchArgs) -> Result<(), CliError> {
    let caps = ctx.caps();
    println!(
        "canopy bench instances on {} ({}): median of {} runs, GPU timestamps",
        caps.name,
        caps.driver,
        args.repeats.max(1)
    );
    let config = InstancesConfig {
        instances: args.instances,
        meshes: args.meshes,
        rings: args.rings,
        ray_side: args.rays,
        repeats: args.repeats,
    };
    let report = measure(ctx, &config)?;
    println!("{report}");
    super::write_json(args.json.as_deref(), ctx, "bench instances", &report)
}
