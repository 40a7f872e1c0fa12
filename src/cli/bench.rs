//! `canopy bench prims`: GPU-timestamp timings of every primitive over a range of sizes
//! ([`canopy::bench::prims`]), printed one line per primitive and size as they are measured.

use super::CliError;
use canopy::bench::prims::{PrimRow, PrimsConfig};
use canopy::vk::Context;
use std::path::PathBuf;

/// Options of `canopy bench prims`.
#[derive(clap::Args, Clone, Debug)]
pub struct PrimsArgs {
    /// Smallest size, as log2 of the element count.
    #[arg(long, default_value_t = 10)]
    pub min_log2: u32,
    /// Largest size, as log2 of the element count [default: 26]. It bounds the targets too
    /// unless they are named.
    #[arg(long)]
    pub max_log2: Option<u32>,
    /// Step between sizes, in powers of two.
    #[arg(long, default_value_t = 2)]
    pub step: u32,
    /// Timed runs per size (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 15)]
    pub repeats: u32,
    /// Size of the scan measured against the copy bandwidth, as log2 [default: 28, the
    /// target's size, unless --max-log2 is smaller].
    #[arg(long)]
    pub scan_target_log2: Option<u32>,
    /// Size of the key-value sort target, as log2 [default: 25, the target's size, unless
    /// --max-log2 is smaller].
    #[arg(long)]
    pub sort_target_log2: Option<u32>,
    /// Also time the sort target with these keys per scatter invocation (a tuning sweep).
    #[arg(long, value_delimiter = ',')]
    pub sort_keys_per_invocation: Vec<u32>,
    /// Also time the sort target with digits of up to these many bits, 1 to 10 (a tuning
    /// sweep; the default is 8).
    #[arg(long, value_delimiter = ',')]
    pub sort_digit_bits: Vec<u32>,
    /// Only primitives whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Also write the figures to this file as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Runs `canopy bench prims`.
pub fn run(ctx: &Context, args: &PrimsArgs) -> Result<(), CliError> {
    let caps = ctx.caps();
    println!(
        "canopy bench prims on {} ({}), subgroup size {}, median of {} runs",
        caps.name, caps.driver, caps.subgroup_size, args.repeats
    );
    let defaults = PrimsConfig::default();
    // A target larger than a --max-log2 the user set runs only when named.
    let target = |named: Option<u32>, default: Option<u32>| {
        named.or(default.filter(|&log2| args.max_log2.is_none_or(|max| log2 <= max)))
    };
    let config = PrimsConfig {
        min_log2: args.min_log2,
        max_log2: args.max_log2.unwrap_or(defaults.max_log2),
        step: args.step,
        repeats: args.repeats,
        scan_target_log2: target(args.scan_target_log2, defaults.scan_target_log2),
        sort_target_log2: target(args.sort_target_log2, defaults.sort_target_log2),
        sort_keys_per_invocation: args.sort_keys_per_invocation.clone(),
        sort_digit_bits: args.sort_digit_bits.clone(),
        only: args.only.clone(),
    };
    println!("{}", PrimRow::header());
    let report = canopy::bench::prims::run(ctx, &config, |row| println!("{row}"))?;
    println!("{report}");
    super::write_json(args.json.as_deref(), ctx, "bench prims", &report)
}
