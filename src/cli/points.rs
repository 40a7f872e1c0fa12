//! `canopy points normals`: a point cloud's oriented normals and densities
//! ([`canopy::points::analyse`]), written as PLY with a summary.

use super::CliError;
use canopy::accel::pointkd::knn::MAX_K;
use canopy::scene::Mesh;
use canopy::scene::scans::load_aligned_scans;
use canopy::vk::Context;
use std::path::PathBuf;

/// `canopy points` commands.
#[derive(clap::Subcommand, Clone, Debug)]
pub enum PointsCommand {
    /// Oriented PCA normals and densities (k / r_k²) of every point of a cloud (PLY, OBJ: the
    /// vertices; or a Stanford .conf whose aligned scans are merged), from its k nearest
    /// neighbours on the GPU; written as binary PLY (x y z nx ny nz density).
    Normals(NormalsArgs),
}

/// Options of `canopy points normals`.
#[derive(clap::Args, Clone, Debug)]
pub struct NormalsArgs {
    /// The point cloud, or a .conf file of aligned scans (bun.conf) to merge.
    pub input: PathBuf,
    /// Where to write the PLY [default: the input's name with `_normals.ply`].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Neighbours per point.
    #[arg(short, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=MAX_K as i64))]
    pub k: u32,
    /// Print the GPU time of each stage and the CPU time of the orientation.
    #[arg(long)]
    pub profile: bool,
}

/// Runs a `canopy points` command.
pub fn run(ctx: &Context, command: &PointsCommand) -> Result<(), CliError> {
    let PointsCommand::Normals(args) = command;
    let failed = |e: canopy::scene::SceneError| CliError::Failed(e.to_string());
    let points = if args.input.extension().is_some_and(|e| e == "conf") {
        let scans = load_aligned_scans(&args.input).map_err(failed)?;
        for (scan, count) in &scans.merged {
            println!("merged {} ({count} points)", scan.display());
        }
        for scan in &scans.missing {
            println!("note: {} is listed but missing: left out", scan.display());
        }
        scans.points
    } else {
        Mesh::load_points(&args.input).map_err(failed)?
    };
    let output = args.output.clone().unwrap_or_else(|| {
        let stem = args.input.file_stem().unwrap_or_default().to_string_lossy();
        args.input.with_file_name(format!("{stem}_normals.ply"))
    });
    let result = canopy::points::analyse(ctx, &points, args.k)?;
    canopy::points::write_ply(&output, &points, &result.normals, &result.densities)
        .map_err(|e| CliError::Failed(format!("{}: {e}", output.display())))?;
    let finite: Vec<f32> = result
        .densities
        .iter()
        .copied()
        .filter(|d| d.is_finite())
        .collect();
    let mean = finite.iter().map(|&d| d as f64).sum::<f64>() / finite.len().max(1) as f64;
    let without = result.normals.iter().filter(|n| **n == [0.0; 3]).count();
    println!(
        "{}: {} points, k = {}: {} normals oriented ({} flipped, {} without a normal; {} trees \
         joined in {} rounds), mean density {:.4e}; wrote {}",
        args.input.display(),
        points.len(),
        args.k,
        points.len() - without,
        result.orientation.flipped,
        without,
        points.len() as u64 - result.orientation.forest_edges(),
        result.orientation.rounds(),
        mean,
        output.display()
    );
    if args.profile {
        for (stage, ms) in &result.stages {
            println!("  {stage:<28} {ms:.4} ms (GPU)");
        }
    }
    Ok(())
}
