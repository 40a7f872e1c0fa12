//! BVH refit: after the triangles move, the refitted boxes equal the CPU's over the same
//! topology and pass the tree invariants, rays through the binary and the 8-wide tree hit
//! what brute force hits over the moved triangles, the SAH drift reads 0 for a refit in place
//! and grows with the movement, and a refit over another triangle count is refused.

use crate::common;

use canopy::accel::bvh::cpu::check_invariants;
use canopy::accel::bvh::lbvh::{BvhLayout, BvhQuality, LbvhParams, LbvhStructure};
use canopy::accel::bvh::refit::{refit_on_cpu, sah_drift};
use canopy::accel::{RayStructure, submit_until_complete};
use canopy::geom::aabb::triangle_bounds;
use canopy::geom::ray::Query;
use canopy::scene::Mesh;
use common::{
    DeviceMesh, Rng, assert_hits_match_brute_force, assert_valid, context, lbvh_over, random_mesh,
    random_rays, trace,
};

/// `mesh` moved: a wave along y over x, and each vertex shaken by up to `shake`.
fn moved(mesh: &Mesh, rng: &mut Rng, wave: f32, shake: f32) -> Mesh {
    let positions = mesh
        .positions
        .iter()
        .map(|p| {
            let lift = (p[0] * 0.7).sin() * wave;
            std::array::from_fn(|a| {
                p[a] + rng.f32_in(-shake, shake) + if a == 1 { lift } else { 0.0 }
            })
        })
        .collect();
    Mesh {
        positions,
        ..mesh.clone()
    }
}

#[test]
fn refitted_trees_hit_what_brute_force_hits_after_the_triangles_move() {
    let ctx = context();
    let mut rng = Rng::new(91);
    for quality in BvhQuality::ALL {
        for layout in [BvhLayout::Binary, BvhLayout::Wide] {
            for n in [1, 2, 3, 100, 5000] {
                let label = format!("{quality:?}, {layout:?}, {n} triangles");
                let mesh = random_mesh(&mut rng, n, 5.0, 0.5);
                let after = moved(&mesh, &mut rng, 1.5, 0.3);
                let (old, new) = (DeviceMesh::new(&ctx, &mesh), DeviceMesh::new(&ctx, &after));
                let params = LbvhParams {
                    quality,
                    layout,
                    ..LbvhParams::default()
                };
                let mut structure = lbvh_over(&ctx, params, &old);
                let (mut expected, leaves) = structure.bvh().download(&ctx).unwrap();
                submit_until_complete(&ctx, &mut structure, |rec, s| {
                    s.record_refit(rec, &new.input())
                })
                .unwrap();
                assert_valid(&ctx);
                let (nodes, refitted_leaves) = structure.bvh().download(&ctx).unwrap();
                assert_eq!(refitted_leaves, leaves, "{label}: the leaves stay");
                refit_on_cpu(&mut expected, &leaves, &after.positions, &after.triangles);
                assert_eq!(nodes, expected, "{label}: the refitted nodes");
                let boxes = triangle_bounds(&after.positions, &after.triangles);
                check_invariants(&nodes, &leaves, &boxes)
                    .unwrap_or_else(|e| panic!("{label}: {e}"));
                let rays = random_rays(&mut rng, &after, 400);
                let traversable = structure.traversable(&new.input());
                let closest = trace(&ctx, &*traversable, &rays, Query::Closest);
                let any = trace(&ctx, &*traversable, &rays, Query::Any);
                assert_hits_match_brute_force(&after, &rays, &closest, &any, &label);
            }
        }
    }
}

/// Under a pretended limit of 64 workgroups per dimension, both refit dispatches fold into 2D
/// grids (more than 64 workgroups of 256 triangles) and the boxes are still the CPU's.
#[test]
fn folded_grids_refit_like_the_cpu() {
    let ctx = common::folding_context();
    let mut rng = Rng::new(94);
    let n = 20_000;
    assert!(n / 256 > common::FOLDING_LIMIT as usize);
    let mesh = random_mesh(&mut rng, n, 20.0, 0.3);
    let after = moved(&mesh, &mut rng, 2.0, 0.2);
    let (old, new) = (DeviceMesh::new(&ctx, &mesh), DeviceMesh::new(&ctx, &after));
    let mut structure = lbvh_over(&ctx, LbvhParams::default(), &old);
    let (mut expected, leaves) = structure.bvh().download(&ctx).unwrap();
    ctx.submit_and_wait(|rec| structure.record_refit(rec, &new.input()))
        .unwrap();
    assert_valid(&ctx);
    let (nodes, _) = structure.bvh().download(&ctx).unwrap();
    refit_on_cpu(&mut expected, &leaves, &after.positions, &after.triangles);
    assert_eq!(nodes, expected);
}

#[test]
fn the_sah_drift_is_zero_in_place_and_grows_as_the_triangles_move() {
    let ctx = context();
    let mut rng = Rng::new(92);
    let mesh = random_mesh(&mut rng, 4000, 5.0, 0.3);
    let drift = |after: &Mesh| {
        let device = DeviceMesh::new(&ctx, after);
        let mut refitted = lbvh_over(&ctx, LbvhParams::default(), &DeviceMesh::new(&ctx, &mesh));
        ctx.submit_and_wait(|rec| refitted.record_refit(rec, &device.input()))
            .unwrap();
        let fresh = lbvh_over(&ctx, LbvhParams::default(), &device);
        let boxes = triangle_bounds(&after.positions, &after.triangles);
        let stats = |s: &LbvhStructure| {
            let (nodes, leaves) = s.bvh().download(&ctx).unwrap();
            check_invariants(&nodes, &leaves, &boxes).unwrap()
        };
        sah_drift(&stats(&refitted), &stats(&fresh))
    };
    assert_eq!(drift(&mesh), 0.0, "a refit in place");
    let slightly = drift(&moved(&mesh, &mut rng, 0.0, 0.05));
    // Every triangle thrown to a random place: the old order means nothing.
    let mut scattered = mesh.clone();
    for t in scattered.positions.chunks_mut(3) {
        let offset: [f32; 3] = std::array::from_fn(|_| rng.f32_in(-5.0, 5.0));
        let centre = t[0];
        for p in t {
            *p = std::array::from_fn(|a| p[a] - centre[a] + offset[a]);
        }
    }
    let scattered = drift(&scattered);
    assert!(slightly.abs() < 0.1, "slightly moved: drift {slightly}");
    assert!(scattered > 1.0, "scattered: drift {scattered}");
    assert_valid(&ctx);
}

#[test]
fn a_refit_over_another_triangle_count_is_refused() {
    let ctx = context();
    let mut rng = Rng::new(93);
    let mesh = random_mesh(&mut rng, 300, 5.0, 0.5);
    let mut structure = lbvh_over(&ctx, LbvhParams::default(), &DeviceMesh::new(&ctx, &mesh));
    let mut fewer = mesh.clone();
    fewer.triangles.truncate(200);
    let fewer = DeviceMesh::new(&ctx, &fewer);
    let err = ctx
        .submit_and_wait(|rec| structure.record_refit(rec, &fewer.input()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("300 triangles with 200") && err.contains("rebuild"),
        "{err}"
    );
    assert_valid(&ctx);
}
