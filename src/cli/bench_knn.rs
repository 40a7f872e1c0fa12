//! `canopy bench knn`: point kd-tree builds and every point's k nearest neighbours over seeded
//! clouds ([`canopy::bench::knn`]), printed as they are measured.

use super::CliError;
use canopy::accel::pointkd::PointKdParams;
use canopy::accel::pointkd::knn::{KnnSearch, MAX_K};
use canopy::bench::knn::{Distribution, KnnConfig, measure};
use canopy::vk::Context;
use std::path::PathBuf;

/// Options of `canopy bench knn`.
#[derive(clap::Args, Clone, Debug)]
pub struct KnnBenchArgs {
    /// Cloud sizes.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
    pub points: Vec<u32>,
    /// Neighbours per query (1 to 64).
    #[arg(long, value_delimiter = ',', default_value = "1,8,16,40,50")]
    pub k: Vec<u32>,
    /// Cloud kinds: uniform, clustered, surface.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "uniform,clustered,surface"
    )]
    pub distribution: Vec<Distribution>,
    /// Timed runs (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 9)]
    pub repeats: u32,
    /// Queries whose final radius is compared with brute force.
    #[arg(long, default_value_t = 64)]
    pub sampled: u32,
    /// The trees' Cts: the cost of visiting a node, in point tests (larger: larger leaves).
    #[arg(long, default_value_t = PointKdParams::default().traversal_cost)]
    pub traversal_cost: f32,
    /// The trees' leaf size below which nodes are leaves without pricing.
    #[arg(long, default_value_t = PointKdParams::default().max_leaf)]
    pub max_leaf: u32,
    /// How the k nearest are searched: nearest-first (one walk per query) or histogram
    /// (Alg. 6).
    #[arg(long, default_value = "nearest-first")]
    pub search: KnnSearch,
    /// Start the queries from Alg. 7's radii (computed and timed with them, as the histogram
    /// search wants) instead of unbounded.
    #[arg(long)]
    pub starting_radii: bool,
    /// Neighbours for the point-cloud modelling measured after the queries (normals, density,
    /// orientation); 0: none.
    #[arg(long, default_value_t = 16)]
    pub modelling_k: u32,
    /// Also write the figures to this file as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Runs `canopy bench knn`.
pub fn run(ctx: &Context, args: &KnnBenchArgs) -> Result<(), CliError> {
    if let Some(k) = args.k.iter().find(|&&k| !(1..=MAX_K).contains(&k)) {
        return Err(CliError::Failed(format!("k {k}: 1 to {MAX_K}")));
    }
    if args.modelling_k > MAX_K {
        return Err(CliError::Failed(format!(
            "modelling k {}: 0 to {MAX_K}",
            args.modelling_k
        )));
    }
    if args.points.contains(&0) {
        return Err(CliError::Failed("a cloud of 0 points".into()));
    }
    println!(
        "canopy bench knn on {}: median of {} runs, GPU timestamps",
        ctx.caps().name,
        args.repeats.max(1)
    );
    let config = KnnConfig {
        sizes: args.points.clone(),
        ks: args.k.clone(),
        distributions: args.distribution.clone(),
        repeats: args.repeats,
        sampled: args.sampled,
        tree: PointKdParams {
            traversal_cost: args.traversal_cost,
            max_leaf: args.max_leaf,
            ..PointKdParams::default()
        },
        modelling_k: (args.modelling_k > 0).then_some(args.modelling_k),
        search: args.search,
        starting_radii: args.starting_radii,
    };
    let reports = measure(ctx, &config, |report| print!("{report}"))?;
    super::write_json(args.json.as_deref(), ctx, "bench knn", &reports)
}
