//! The measurements of `canopy::bench` under the validation layer: every structure built over
//! a small mesh reports work counters, memory and tree shapes that agree with each other, and
//! the same rays through each; a point cloud builds an octree and refuses the triangle
//! structures with a clear error.

use crate::common;

use canopy::accel::StructureKind;
use canopy::bench::{BenchMesh, BuildConfig, MeshBench, RayKind, StructureReport};
use canopy::scene::Mesh;
use common::{Rng, assert_valid, context, random_mesh};

/// One timed run, 24x24 camera rays, CPU references: small enough for lavapipe.
fn quick() -> BuildConfig {
    BuildConfig {
        repeats: 1,
        trace_repeats: 1,
        ray_side: 24,
        ..BuildConfig::default()
    }
}

fn check_common(r: &StructureReport) {
    let w = &r.work;
    let with_work = w
        .dispatches_with_work
        .expect("the census held every dispatch");
    assert!(w.dispatches > 0 && with_work <= w.dispatches, "{w:?}");
    assert!(w.indirect_dispatches <= w.dispatches, "{w:?}");
    assert!(w.barriers > 0, "{w:?}");
    let m = &r.memory;
    assert!(m.tree_bytes > 0 && m.scratch_bytes > 0, "{m:?}");
    assert!(m.peak_bytes >= m.tree_bytes + m.scratch_bytes, "{m:?}");
    assert!(r.build.median_ms > 0.0 && r.build.runs == 1);
    assert!(
        r.tree.nodes >= r.tree.leaves && r.tree.leaves > 0,
        "{:?}",
        r.tree
    );
}

#[test]
fn every_structure_is_measured_and_traced_with_the_same_rays() {
    let ctx = context();
    let mesh = random_mesh(&mut Rng::new(7), 600, 1.0, 0.15);
    let mesh = BenchMesh::from_mesh(&ctx, "random", mesh).unwrap();
    let mut bench = MeshBench::new(&ctx, &mesh, quick()).unwrap();
    let reports: Vec<StructureReport> = StructureKind::ALL
        .into_iter()
        .map(|kind| bench.measure(kind).unwrap())
        .collect();
    for r in &reports {
        check_common(r);
        assert_eq!(r.triangles, 600);
    }
    let [lbvh, kdtree, octree, bih, grid, pointkd] = &reports[..] else {
        unreachable!()
    };
    // LBVH: a binary tree of one triangle per leaf; its reference is the CPU SAH BVH.
    assert_eq!(lbvh.tree.leaves, 600);
    assert_eq!(lbvh.tree.nodes, 2 * 600 - 1);
    let reference = lbvh.reference.as_ref().unwrap();
    assert!(reference.sah_ratio.unwrap() >= 0.99, "{reference:?}");
    // kd-tree: built level by level up to its depth limit, most levels dispatching nothing.
    assert!(kdtree.work.dispatches_with_work.unwrap() < kdtree.work.dispatches);
    assert!(kdtree.tree.references >= 600);
    assert!(kdtree.reference.as_ref().unwrap().sah_ratio.unwrap() < 1.5);
    // BIH: every triangle in one leaf, built round by round (the rounds past its depth
    // dispatch nothing), its tree the CPU reference's up to rounding of the SAH costs.
    assert_eq!(bih.tree.references, 600);
    assert!(bih.work.dispatches_with_work.unwrap() < bih.work.dispatches);
    let bih_reference = bih.reference.as_ref().unwrap();
    assert!(
        bih_reference.sah_ratio.unwrap() <= 1.05,
        "{bih_reference:?}"
    );
    assert!(!bih.traversal.is_empty());
    // The point kd-tree over the vertices: every vertex in one leaf, no rays.
    assert_eq!((pointkd.primitives, pointkd.tree.references), (1800, 1800));
    assert!(pointkd.traversal.is_empty() && pointkd.tree.leaves > 1800 / 32);
    // The octree is built over the vertices and traces nothing.
    assert_eq!(octree.primitives, 1800);
    assert!(octree.traversal.is_empty() && octree.tree.sah_cost.is_none());
    assert_eq!(
        octree.tree.nodes_per_level.iter().sum::<u64>(),
        octree.tree.nodes
    );

    // Screen grid: bins of the camera rays' view; its camera rays are cast through the grid,
    // the others traced through its LBVH.
    assert!(
        grid.tree.references >= 300 && grid.tree.sah_cost.is_none(),
        "{:?}",
        grid.tree
    );
    assert_eq!(grid.traversal.len(), 3);
    for (a, b) in lbvh.traversal.iter().zip(&grid.traversal) {
        assert_eq!((a.rays, a.work.rays, a.hits), (b.rays, b.work.rays, b.hits));
    }
    assert!(grid.traversal[0].work.mean_primitives > 0.0);

    // The same rays through the LBVH, the GPU kd-tree and the CPU kd-tree: closest hits are
    // exact, so every count of rays and hits agrees.
    let cpu_kd = &kdtree.reference.as_ref().unwrap().traversal;
    for traversals in [&kdtree.traversal, cpu_kd] {
        assert_eq!(traversals.len(), 3);
        for (a, b) in lbvh.traversal.iter().zip(traversals.iter()) {
            assert_eq!((a.rays, a.work.rays), (b.rays, b.work.rays));
            if a.rays != RayKind::Shadow {
                assert_eq!(a.hits, b.hits, "{:?} rays", a.rays);
            }
        }
    }
    let camera = &lbvh.traversal[0];
    assert_eq!((camera.rays, camera.work.rays), (RayKind::Camera, 24 * 24));
    assert!(camera.hits > 0 && camera.work.mean_nodes >= 1.0);
    assert!(camera.work.max_primitives as f64 >= camera.work.mean_primitives);
    for t in lbvh.traversal.iter().chain(&kdtree.traversal) {
        assert!(t.work.rays > 0, "{t:?}");
        assert!(
            t.work.mean_nodes > 0.0 && t.work.mean_primitives > 0.0,
            "{t:?}"
        );
        assert!(t.time.as_ref().unwrap().median_ms > 0.0);
    }
    assert_valid(&ctx);
}

#[test]
fn a_point_cloud_builds_an_octree_and_refuses_triangle_structures() {
    let ctx = context();
    let points = Mesh {
        positions: (0..500)
            .map(|i| [(i % 10) as f32, (i / 10 % 10) as f32, (i / 100) as f32])
            .collect(),
        ..Mesh::default()
    };
    let mesh = BenchMesh::from_mesh(&ctx, "grid points", points).unwrap();
    let mut bench = MeshBench::new(&ctx, &mesh, quick()).unwrap();
    let octree = bench.measure(StructureKind::Octree).unwrap();
    check_common(&octree);
    assert_eq!(octree.tree.references, 500);
    let error = bench
        .measure(StructureKind::Lbvh)
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        error,
        "grid points has no triangles: the lbvh is built over triangles"
    );
    assert_valid(&ctx);
}

#[test]
fn structure_names_parse_back() {
    for kind in StructureKind::ALL {
        assert_eq!(kind.name().parse::<StructureKind>(), Ok(kind));
        assert_eq!(
            kind.to_string().to_uppercase().parse::<StructureKind>(),
            Ok(kind)
        );
    }
    assert_eq!(
        "kd-tree".parse::<StructureKind>(),
        Ok(StructureKind::KdTree)
    );
    assert_eq!(
        "bvh".parse::<StructureKind>(),
        Err("'bvh': expected one of lbvh, kdtree, octree, bih, grid, pointkd".into())
    );
}
