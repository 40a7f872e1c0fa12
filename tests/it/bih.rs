//! The bounding interval hierarchy: the CPU reference (the oracle the GPU builder will be
//! checked against) and the GPU traversal of its trees. The binned-SAH builder's invariants,
//! the CPU and the GPU traversals against brute force on random soups, a real mesh and the
//! adversarial scenes of the kd-tree tests, the leaf-size bound, that the traversal does
//! a small part of brute force's work, and that clip nodes cut it further where the scene box
//! is mostly empty. The GPU builder's trees are checked against the CPU's with either of its
//! stages doing most of the work (the large-node threshold as a parameter). tests/trace_work.rs compares the GPU's work counts
//! with the CPU traversal's.

use crate::common;

use canopy::accel::bih::build::BihStructure;
use canopy::accel::bih::cpu::{build_bih, check_bih, trace_bih};
use canopy::accel::bih::trace::BihTreeGpu;
use canopy::accel::bih::{BihParams, BihTree, MAX_SMALL_SUBTREE, max_nodes};
use canopy::accel::{RayStructure, submit_until_complete};
use canopy::geom::ray::{Hit, Query, Ray, RayWork};
use canopy::render::Camera;
use canopy::scene::{Mesh, shapes};
use canopy::vk::Context;
use common::{
    DeviceMesh, Rng, assert_hits_match_brute_force, assert_valid, context, cube_grid,
    folding_context, random_mesh, random_rays, rays_in_plane_z0, trace,
};

/// Builds `mesh`'s BIH with `params`, checks it, traces random rays and `extra_rays` through it
/// on the CPU and (uploaded) on the GPU against brute force, and returns the tree and the work
/// of the CPU's closest-hit traces.
fn check(
    ctx: &Context,
    mesh: &Mesh,
    extra_rays: &[Ray],
    params: &BihParams,
    label: &str,
) -> (BihTree, RayWork) {
    let tree = build_bih(&mesh.positions, &mesh.triangles, params);
    let stats = check_bih(&mesh.positions, &mesh.triangles, &tree, params)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(stats.depth < 64, "{label}: depth {}", stats.depth);
    if mesh.triangles.is_empty() {
        return (tree, RayWork::default());
    }
    let mut rays = random_rays(&mut Rng::new(mesh.triangle_count() as u64), mesh, 2000);
    rays.extend_from_slice(extra_rays);
    let trace_cpu = |query| -> (Vec<Hit>, RayWork) {
        let mut total = RayWork::default();
        let hits = rays
            .iter()
            .map(|ray| {
                let (hit, work) = trace_bih(&mesh.positions, &mesh.triangles, &tree, ray, query);
                total.nodes_visited += work.nodes_visited;
                total.primitives_tested += work.primitives_tested;
                hit
            })
            .collect();
        (hits, total)
    };
    let (closest, work) = trace_cpu(Query::Closest);
    let (any, _) = trace_cpu(Query::Any);
    assert_hits_match_brute_force(mesh, &rays, &closest, &any, label);
    let device = DeviceMesh::new(ctx, mesh);
    let gpu = BihTreeGpu::upload(ctx, &tree).unwrap();
    let input = device.input();
    let over = gpu.over(&input);
    let [closest, any] = [Query::Closest, Query::Any].map(|query| trace(ctx, &over, &rays, query));
    assert_hits_match_brute_force(mesh, &rays, &closest, &any, &format!("{label} (GPU)"));
    (tree, work)
}

#[test]
fn random_and_real_meshes() {
    let ctx = context();
    let mut rng = Rng::new(41);
    let params = BihParams::default();
    for n in [1, 2, 3, 10, 1000, 20_000] {
        let mesh = random_mesh(&mut rng, n, 3.0, 0.05);
        let (tree, work) = check(&ctx, &mesh, &[], &params, &format!("random {n}"));
        if n == 20_000 {
            // 2,000+ rays: brute force would test 20,000 triangles per ray.
            let per_ray = work.primitives_tested as f64 / 2000.0;
            assert!(per_ray < 200.0, "{per_ray} triangles tested per ray");
            assert!(tree.nodes.len() > 2 * n / params.max_leaf as usize / 2);
        }
    }
    let path = common::test_data("meshes/bunny_small.obj");
    check(
        &ctx,
        &Mesh::load(&path).unwrap(),
        &[],
        &params,
        "bunny_small",
    );
}

