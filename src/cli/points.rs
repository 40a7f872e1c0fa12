//! `canopy points normals`: a point cloud's oriented normals and densities
//! ([`canopy::points::analyse`]); `canopy points strength`: its deformation strength from
//! handles chosen by boxes ([`canopy::points::deform`]); each written as PLY with a summary.

use super::CliError;
use canopy::accel::pointkd::knn::MAX_K;
use canopy::scene::Mesh;
use canopy::scene::scans::load_aligned_scans;
use canopy::vk::Context;
use std::path::{Path, PathBuf};

/// `canopy points` commands.
#[derive(clap::Subcommand, Clone, Debug)]
pub enum PointsCommand {
    /// Oriented PCA normals and densities (k / r_k²) of every point of a cloud (PLY, PCD, OBJ:
    /// the vertices; or a Stanford .conf whose aligned scans are merged), from its k nearest
    /// neighbours on the GPU; written as binary PLY (x y z nx ny nz density).
    Normals(NormalsArgs),
    /// The deformation strength (0 to 1) of every point of a cloud for editing: 1 on the
    /// active handle, 0 on the static handles, easing in between by the distances to their
    /// nearest points (found through two point kd-trees on the GPU); written as binary PLY
    /// (x y z strength).
    Strength(StrengthArgs),
}

/// Options of `canopy points strength`.
#[derive(clap::Args, Clone, Debug)]
pub struct StrengthArgs {
    /// The point cloud, or a .conf file of aligned scans (bun.conf) to merge.
    pub input: PathBuf,
    /// Where to write the PLY [default: the input's name with `_strength.ply`].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The active handle: the points in this box (`xmin,ymin,zmin,xmax,ymax,zmax`).
    #[arg(long, value_name = "BOX", value_parser = parse_box, required = true, allow_hyphen_values = true)]
    pub active_box: HandleBox,
    /// A static handle: the points in this box (repeatable; none: only the active handle).
    #[arg(long = "static-box", value_name = "BOX", value_parser = parse_box, allow_hyphen_values = true)]
    pub static_boxes: Vec<HandleBox>,
}

/// A box choosing handle points: low and high corners.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandleBox {
    lo: [f32; 3],
    hi: [f32; 3],
}

impl HandleBox {
    fn contains(&self, p: [f32; 3]) -> bool {
        (0..3).all(|a| self.lo[a] <= p[a] && p[a] <= self.hi[a])
    }
}

fn parse_box(text: &str) -> Result<HandleBox, String> {
    let values: Vec<f32> = text
        .split(',')
        .map(|v| v.trim().parse::<f32>().map_err(|e| format!("'{v}': {e}")))
        .collect::<Result<_, _>>()?;
    match values[..] {
        [x0, y0, z0, x1, y1, z1] if values.iter().all(|v| v.is_finite()) => Ok(HandleBox {
            lo: [x0.min(x1), y0.min(y1), z0.min(z1)],
            hi: [x0.max(x1), y0.max(y1), z0.max(z1)],
        }),
        _ => Err(format!(
            "'{text}': six finite numbers, xmin,ymin,zmin,xmax,ymax,zmax"
        )),
    }
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
    /// Print the GPU time of each stage.
    #[arg(long)]
    pub profile: bool,
}

/// Runs a `canopy points` command.
pub fn run(ctx: &Context, command: &PointsCommand) -> Result<(), CliError> {
    match command {
        PointsCommand::Normals(args) => normals(ctx, args),
        PointsCommand::Strength(args) => strength(ctx, args),
    }
}

/// The cloud at `input`, or the merged scans of a .conf.
fn load_cloud(input: &Path) -> Result<Vec<[f32; 3]>, CliError> {
    let failed = |e: canopy::scene::SceneError| CliError::Input(e.to_string());
    Ok(if input.extension().is_some_and(|e| e == "conf") {
        let scans = load_aligned_scans(input).map_err(failed)?;
        for (scan, count) in &scans.merged {
            println!("merged {} ({count} points)", scan.display());
        }
        for scan in &scans.missing {
            println!("note: {} is listed but missing: left out", scan.display());
        }
        scans.points
    } else {
        Mesh::load_points(input).map_err(failed)?
    })
}

/// `output`, or the input's name with `_{suffix}.ply`.
fn output_path(input: &Path, output: &Option<PathBuf>, suffix: &str) -> PathBuf {
    output.clone().unwrap_or_else(|| {
        let stem = input.file_stem().unwrap_or_default().to_string_lossy();
        input.with_file_name(format!("{stem}_{suffix}.ply"))
    })
}

fn strength(ctx: &Context, args: &StrengthArgs) -> Result<(), CliError> {
    let points = load_cloud(&args.input)?;
    let output = output_path(&args.input, &args.output, "strength");
    let inside = |boxes: &[HandleBox]| -> Vec<u32> {
        (0..points.len() as u32)
            .filter(|&i| boxes.iter().any(|b| b.contains(points[i as usize])))
            .collect()
    };
    let (active, fixed) = (inside(&[args.active_box]), inside(&args.static_boxes));
    if active.is_empty() {
        return Err(CliError::Input(format!(
            "the active box {:?} holds none of the {} points",
            args.active_box,
            points.len()
        )));
    }
    let strength = canopy::points::deform::deformation_strength(ctx, &points, &active, &fixed)?;
    canopy::points::write_ply(&output, &points, &[("strength", strength.clone())])
        .map_err(|e| CliError::Io(format!("{}: {e}", output.display())))?;
    let mean = strength.iter().map(|&t| t as f64).sum::<f64>() / strength.len() as f64;
    println!(
        "{}: {} points, {} in the active handle, {} in the static handles: mean strength {:.4}; \
         wrote {}",
        args.input.display(),
        points.len(),
        active.len(),
        fixed.len(),
        mean,
        output.display()
    );
    Ok(())
}

fn normals(ctx: &Context, args: &NormalsArgs) -> Result<(), CliError> {
    let points = load_cloud(&args.input)?;
    let output = output_path(&args.input, &args.output, "normals");
    let result = canopy::points::analyse(ctx, &points, args.k)?;
    let columns = canopy::points::normal_columns(&result);
    canopy::points::write_ply(&output, &points, &columns)
        .map_err(|e| CliError::Io(format!("{}: {e}", output.display())))?;
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
        result.distinct as u64 - result.orientation.forest_edges(),
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
