//! The subcommands of the `canopy` binary, one module each; they parse and print, and leave
//! the measuring to [`canopy::bench`].

pub mod bench;
pub mod bench_animation;
pub mod bench_dispatch;
pub mod bench_instances;
pub mod bench_knn;
pub mod bench_render;
pub mod bench_report;
pub mod build;
pub mod info;
pub mod interrupt;
pub mod points;
pub mod render;
pub mod selfcheck;
pub mod structures;

use canopy::accel::StructureKind;
use canopy::accel::bvh::lbvh::{BvhLayout, BvhQuality};
use canopy::bench::DeviceInfo;
use canopy::geom::MortonBits;
use canopy::vk::{Context, ContextOptions};
use std::path::Path;

/// Why a command failed; printed as `error: <this>`. The exit code says which kind of
/// failure it was, so that a scheduler can decide whether to retry (see [`Self::exit_code`]).
#[derive(Debug)]
pub enum CliError {
    /// An error from canopy's Vulkan layer or a builder (its message names what went wrong).
    Canopy(canopy::vk::Error),
    /// A command ran but its result is a failure (e.g. a selfcheck mismatch).
    Failed(String),
    /// SIGINT or SIGTERM stopped the command (after saying what it had done).
    Interrupted,
    /// Options that contradict each other or that the command would ignore.
    Usage(String),
    /// Input that cannot be used: a missing or malformed mesh file, degenerate geometry.
    Input(String),
    /// Output that cannot be written: a frame, the output folder, a stats file.
    Io(String),
}