#[test]
fn adversarial_scenes() {
    let ctx = context();
    let mut rng = Rng::new(42);
    let params = BihParams::default();
    // All triangles in the plane z = 0, with rays lying in that plane.
    let mut flat = random_mesh(&mut rng, 2000, 3.0, 0.5);
    flat.positions.iter_mut().for_each(|p| p[2] = 0.0);
    check(&ctx, &flat, &rays_in_plane_z0(200), &params, "one plane");
    // Every triangle twice: coincident centroids.
    let mut doubled = random_mesh(&mut rng, 500, 2.0, 0.5);
    let copies = doubled.triangles.clone();
    doubled.triangles.extend(copies);
    check(&ctx, &doubled, &[], &params, "coincident triangles");
    // One huge triangle among tiny ones.
    let mut huge = random_mesh(&mut rng, 1000, 1.0, 0.01);
    huge.positions[0] = [-100.0, -100.0, 0.3];
    huge.positions[1] = [100.0, -100.0, -0.3];
    huge.positions[2] = [0.0, 100.0, 0.0];
    check(&ctx, &huge, &[], &params, "one huge among tiny");
    // Axis-aligned cubes on a grid: faces on every candidate plane, rays along the faces.
    let (cubes, along_faces) = cube_grid();
    check(&ctx, &cubes, &along_faces, &params, "cubes");
}

#[test]
fn equal_centroids_make_one_leaf_and_leaves_respect_the_size_bound() {
    let ctx = context();
    // 300 copies of one triangle: no plane separates them, so the root stays a leaf.
    let mut rng = Rng::new(43);
    let one = random_mesh(&mut rng, 1, 1.0, 0.5);
    let mut copies = one.clone();
    copies.triangles = vec![one.triangles[0]; 300];
    let (tree, _) = check(&ctx, &copies, &[], &BihParams::default(), "equal centroids");
    assert_eq!(tree.nodes.len(), 1);
    assert_eq!(tree.nodes[0].primitive_count(), 300);
    // Elsewhere no leaf is larger than max_leaf unless the SAH chose it; with costly
    // traversal steps leaves grow, with cheap ones they stay at the bound.
    let mesh = random_mesh(&mut rng, 5000, 3.0, 0.05);
    for max_leaf in [1, 4, 16] {
        let cheap = BihParams {
            max_leaf,
            traversal_cost: 0.01,
            ..BihParams::default()
        };
        let tree = build_bih(&mesh.positions, &mesh.triangles, &cheap);
        let stats = check_bih(&mesh.positions, &mesh.triangles, &tree, &cheap).unwrap();
        assert!(
            stats.max_leaf_size <= max_leaf as usize,
            "max_leaf {max_leaf}: a leaf of {}",
            stats.max_leaf_size
        );
    }
}

/// Camera rays of a `side` x `side` image framing `mesh`, as `canopy bench` makes them.
fn camera_rays(mesh: &Mesh, side: u32) -> Vec<Ray> {
    let (lo, hi) = mesh.bounds().unwrap();
    let (lo, hi) = (glam::Vec3::from(lo), glam::Vec3::from(hi));
    let camera = Camera::orbit((lo + hi) * 0.5, (hi - lo).length() * 1.1, 30.0, 20.0, 45.0);
    (0..side * side)
        .map(|i| camera.primary_ray(i % side, i / side, side, side))
        .collect()
}

