//! `canopy bench dispatch`: the fixed cost of a dispatch and its barrier in a chain, the
//! device-local copy bandwidth, and the fraction of it an LBVH traversal's node reads reach
//! ([`canopy::bench::dispatch`]), printed as they are measured.

use super::CliError;
use canopy::bench::dispatch::{DispatchConfig, Part, run as measure};
use canopy::vk::Context;
use std::path::PathBuf;

/// Options of `canopy bench dispatch`.
#[derive(clap::Args, Clone, Debug)]
pub struct DispatchBenchArgs {
    /// Dispatches in each chain.
    #[arg(long, default_value_t = DispatchConfig::default().chain)]
    pub chain: u32,
    /// Workgroups (of 256 invocations) per dispatch of the chains that fill the GPU.
    #[arg(long, default_value_t = DispatchConfig::default().wide_groups)]
    pub wide_groups: u32,
    /// Size of the copies, in MiB (at most a quarter of the device-local memory).
    #[arg(long, default_value_t = DispatchConfig::default().copy_bytes >> 20)]
    pub copy_mib: u64,
    /// Timed runs of each measurement (after one warm-up); the median is reported.
    #[arg(long, default_value_t = DispatchConfig::default().repeats)]
    pub repeats: u32,
    /// Triangles of the default scene's torus the LBVH whose node reads are measured is built
    /// over (0: no traversal).
    #[arg(long, default_value_t = DispatchConfig::default().triangles)]
    pub triangles: u64,
    /// Camera rays of an N x N image traced through it (with their shadow and reflected rays).
    #[arg(long, default_value_t = DispatchConfig::default().ray_side)]
    pub rays: u32,
    /// Also write the figures to this file as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Runs `canopy bench dispatch`.
pub fn run(ctx: &Context, args: &DispatchBenchArgs) -> Result<(), CliError> {
    if args.chain == 0 || args.wide_groups == 0 || args.rays == 0 || args.copy_mib == 0 {
        return Err(CliError::Usage(
            "--chain, --wide-groups, --rays and --copy-mib need at least 1".into(),
        ));
    }
    let caps = ctx.caps();
    println!(
        "canopy bench dispatch on {} ({}): median of {} runs, GPU timestamps",
        caps.name,
        caps.driver,
        args.repeats.max(1)
    );
    let config = DispatchConfig {
        chain: args.chain,
        wide_groups: args.wide_groups,
        copy_bytes: args.copy_mib << 20,
        repeats: args.repeats,
        triangles: args.triangles,
        ray_side: args.rays,
    };
    let report = measure(ctx, &config, |part| match part {
        Part::Copy(copy) => println!("{copy}"),
        Part::Chain(chain) => println!("{chain}"),
        Part::NodeReads(reads) => println!("{reads}"),
    })?;
    super::write_json(args.json.as_deref(), ctx, "bench dispatch", &report)
}
