//! `canopy`: the command line. `canopy render` is the main job (frames of the animated default
//! scene); `info` describes the devices, `selfcheck` checks every GPU primitive against its CPU
//! reference, `build` and `bench` measure. With no subcommand it prints its usage.

mod cli;

use clap::{Parser, Subcommand, ValueEnum};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "canopy",
    version,
    about = "A portable Vulkan compute engine: GPU-built acceleration structures"
)]
struct Args {
    /// Vulkan device: an index from `canopy info` or a case-insensitive substring of its name.
    /// Default: $CANOPY_DEVICE, else the best device by type (discrete > integrated > virtual > CPU).
    #[arg(long, global = true, value_name = "INDEX|NAME")]
    device: Option<String>,

    /// Khronos validation layer: on when installed (auto), always (on; fails without the layer), or off.
    #[arg(long, global = true, value_enum, default_value_t = ValidationArg::Auto)]
    validation: ValidationArg,

    /// How long canopy waits for one submission of GPU work before it reports the GPU as
    /// hung: seconds, or 0 or none for no limit. Raise it for slow devices (a software
    /// renderer, huge frames). Default: $CANOPY_FENCE_TIMEOUT, else 120.
    #[arg(long, global = true, value_name = "SECONDS", value_parser = parse_fence_timeout)]
    fence_timeout: Option<FenceTimeout>,

    /// More log output: -v info, -vv debug, -vvv trace (RUST_LOG overrides).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,

    #[command(subcommand)]
    command: Command,
}

/// `--fence-timeout`: seconds, or no limit (`None`).
#[derive(Clone, Copy, Debug)]
struct FenceTimeout(Option<std::time::Duration>);

fn parse_fence_timeout(text: &str) -> Result<FenceTimeout, String> {
    canopy::vk::parse_fence_timeout(text).map(FenceTimeout)
}

#[derive(Clone, Copy, ValueEnum)]
enum ValidationArg {
    Auto,
    On,
    Off,
}

#[derive(Subcommand)]
enum Command {
    /// List the Vulkan devices and describe the selected one.
    Info,
    /// Run every GPU primitive on seeded random input against its CPU reference.
    Selfcheck,
    /// Build acceleration structures over mesh files on the GPU and report their time, work,
    /// memory, shape and traversal work.
    Build(cli::build::BuildArgs),
    /// Render frames of the animated default scene (or a mesh) to PNG files, rebuilding the
    /// acceleration structure on the GPU every frame.
    Render(Box<cli::render::RenderArgs>),
    /// Time canopy's GPU work with GPU timestamps and count it (dispatches, barriers, memory,
    /// nodes and primitives per ray).
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Point clouds: oriented normals and densities from k nearest neighbours.
    #[command(subcommand)]
    Points(cli::points::PointsCommand),
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Every primitive over a range of sizes, against the device-local copy bandwidth.
    Prims(cli::bench::PrimsArgs),
    /// LBVH builds of the default scene from 10K to 4M triangles and of a random soup (or of
    /// --mesh files, through any --structure), beside the driver's builder.
    Lbvh(cli::structures::LbvhArgs),
    /// GPU SAH kd-tree builds (or any --structure) of the default scene or --mesh files:
    /// stages, work, memory, and quality against the CPU full-SAH tree.
    Kdtree(cli::structures::KdTreeBenchArgs),
    /// Whole frames of the default scene (or --mesh files) and their camera rays alone.
    Render(cli::bench_render::RenderBenchArgs),
    /// Point kd-tree builds and every point's k nearest neighbours over seeded clouds.
    Knn(cli::bench_knn::KnnBenchArgs),
    /// Skinning, Loop subdivision and a vertex-animation sequence streamed from disk.
    Animation(cli::bench_animation::AnimationBenchArgs),
    /// The fixed cost of a dispatch and its barrier in a chain, the copy bandwidth, and the
    /// fraction of it an LBVH traversal's node reads reach.
    Dispatch(cli::bench_dispatch::DispatchBenchArgs),
    /// Two levels: the top tree's rebuild over many instances of a few meshes, and rays
    /// through both levels beside the same scene flattened into one mesh.
    Instances(cli::bench_instances::InstancesBenchArgs),
    /// A GPU run's JSON files (tools/gpu-bench.sh) against canopy's targets, as Markdown rows.
    Report(cli::bench_report::ReportArgs),
}

fn main() -> ExitCode {
    // A reader that stops early (`canopy render | head`) ends canopy as it ends other tools,
    // instead of a failed print turning into an internal error.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args = Args::parse();
    let level = match args.verbose {
        0 => log::LevelFilter::Warn,
        1 => log::LevelFilter::Info,
        2 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    };
    env_logger::Builder::new()
        .filter_level(level)
        .parse_env("RUST_LOG")
        .init();
    // A bug inside canopy reports as one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| eprintln!("error: internal error: {info}")));
    // SIGINT and SIGTERM end canopy with 130, at once unless a command is in a step that
    // stops gracefully (rendering frames).
    cli::interrupt::install();
    if let Some(FenceTimeout(timeout)) = args.fence_timeout {
        cli::set_fence_timeout(timeout);
    }

    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn run(args: &Args) -> Result<(), cli::CliError> {
    let options = canopy::vk::ContextOptions {
        device: args.device.clone(),
        validation: match args.validation {
            ValidationArg::Auto => canopy::vk::Validation::IfAvailable,
            ValidationArg::On => canopy::vk::Validation::Required,
            ValidationArg::Off => canopy::vk::Validation::Off,
        },
        max_workgroup_count: None,
    };
    match args.command {
        Command::Info => cli::info::run(&options).map(drop),
        Command::Selfcheck => cli::selfcheck::run(&cli::context(&options)?),
        Command::Build(ref build) => cli::build::run(&cli::context(&options)?, build),
        Command::Render(ref render) => cli::render::run(&options, render),
        Command::Bench(BenchCommand::Prims(ref bench)) => {
            cli::bench::run(&cli::context(&options)?, bench)
        }
        Command::Bench(BenchCommand::Lbvh(ref bench)) => {
            cli::structures::run_lbvh(&cli::context(&options)?, bench)
        }
        Command::Bench(BenchCommand::Kdtree(ref bench)) => {
            cli::structures::run_kdtree(&cli::context(&options)?, bench)
        }
        Command::Bench(BenchCommand::Render(ref bench)) => {
            cli::bench_render::run(&cli::context(&options)?, bench)
        }
        Command::Bench(BenchCommand::Report(ref report)) => cli::bench_report::run(report),
        Command::Bench(BenchCommand::Animation(ref bench)) => {
            cli::bench_animation::run(&cli::context(&options)?, bench)
        }
        Command::Bench(BenchCommand::Dispatch(ref bench)) => {
            cli::bench_dispatch::run(&cli::context(&options)?, bench)
        }
        Command::Bench(BenchCommand::Instances(ref bench)) => {
            cli::bench_instances::run(&cli::context(&options)?, bench)
        }
        Command::Bench(BenchCommand::Knn(ref bench)) => {
            cli::bench_knn::run(&cli::context(&options)?, bench)
        }
        Command::Points(ref points) => cli::points::run(&cli::context(&options)?, points),
    }
}