#[test]
fn clip_nodes_cut_the_work_of_camera_rays_and_respect_the_node_bound() {
    // A mesh on a wide ground square: a region mostly empty above the ground.
    let ctx = context();
    let mut mesh = Mesh::load(&common::test_data("meshes/bunny_small.obj")).unwrap();
    mesh.fit_unit_sphere();
    let floor = mesh.bounds().unwrap().0[1];
    let rays = camera_rays(&mesh, 64);
    mesh.append(&shapes::ground_square([0.0, floor, 0.0], 4.0));
    let mut tested = Vec::new();
    for clip_nodes in [false, true] {
        let params = BihParams {
            clip_nodes,
            ..BihParams::default()
        };
        let (tree, _) = check(&ctx, &mesh, &rays, &params, &format!("clips {clip_nodes}"));
        let stats = check_bih(&mesh.positions, &mesh.triangles, &tree, &params).unwrap();
        assert_eq!(stats.clips > 0, clip_nodes, "{stats:?}");
        let bound = max_nodes(mesh.triangle_count() as u32, params.max_leaf);
        assert!(stats.nodes as u64 <= bound, "{stats:?} over {bound}");
        let work = rays.iter().fold(0, |sum, ray| {
            let (_, work) = trace_bih(&mesh.positions, &mesh.triangles, &tree, ray, Query::Closest);
            sum + work.primitives_tested as u64
        });
        tested.push(work as f64 / rays.len() as f64);
        // The GPU builder makes the same clip nodes.
        let gpu = gpu_build(&ctx, &mesh, params, &format!("clips {clip_nodes}"));
        let gpu_stats = check_bih(&mesh.positions, &mesh.triangles, &gpu, &params).unwrap();
        assert_eq!(gpu_stats.clips, stats.clips);
        assert_eq!(gpu_stats.nodes, stats.nodes);
    }
    // Measured: 20 and 9 triangles per camera ray.
    assert!(
        tested[1] < tested[0] * 0.6,
        "triangles per camera ray: {tested:?} without and with clip nodes"
    );
}

#[test]
fn sah_cost_falls_with_more_bins() {
    let mesh = random_mesh(&mut Rng::new(44), 20_000, 3.0, 0.05);
    let cost = |bins| {
        let params = BihParams {
            bins,
            ..BihParams::default()
        };
        let tree = build_bih(&mesh.positions, &mesh.triangles, &params);
        check_bih(&mesh.positions, &mesh.triangles, &tree, &params)
            .unwrap()
            .sah_cost
    };
    let (two, thirty_two) = (cost(2), cost(32));
    assert!(thirty_two < two, "32 bins {thirty_two}, 2 bins {two}");
}

#[test]
fn bad_parameters_are_named() {
    let bins = BihParams {
        bins: 1,
        ..BihParams::default()
    };
    assert!(bins.check().unwrap_err().contains("bins"));
    let leaf = BihParams {
        max_leaf: 0,
        ..BihParams::default()
    };
    assert!(leaf.check().unwrap_err().contains("leaf size"));
    for large_node in [0, MAX_SMALL_SUBTREE + 1] {
        let stage = BihParams {
            large_node,
            ..BihParams::default()
        };
        assert!(stage.check().unwrap_err().contains("large-node threshold"));
    }
    assert!(BihParams::default().check().is_ok());
}