impl CliError {
    /// The process exit code: 2 for bad input or options (retrying will not help), 3 for a
    /// device error (no Vulkan, a missing feature, out of device memory: another machine may
    /// do), 4 for an I/O error writing the output (a full disk: retry after fixing it), 130
    /// after an interrupt (the shell's convention), 1 for anything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Interrupted => 130,
            CliError::Usage(_) | CliError::Input(_) => 2,
            CliError::Canopy(canopy::vk::Error::InvalidInput(_)) => 2,
            CliError::Canopy(_) => 3,
            CliError::Io(_) => 4,
            CliError::Failed(_) => 1,
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Canopy(e) => e.fmt(f),
            CliError::Failed(what)
            | CliError::Usage(what)
            | CliError::Input(what)
            | CliError::Io(what) => f.write_str(what),
            CliError::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl From<canopy::vk::Error> for CliError {
    fn from(e: canopy::vk::Error) -> Self {
        CliError::Canopy(e)
    }
}

impl From<canopy::job::JobError> for CliError {
    fn from(e: canopy::job::JobError) -> Self {
        use canopy::job::JobError;
        match e {
            JobError::Existing { .. } => CliError::Usage(format!(
                "{e}; render only the missing ones with --skip-existing, or write over them \
                 with --overwrite"
            )),
            JobError::Output(what) => CliError::Io(what),
            JobError::Device(e) => CliError::Canopy(e),
            JobError::Video(e) => render::video_error(e),
        }
    }
}

impl From<canopy::bench::Error> for CliError {
    fn from(e: canopy::bench::Error) -> Self {
        match e {
            canopy::bench::Error::Vk(e) => CliError::Canopy(e),
            canopy::bench::Error::Scene(e) => CliError::Input(e.to_string()),
            other => CliError::Failed(other.to_string()),
        }
    }
}

/// `--fence-timeout`, when given (`None` inside: no limit).
static FENCE_TIMEOUT: std::sync::OnceLock<Option<std::time::Duration>> = std::sync::OnceLock::new();

/// Sets the fence timeout of every context [`context`] makes (`None`: no limit).
pub fn set_fence_timeout(timeout: Option<std::time::Duration>) {
    let _ = FENCE_TIMEOUT.set(timeout);
}

/// The context the command line works on.
pub fn context(options: &ContextOptions) -> Result<Context, CliError> {
    let ctx = Context::new(options)?;
    if let Some(&timeout) = FENCE_TIMEOUT.get() {
        ctx.set_fence_timeout(timeout);
    }
    Ok(ctx)
}

/// The Morton code width `--morton-bits` asks for (30 when not given), refused when none of
/// `structures` sorts Morton codes: an option that would be ignored is an error.
pub fn morton_bits(
    arg: Option<render::MortonArg>,
    structures: &[StructureKind],
) -> Result<MortonBits, CliError> {
    match arg {
        Some(_) if !structures.iter().any(|s| s.uses_morton_codes()) => {
            let names: Vec<&str> = structures.iter().map(|s| s.name()).collect();
            Err(CliError::Usage(format!(
                "--morton-bits sets the codes of the lbvh and the octree; --structure {} uses none",
                names.join(",")
            )))
        }
        arg => Ok(arg.map_or(MortonBits::Bits30, MortonBits::from)),
    }
}

/// The BVH quality `--bvh-quality` asks for (fast when not given), refused when none of
/// `structures` builds a BVH (the LBVH, or the screen grid's LBVH for its other rays).
pub fn bvh_quality(
    arg: Option<render::QualityArg>,
    structures: &[StructureKind],
) -> Result<BvhQuality, CliError> {
    bvh_option("--bvh-quality", arg, structures)
}

/// The BVH layout `--bvh-layout` asks for (binary when not given), refused like
/// [`bvh_quality`].
pub fn bvh_layout(
    arg: Option<render::LayoutArg>,
    structures: &[StructureKind],
) -> Result<BvhLayout, CliError> {
    bvh_option("--bvh-layout", arg, structures)
}

fn bvh_option<A, T: Default + From<A>>(
    flag: &str,
    arg: Option<A>,
    structures: &[StructureKind],
) -> Result<T, CliError> {
    match arg {
        Some(_) if !structures.iter().any(|s| s.builds_bvh()) => {
            let names: Vec<&str> = structures.iter().map(|s| s.name()).collect();
            Err(CliError::Usage(format!(
                "{flag} sets the tree of the lbvh and the grid's other rays; --structure {} \
                 builds neither",
                names.join(",")
            )))
        }
        arg => Ok(arg.map_or_else(T::default, T::from)),
    }
}

/// A structure's name on the command line (`lbvh`, `kdtree`, `octree`).
pub fn parse_structure(text: &str) -> Result<StructureKind, String> {
    text.parse()
}

/// A structure rays can be traced through (`lbvh`, `kdtree`, `bih`).
pub fn parse_traced_structure(text: &str) -> Result<StructureKind, String> {
    let kind = parse_structure(text)?;
    if kind.traceable() {
        Ok(kind)
    } else {
        let traced: Vec<&str> = StructureKind::ALL
            .iter()
            .filter(|k| k.traceable())
            .map(|k| k.name())
            .collect();
        Err(format!(
            "'{text}': rays cannot be traced through an {kind}; expected {}",
            traced.join(", ")
        ))
    }
}

/// What `--json FILE` writes: the command, canopy's version, the device and the reports.
#[derive(serde::Serialize)]
struct JsonReport<'a, T: serde::Serialize> {
    command: &'a str,
    canopy: &'static str,
    device: DeviceInfo,
    reports: &'a T,
}

/// Writes `reports` of `command` to `path` as JSON (when a path was given).
pub fn write_json(
    path: Option<&Path>,
    ctx: &Context,
    command: &str,
    reports: &impl serde::Serialize,
) -> Result<(), CliError> {
    let Some(path) = path else {
        return Ok(());
    };
    let report = JsonReport {
        command,
        canopy: env!("CARGO_PKG_VERSION"),
        device: DeviceInfo::of(ctx),
        reports,
    };
    canopy::bench::write_json(path, &report)
        .map_err(|e| CliError::Io(format!("{}: {e}", path.display())))?;
    println!("wrote {}", path.display());
    Ok(())
}
