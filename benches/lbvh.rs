//! `cargo bench --bench lbvh`: LBVH builds of the default scene at 10K and 40K triangles and of
//! a 10K-triangle soup, per stage, beside the driver's own builder where the device has one,
//! with the work counters and the traversal work of 128x128 camera rays and their secondary
//! rays (`canopy::bench::structures`, as `canopy bench lbvh`, whose defaults go to 4M).

mod common;

use canopy::accel::StructureKind;
use canopy::bench::{BenchMesh, BuildConfig};

fn main() {
    let ctx = common::context();
    let config = BuildConfig {
        repeats: 5,
        trace_repeats: 5,
        ray_side: 128,
        reference_up_to: 40_000,
        ..BuildConfig::default()
    };
    let meshes = vec![
        BenchMesh::default_scene(&ctx, 10_000),
        BenchMesh::default_scene(&ctx, 40_000),
        BenchMesh::soup(&ctx, 10_000),
    ];
    common::structures(&ctx, "lbvh", meshes, StructureKind::Lbvh, &config);
}
