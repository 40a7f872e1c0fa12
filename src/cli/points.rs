//! `canopy points normals`: a point cloud's oriented normals and densities
//! ([`canopy::points::analyse`]); `canopy points strength`: its deformation strength from
//! handles chosen by boxes ([`canopy::points::deform`]); each written as PLY, or for LAS/LAZ
//! input as LAS/LAZ with the values as extra bytes, with a summary.

use super::CliError;
use canopy::accel::pointkd::knn::MAX_K;
use canopy::scene::Mesh;
use canopy::scene::offset_cloud::OffsetCloud;
use canopy::scene::scans::load_aligned_scans;
use canopy::scene::{e57, las};
use canopy::vk::Context;
use std::path::{Path, PathBuf};

/// `canopy points` commands.
#[derive(clap::Subcommand, Clone, Debug)]
pub enum PointsCommand {
    /// Oriented PCA normals and densities (k / r_k²) of every point of a cloud (PLY, PCD, LAS,
    /// LAZ, E57, OBJ: the vertices; or a Stanford .conf whose aligned scans are merged), from its k
    /// nearest neighbours on the GPU; written as binary PLY (x y z nx ny nz density), or as
    /// LAS/LAZ with nx ny nz density added as extra bytes.
    Normals(NormalsArgs),
    /// The deformation strength (0 to 1) of every point of a cloud for editing: 1 on the
    /// active handle, 0 on the static handles, easing in between by the distances to their
    /// nearest points (found through two point kd-trees on the GPU); written as binary PLY
    /// (x y z strength), or as LAS/LAZ with strength added as extra bytes.
    Strength(StrengthArgs),
}

/// Options of `canopy points strength`.
#[derive(clap::Args, Clone, Debug)]
pub struct StrengthArgs {
    /// The point cloud, or a .conf file of aligned scans (bun.conf) to merge.
    pub input: PathBuf,
    /// Where to write: .ply, or .las/.laz for LAS/LAZ input [default: the input's name with
    /// `_strength` and its extension for LAS/LAZ, else `.ply`].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The active handle: the points in this box (`xmin,ymin,zmin,xmax,ymax,zmax`).
    #[arg(long, value_name = "BOX", value_parser = parse_box, required = true, allow_hyphen_values = true)]
    pub active_box: HandleBox,
    /// A static handle: the points in this box (repeatable; none: only the active handle).
    #[arg(long = "static-box", value_name = "BOX", value_parser = parse_box, allow_hyphen_values = true)]
    pub static_boxes: Vec<HandleBox>,
}

/// A box choosing handle points: low and high corners, in the file's coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandleBox {
    lo: [f64; 3],
    hi: [f64; 3],
}

impl HandleBox {
    /// Whether the point `p` of a cloud relative to `origin` lies in the box.
    fn contains(&self, p: [f32; 3], origin: [f64; 3]) -> bool {
        (0..3).all(|a| {
            let x = p[a] as f64 + origin[a];
            self.lo[a] <= x && x <= self.hi[a]
        })
    }
}

fn parse_box(text: &str) -> Result<HandleBox, String> {
    let values: Vec<f64> = text
        .split(',')
        .map(|v| v.trim().parse::<f64>().map_err(|e| format!("'{v}': {e}")))
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
    /// Where to write: .ply, or .las/.laz for LAS/LAZ input [default: the input's name with
    /// `_normals` and its extension for LAS/LAZ, else `.ply`].
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

/// The cloud at `input`, or the merged scans of a .conf: relative to an origin for LAS, LAZ
/// and E57 (whose coordinates keep their precision so), else to zero.
fn load_cloud(input: &Path) -> Result<OffsetCloud, CliError> {
    let failed = |e: canopy::scene::SceneError| CliError::Input(e.to_string());
    let points = if input.extension().is_some_and(|e| e == "conf") {
        let scans = load_aligned_scans(input).map_err(failed)?;
        for (scan, count) in &scans.merged {
            println!("merged {} ({count} points)", scan.display());
        }
        for scan in &scans.missing {
            println!("note: {} is listed but missing: left out", scan.display());
        }
        scans.points
    } else if las::is_las(input) || e57::is_e57(input) {
        let cloud = if e57::is_e57(input) {
            e57::load(input)
        } else {
            las::load(input)
        }
        .map_err(failed)?;
        println!(
            "{}: coordinates relative to the origin {:?}",
            input.display(),
            cloud.origin
        );
        return Ok(cloud);
    } else {
        Mesh::load_points(input).map_err(failed)?
    };
    Ok(OffsetCloud {
        origin: [0.0; 3],
        points,
    })
}

/// `output`, or the input's name with `_{suffix}` and `.ply` (LAS/LAZ input: its own
/// extension).
fn output_path(input: &Path, output: &Option<PathBuf>, suffix: &str) -> PathBuf {
    output.clone().unwrap_or_else(|| {
        let stem = input.file_stem().unwrap_or_default().to_string_lossy();
        let extension = match input.extension() {
            Some(e) if las::is_las(input) => e.to_string_lossy(),
            _ => "ply".into(),
        };
        input.with_file_name(format!("{stem}_{suffix}.{extension}"))
    })
}

/// Writes `cloud` with `columns` to `output`: LAS/LAZ (the input's points with the columns as
/// extra bytes) or PLY (positions relative to the cloud's origin, which a comment names).
fn write_output(
    input: &Path,
    output: &Path,
    cloud: &OffsetCloud,
    columns: &canopy::points::PlyColumns,
) -> Result<(), CliError> {
    if las::is_las(output) {
        if !las::is_las(input) {
            return Err(CliError::Input(format!(
                "{}: LAS/LAZ output takes its points' other fields from LAS/LAZ input; {} is not",
                output.display(),
                input.display()
            )));
        }
        let fields: Vec<las::ExtraField> =
            columns.iter().map(|(n, v)| (*n, v.as_slice())).collect();
        return las::write_with_values(input, output, &fields)
            .map_err(|e| CliError::Io(e.to_string()));
    }
    canopy::points::write_ply(output, &cloud.points, cloud.origin, columns)
        .map_err(|e| CliError::Io(format!("{}: {e}", output.display())))
}

fn strength(ctx: &Context, args: &StrengthArgs) -> Result<(), CliError> {
    let cloud = load_cloud(&args.input)?;
    let points = &cloud.points;
    let output = output_path(&args.input, &args.output, "strength");
    let inside = |boxes: &[HandleBox]| -> Vec<u32> {
        (0..points.len() as u32)
            .filter(|&i| {
                boxes
                    .iter()
                    .any(|b| b.contains(points[i as usize], cloud.origin))
            })
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
    let strength = canopy::points::deform::deformation_strength(ctx, points, &active, &fixed)?;
    write_output(
        &args.input,
        &output,
        &cloud,
        &[("strength", strength.clone())],
    )?;
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
    let cloud = load_cloud(&args.input)?;
    let points = &cloud.points;
    let output = output_path(&args.input, &args.output, "normals");
    let result = canopy::points::analyse(ctx, points, args.k)?;
    let columns = canopy::points::normal_columns(&result);
    write_output(&args.input, &output, &cloud, &columns)?;
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
