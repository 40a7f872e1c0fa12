//! The 8-wide compressed BVH against its CPU reference: the GPU's collapse of the GPU's binary
//! tree equals the reference's collapse of the same tree node for node (up to layout), with
//! the tree's invariants (every triangle in one leaf, every decoded box containing what lies
//! below it, at most 4n/7 + 1 nodes) and its recorded stack need and height, at every size
//! from one triangle, on random, adversarial and real meshes, with one collapser reused build
//! after build, and in a folded grid; it costs one dispatch; and rays through it hit what
//! brute force and the binary tree hit.

use crate::common;

use canopy::accel::bvh::cpu::Lbvh;
use canopy::accel::bvh::lbvh::{BvhLayout, BvhQuality, LbvhParams, LbvhStructure};
use canopy::accel::bvh::wide::WIDE_STACK_SIZE;
use canopy::accel::bvh::wide::cpu::{
    check_wide_invariants, collapse, same_wide_tree, wide_node_capacity,
};
use canopy::accel::{RayStructure, submit_until_complete};
use canopy::bench::count_work;
use canopy::geom::aabb::triangle_bounds;
use canopy::geom::ray::Query;
use canopy::scene::Mesh;
use canopy::vk::Context;
use common::{
    DeviceMesh, Rng, assert_hits_match_brute_force, assert_valid, context, cube_grid, random_mesh,
    random_rays, rays_in_plane_z0, test_data, trace,
};

fn params(quality: BvhQuality, layout: BvhLayout) -> LbvhParams {
    LbvhParams {
        quality,
        layout,
        ..LbvhParams::default()
    }
}

/// Builds `mesh` with `structure` (wide layout) and checks its wide tree against the
/// reference's collapse of the binary tree it was made from.
fn check_collapse(ctx: &Context, structure: &mut LbvhStructure, mesh: &Mesh, label: &str) {
    let device = DeviceMesh::new(ctx, mesh);
    ctx.submit_and_wait(|rec| structure.record_build(rec, &device.input(), 0))
        .unwrap();
    assert_valid(ctx);
    let (nodes, leaf_primitives) = structure.bvh().download(ctx).unwrap();
    let expected = collapse(&Lbvh {
        nodes,
        leaf_primitives,
    });
    let wide = structure.wide_bvh().expect("a wide layout");
    let got = wide.download(ctx).unwrap();
    same_wide_tree(&got, &expected).unwrap_or_else(|e| panic!("{label}: GPU against CPU: {e}"));
    let boxes = triangle_bounds(&mesh.positions, &mesh.triangles);
    let stats = check_wide_invariants(&got, &boxes).unwrap_or_else(|e| panic!("{label}: {e}"));
    let n = mesh.triangle_count() as u32;
    assert_eq!(got.nodes.len(), expected.nodes.len(), "{label}");
    assert!(stats.nodes <= wide_node_capacity(n), "{label}");
    assert_eq!(
        (wide.stack_need(), wide.height()),
        (stats.stack_need, stats.height),
        "{label}: the stack need and height the collapse recorded"
    );
    if n > 1 {
        assert!(stats.mean_children >= 2.0, "{label}: {stats:?}");
    }
}

#[test]
fn collapse_equals_the_reference_at_every_size() {
    let ctx = context();
    let mut rng = Rng::new(61);
    for quality in BvhQuality::ALL {
        // One structure for every size: the queue and its tasks are left as found.
        let mut structure =
            LbvhStructure::new(&ctx, params(quality, BvhLayout::Wide), 6000).unwrap();
        for n in [1, 2, 3, 5, 8, 9, 16, 17, 100, 777, 6000, 2] {
            let mesh = random_mesh(&mut rng, n, 5.0, 0.7);
            check_collapse(
                &ctx,
                &mut structure,
                &mesh,
                &format!("{quality:?}, {n} random"),
            );
        }
    }
}

/// Meshes whose boxes are flat, coincide or have no extent: planes that quantize to a single
/// step, equal areas whose ties must be broken alike, and the real meshes of the test data.
#[test]
fn adversarial_and_real_meshes() {
    let ctx = context();
    let mut rng = Rng::new(62);
    let mut flat = random_mesh(&mut rng, 3000, 3.0, 0.5);
    flat.positions.iter_mut().for_each(|p| p[2] = 0.0);
    let mut same = random_mesh(&mut rng, 1, 1.0, 1.0);
    same.triangles = vec![same.triangles[0]; 700];
    let mut points = random_mesh(&mut rng, 500, 2.0, 0.0);
    points.positions.iter_mut().for_each(|p| p[1] = 1e6);
    let (cubes, _) = cube_grid();
    let mut meshes = vec![
        (flat, "flat".to_string()),
        (same, "700 equal triangles".into()),
        (points, "zero-extent triangles far off".into()),
        (cubes, "cube grid".into()),
    ];
    for name in ["bunny_small.obj", "gear.obj", "capsule.obj"] {
        let path = test_data(&format!("meshes/{name}"));
        meshes.push((Mesh::load(&path).unwrap(), name.into()));
    }
    for quality in BvhQuality::ALL {
        let capacity = meshes
            .iter()
            .map(|(m, _)| m.triangle_count())
            .max()
            .unwrap();
        let mut structure =
            LbvhStructure::new(&ctx, params(quality, BvhLayout::Wide), capacity as u32).unwrap();
        for (mesh, label) in &meshes {
            check_collapse(&ctx, &mut structure, mesh, &format!("{quality:?}, {label}"));
        }
    }
}