/// Builds `mesh`'s BIH on the GPU with `params` (on `ctx`), checks it against the mesh, and
/// compares it with the CPU reference built with the same parameters: SAH cost within 5%.
/// Returns the tree.
fn gpu_build(ctx: &Context, mesh: &Mesh, params: BihParams, label: &str) -> BihTree {
    let device = DeviceMesh::new(ctx, mesh);
    let mut built = BihStructure::new(ctx, params, device.count.max(1)).unwrap();
    let input = device.input();
    submit_until_complete(ctx, &mut built, |rec, built| {
        built.record_build(rec, &input, 0)
    })
    .unwrap();
    assert_valid(ctx);
    let tree = built.download(ctx).unwrap();
    let gpu = check_bih(&mesh.positions, &mesh.triangles, &tree, &params)
        .unwrap_or_else(|e| panic!("{label} (GPU build): {e}"));
    let reference = build_bih(&mesh.positions, &mesh.triangles, &params);
    let cpu = check_bih(&mesh.positions, &mesh.triangles, &reference, &params).unwrap();
    assert!(
        gpu.sah_cost <= cpu.sah_cost * 1.05 + 1e-9,
        "{label}: GPU SAH {} against the CPU's {}",
        gpu.sah_cost,
        cpu.sah_cost
    );
    if !mesh.triangles.is_empty() {
        // Brute force is the reference: fewer rays over the largest meshes.
        let count = if mesh.triangles.len() > 50_000 {
            100
        } else {
            1000
        };
        let rays = random_rays(&mut Rng::new(7), mesh, count);
        let over = built.tree().over(&input);
        let [closest, any] =
            [Query::Closest, Query::Any].map(|query| trace(ctx, &over, &rays, query));
        assert_hits_match_brute_force(mesh, &rays, &closest, &any, &format!("{label} (GPU build)"));
    }
    tree
}

#[test]
fn gpu_builds_match_the_reference() {
    let ctx = context();
    let mut rng = Rng::new(45);
    for n in [0, 1, 2, 3, 255, 256, 257, 5000] {
        let mesh = random_mesh(&mut rng, n, 3.0, 0.05);
        gpu_build(&ctx, &mesh, BihParams::default(), &format!("random {n}"));
    }
    let bunny = Mesh::load(&common::test_data("meshes/bunny_small.obj")).unwrap();
    gpu_build(&ctx, &bunny, BihParams::default(), "bunny_small");
    // The adversarial scenes: one plane, every centroid equal, cubes on a grid.
    let mut flat = random_mesh(&mut rng, 2000, 3.0, 0.5);
    flat.positions.iter_mut().for_each(|p| p[2] = 0.0);
    gpu_build(&ctx, &flat, BihParams::default(), "one plane");
    let one = random_mesh(&mut rng, 1, 1.0, 0.5);
    let mut copies = one.clone();
    copies.triangles = vec![one.triangles[0]; 300];
    let tree = gpu_build(&ctx, &copies, BihParams::default(), "equal centroids");
    assert_eq!(tree.nodes.len(), 1);
    let (cubes, _) = cube_grid();
    gpu_build(&ctx, &cubes, BihParams::default(), "cubes");
    // Leaf sizes, bins and the depth limit as parameters.
    let mesh = random_mesh(&mut rng, 3000, 3.0, 0.05);
    for params in [
        BihParams {
            max_leaf: 1,
            traversal_cost: 0.01,
            ..BihParams::default()
        },
        BihParams {
            bins: 8,
            ..BihParams::default()
        },
        BihParams {
            max_depth: 3,
            ..BihParams::default()
        },
        // Every node of more than one primitive in the large-node stage.
        BihParams {
            large_node: 1,
            ..BihParams::default()
        },
        // Leaves made by the large-node stage.
        BihParams {
            max_leaf: 600,
            ..BihParams::default()
        },
        BihParams {
            clip_nodes: false,
            ..BihParams::default()
        },
    ] {
        let tree = gpu_build(&ctx, &mesh, params, &format!("{params:?}"));
        let stats = check_bih(&mesh.positions, &mesh.triangles, &tree, &params).unwrap();
        assert!(
            stats.depth <= params.max_depth,
            "{params:?}: depth {}",
            stats.depth
        );
    }
}

#[test]
fn gpu_build_with_folded_grids_at_the_default_scene_size() {
    // The default scene's size (254,114 triangles) with every dispatch grid folded under a
    // limit of 64 workgroups per dimension.
    let ctx = folding_context();
    let mesh = random_mesh(&mut Rng::new(46), 254_114, 10.0, 0.05);
    let tree = gpu_build(&ctx, &mesh, BihParams::default(), "254,114 random, folded");
    assert!(tree.nodes.len() > 254_114 / 4);
}
