//! `cargo bench --bench kdtree`: GPU SAH kd-tree builds of the default scene at 10K triangles
//! and of the small Stanford bunny in tests/data, per stage, with the work counters, the tree
//! against the CPU full-SAH kd-tree, and the traversal work of 128x128 camera rays and their
//! secondary rays through both (`canopy::bench::structures`, as `canopy bench kdtree`, whose
//! defaults are 170K and 1M triangles).

mod common;

use canopy::accel::StructureKind;
use canopy::bench::{BenchMesh, BuildConfig};

fn main() {
    let ctx = common::context();
    let config = BuildConfig {
        repeats: 3,
        trace_repeats: 3,
        ray_side: 128,
        ..BuildConfig::default()
    };
    let meshes = vec![
        BenchMesh::default_scene(&ctx, 10_000),
        BenchMesh::load(&ctx, &common::test_mesh("bunny_small.obj")),
    ];
    common::structures(&ctx, "kdtree", meshes, StructureKind::KdTree, &config);
}