/// Above the default scene's size (250K triangles), under a pretended limit of 64 workgroups
/// per dimension: the collapse's 2,679 workgroups run in a folded grid, padding included.
#[test]
fn collapse_of_a_large_mesh_in_a_folded_grid() {
    let ctx = common::folding_context();
    let mesh = random_mesh(&mut Rng::new(63), 300_000, 40.0, 0.3);
    let mut structure = LbvhStructure::new(
        &ctx,
        params(BvhQuality::Fast, BvhLayout::Wide),
        mesh.triangle_count() as u32,
    )
    .unwrap();
    check_collapse(&ctx, &mut structure, &mesh, "300K random");
}

#[test]
fn the_collapse_is_one_dispatch() {
    let ctx = context();
    let mesh = Mesh::load(&test_data("meshes/gear.obj")).unwrap();
    let device = DeviceMesh::new(&ctx, &mesh);
    let [binary, wide] = [BvhLayout::Binary, BvhLayout::Wide].map(|layout| {
        let mut structure =
            LbvhStructure::new(&ctx, params(BvhQuality::Fast, layout), device.count).unwrap();
        count_work(&ctx, |rec| structure.record_build(rec, &device.input(), 0)).unwrap()
    });
    assert_eq!(
        (wide.dispatches, wide.barriers),
        (binary.dispatches + 1, binary.barriers + 1)
    );
}

/// Closest and any hits through the wide tree equal brute force's, and the binary tree's.
#[test]
fn rays_through_the_wide_tree_hit_what_brute_force_hits() {
    let ctx = context();
    let mut rng = Rng::new(64);
    let mut flat = random_mesh(&mut rng, 2000, 3.0, 0.5);
    flat.positions.iter_mut().for_each(|p| p[2] = 0.0);
    let (cubes, along_faces) = cube_grid();
    let bunny = Mesh::load(&test_data("meshes/bunny_small.obj")).unwrap();
    let cases = [
        (
            random_mesh(&mut rng, 1, 1.0, 1.0),
            Vec::new(),
            "one triangle",
        ),
        (
            random_mesh(&mut rng, 5000, 3.0, 0.8),
            Vec::new(),
            "random 5000",
        ),
        (flat, rays_in_plane_z0(300), "flat"),
        (cubes, along_faces, "cubes"),
        (bunny, Vec::new(), "bunny_small"),
    ];
    for (mesh, extra, label) in cases {
        let mut rays = random_rays(&mut Rng::new(65), &mesh, 2000);
        rays.extend(extra);
        let device = DeviceMesh::new(&ctx, &mesh);
        for quality in BvhQuality::ALL {
            let label = format!("{label}, {quality:?}");
            let mut structure =
                LbvhStructure::new(&ctx, params(quality, BvhLayout::Wide), device.count).unwrap();
            ctx.submit_and_wait(|rec| structure.record_build(rec, &device.input(), 0))
                .unwrap();
            let wide = structure.wide_bvh().unwrap();
            assert!(wide.fits_traversal_stack(), "{label}");
            let closest = trace(&ctx, wide, &rays, Query::Closest);
            let any = trace(&ctx, wide, &rays, Query::Any);
            assert_hits_match_brute_force(&mesh, &rays, &closest, &any, &label);
            let binary = trace(&ctx, structure.bvh(), &rays, Query::Closest);
            // Overlapping triangles of the flat mesh are hit within an ulp of each other:
            // which comes first depends on the order they are tested in.
            for (i, (w, b)) in closest.iter().zip(&binary).enumerate() {
                assert!(
                    w.triangle == b.triangle || (w.t - b.t).abs() <= 1e-6 * w.t.abs().max(1.0),
                    "{label}: ray {i}: {w:?} through the wide tree, {b:?} through the binary"
                );
            }
        }
    }
}

/// Nested triangles of growing size: the high-quality binary tree is a chain too tall for
/// binary traversal, but the wide tree made from it needs one stack entry per level (seven
/// leaves and the rest of the chain), so the structure keeps it and traces it right.
#[test]
fn a_chain_too_tall_for_binary_traversal_is_traced_wide() {
    let ctx = context();
    let mesh = common::nested_triangles(3000);
    let device = DeviceMesh::new(&ctx, &mesh);
    let mut structure = LbvhStructure::new(
        &ctx,
        params(BvhQuality::High, BvhLayout::Wide),
        device.count,
    )
    .unwrap();
    let input = device.input();
    submit_until_complete(&ctx, &mut structure, |rec, s| {
        s.record_build(rec, &input, 0)
    })
    .unwrap();
    assert!(!structure.bvh().fits_traversal_stack());
    let wide = structure.wide_bvh().expect("the wide tree is kept");
    assert!(wide.stack_need() <= WIDE_STACK_SIZE);
    check_collapse(&ctx, &mut structure, &mesh, "nested");
    let wide = structure.wide_bvh().unwrap();
    let rays = random_rays(&mut Rng::new(66), &mesh, 2000);
    let closest = trace(&ctx, wide, &rays, Query::Closest);
    let any = trace(&ctx, wide, &rays, Query::Any);
    assert_hits_match_brute_force(&mesh, &rays, &closest, &any, "nested, wide");
}
