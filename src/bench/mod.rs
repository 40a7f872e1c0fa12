//! Measurements of canopy's GPU work, shared by the `canopy bench` and `canopy build`
//! commands and the `cargo bench` targets (`benches/`): one implementation of each, returning
//! plain reports (serializable, for `--json`) that the callers print.
//!
//! - [`harness`]: GPU timestamps around repeated runs ([`time_runs`]) and the work counters
//!   of one run ([`count_work`]).
//! - [`dispatch`]: the fixed cost of a dispatch and its barrier in a chain, the copy
//!   bandwidth, and the fraction of it a BVH traversal's node reads reach.
//! - [`prims`]: every GPU primitive over a range of sizes, against the copy bandwidth.
//! - [`structures`]: builds of every [`StructureKind`](crate::accel::StructureKind) over a
//!   mesh: times, work, memory, tree shape and SAH cost, traversal work ([`traversal`]), the
//!   driver's builder and CPU references beside.
//! - [`frames`]: whole frames of the renderer and ray casting on their own.
//! - [`instances`]: two levels: the top tree's rebuild over many instances, and rays through
//!   both levels beside the flattened scene.
//! - [`knn`]: point kd-tree builds and neighbour queries over seeded clouds.
//! - [`animation`]: skinning, Loop subdivision and sequences streamed from disk.
//! - [`display`]: the reports as text (`Display`), as the commands and targets print them.
//! - [`report`]: a GPU run's JSON against canopy's targets, as BENCHMARKS.md rows.
//!
//! GPU times need a GPU; the work counters (dispatches, barriers, bytes, SAH cost, nodes and
//! primitives per ray) are the same on every device, so they judge a change where none is at
//! hand (DESIGN.md rule 8).

pub mod animation;
pub mod dispatch;
pub mod display;
pub mod frames;
pub mod harness;
pub mod instances;
pub mod knn;
pub mod meshes;
pub mod prims;
pub mod report;
pub mod structures;
pub mod traversal;

pub use display::WorkTable;
pub use harness::{StageTime, Timing, count_work, time_runs};
pub use meshes::BenchMesh;
pub use structures::{BuildConfig, MeshBench, StructureReport};
pub use traversal::{RayKind, RaySets, TraversalReport};

use crate::vk::Context;
use std::path::Path;

/// Why a measurement failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// From the Vulkan layer or a builder.
    #[error(transparent)]
    Vk(#[from] crate::vk::Error),
    /// A mesh file could not be loaded.
    #[error(transparent)]
    Scene(#[from] crate::scene::SceneError),
    /// A tree read back failed its checks (a bug in its builder).
    #[error("invalid tree: {0}")]
    InvalidTree(String),
    /// The measurement cannot be made on this input.
    #[error("{0}")]
    Invalid(String),
}

/// The result of a measurement.
pub type Result<T> = std::result::Result<T, Error>;

/// The device a report was measured on.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DeviceInfo {
    /// Its name.
    pub name: String,
    /// Its driver.
    pub driver: String,
    /// Its subgroup size.
    pub subgroup_size: u32,
}

impl DeviceInfo {
    /// The device of `ctx`.
    pub fn of(ctx: &Context) -> Self {
        let caps = ctx.caps();
        Self {
            name: caps.name.clone(),
            driver: caps.driver.clone(),
            subgroup_size: caps.subgroup_size,
        }
    }
}

/// Writes `report` as pretty-printed JSON to `path`, making its folder if missing.
pub fn write_json(path: &Path, report: &impl serde::Serialize) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(report).map_err(std::io::Error::other)?;
    if let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder)?;
    }
    std::fs::write(path, text + "\n")
}
