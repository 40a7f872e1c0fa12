//! What the GPU bench targets share: the context (the device from `CANOPY_DEVICE`, else the
//! best one; no validation layer, which would distort the times), the test meshes, and where
//! the JSON goes.

#![allow(dead_code)] // each target uses part of this

use canopy::accel::StructureKind;
use canopy::bench::{BenchMesh, BuildConfig, DeviceInfo, MeshBench, WorkTable};
use canopy::vk::{Context, ContextOptions, Validation};
use std::path::PathBuf;

/// The context the targets measure on.
pub fn context() -> Context {
    let options = ContextOptions {
        validation: Validation::Off,
        ..ContextOptions::default()
    };
    let ctx = Context::new(&options).expect("a Vulkan device (see README: Running on a GPU)");
    let device = DeviceInfo::of(&ctx);
    println!(
        "canopy {} on {} ({}), subgroup size {}",
        env!("CARGO_PKG_VERSION"),
        device.name,
        device.driver,
        device.subgroup_size
    );
    ctx
}

/// A mesh of the repository's test data (`tests/data/meshes/NAME`).
pub fn test_mesh(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/meshes")
        .join(name)
}

/// Writes `report` as JSON to `target/tmp/bench-NAME.json` and says where.
pub fn write_json(name: &str, report: &impl serde::Serialize) {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("bench-{name}.json"));
    canopy::bench::write_json(&path, report).expect("the target directory is writable");
    println!("wrote {}", path.display());
}

/// Builds `kind` over every mesh under `config`, prints each report and the table of work
/// counters, and writes the JSON as `name`.
pub fn structures(
    ctx: &Context,
    name: &str,
    meshes: Vec<canopy::bench::Result<BenchMesh>>,
    kind: StructureKind,
    config: &BuildConfig,
) {
    let mut reports = Vec::new();
    for mesh in meshes {
        let mesh = mesh.expect("the mesh is made");
        let mut bench = MeshBench::new(ctx, &mesh, config.clone()).expect("rays are made");
        let report = bench.measure(kind).expect("the structure is built");
        print!("{report}");
        reports.push(report);
    }
    print!("\n{}", WorkTable(&reports));
    write_json(name, &reports);
}
