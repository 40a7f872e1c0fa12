//! `cargo bench --bench kdtree`: GPU SAH kd-tree builds of the default scene at 10K triangles
//! and of the small Stanford bunny in tests/data, per stage, with the work counters, the tree
//! against the CPU full-SAH kd-tree, and the traversal work of 128x128 camera rays and their
//! secondary rays through both (`canopy::bench::structures`, as `canopy bench kdtree`, whose
//! defaults are 170K and 1M triangles).

mod common;

use canopy::accel::StructureKind;
use canopy::bench::{BenchMesh, BuildConfig, MeshBench, WorkTable};

fn main() {
    let ctx = common::context();
    let config = BuildConfig {
        repeats: 3,
        trace_repeats: 3,
        ray_side: 128,
        ..BuildConfig::default()
    };
    let meshes = [
        BenchMesh::default_scene(&ctx, 10_000),
        BenchMesh::load(&ctx, &common::test_mesh("bunny_small.obj")),
    ];
    let mut reports = Vec::new();
    for mesh in meshes {
        let mesh = mesh.expect("the mesh is made");
        let mut bench = MeshBench::new(&ctx, &mesh, config.clone()).expect("rays are made");
        let report = bench
            .measure(StructureKind::KdTree)
            .expect("the kd-tree is built");
        print!("{report}");
        reports.push(report);
    }
    print!("\n{}", WorkTable(&reports));
    common::write_json("kdtree", &reports);
}
