//! The subcommands of the `canopy` binary, one module each.

pub mod bench;
pub mod bench_accel;
pub mod bench_kdtree;
pub mod build;
pub mod info;
pub mod render;
pub mod selfcheck;
pub mod structure;

use canopy::vk::{Context, ContextOptions};

/// Why a command failed; printed as `error: <this>`.
#[derive(Debug)]
pub enum CliError {
    /// An error from canopy (its message names what went wrong).
    Canopy(canopy::vk::Error),
    /// A command ran but its result is a failure (e.g. a selfcheck mismatch).
    Failed(String),
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Canopy(e) => e.fmt(f),
            CliError::Failed(what) => f.write_str(what),
        }
    }
}

impl From<canopy::vk::Error> for CliError {
    fn from(e: canopy::vk::Error) -> Self {
        CliError::Canopy(e)
    }
}

/// The context the command line works on.
pub fn context(options: &ContextOptions) -> Result<Context, CliError> {
    Ok(Context::new(options)?)
}
