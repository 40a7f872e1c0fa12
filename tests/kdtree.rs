//! kd-tree ray casting on the GPU (`glsl/trace/trace_kdtree.comp`) against brute force, over
//! trees from the CPU SAH builder: random soups, a real mesh, and the adversarial scenes of a
//! kd-tree (all triangles in one plane, duplicates, one huge triangle among tiny ones, axis-
//! aligned cubes whose faces lie on split planes), with rays that run inside split planes.

mod common;

use canopy::accel::kdtree::KdTreeGpu;
use canopy::cpu::kdtree::{KdParams, build_sah_kdtree, check_kdtree};
use canopy::prims::Slice;
use canopy::scene::Mesh;
use canopy::trace::{Query, Ray, Structure};
use canopy::vk::Context;
use common::{
    Rng, assert_hits_match_brute_force, context, cube_grid, random_mesh, random_rays,
    rays_in_plane_z0, trace,
};

fn check(ctx: &Context, mesh: &Mesh, extra_rays: &[Ray], label: &str) {
    let tree = build_sah_kdtree(&mesh.positions, &mesh.triangles, &KdParams::default());
    check_kdtree(&mesh.positions, &mesh.triangles, &tree)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let gpu = KdTreeGpu::upload(ctx, &tree).unwrap();
    let positions = ctx
        .create_buffer_with("positions", &mesh.positions)
        .unwrap();
    let triangles = ctx
        .create_buffer_with("triangles", &mesh.triangles)
        .unwrap();
    let structure = Structure::KdTree {
        tree: &gpu,
        positions: Slice::whole(&positions),
        triangles: Slice::whole(&triangles),
    };
    let mut rays = random_rays(&mut Rng::new(mesh.triangle_count() as u64), mesh, 3000);
    rays.extend_from_slice(extra_rays);
    let closest = trace(ctx, structure, &rays, Query::Closest);
    let any = trace(ctx, structure, &rays, Query::Any);
    assert_hits_match_brute_force(mesh, &rays, &closest, &any, label);
}

#[test]
fn random_and_real_meshes() {
    let ctx = context();
    let mut rng = Rng::new(21);
    for n in [1, 2, 10, 1000, 20_000] {
        let mesh = random_mesh(&mut rng, n, 3.0, 0.8);
        check(&ctx, &mesh, &[], &format!("random {n}"));
    }
    let path = common::shared_data("meshes/bunny_small.obj");
    check(&ctx, &Mesh::load(&path).unwrap(), &[], "bunny_small");
}

#[test]
fn adversarial_scenes() {
    let ctx = context();
    let mut rng = Rng::new(22);
    // All triangles in the plane z = 0, with rays lying in that plane.
    let mut flat = random_mesh(&mut rng, 2000, 3.0, 0.5);
    flat.positions.iter_mut().for_each(|p| p[2] = 0.0);
    let in_plane = rays_in_plane_z0(200);
    check(&ctx, &flat, &in_plane, "one plane");
    // Every triangle twice.
    let mut doubled = random_mesh(&mut rng, 500, 2.0, 0.5);
    let copies = doubled.triangles.clone();
    doubled.triangles.extend(copies);
    check(&ctx, &doubled, &[], "coincident triangles");
    // One huge triangle among tiny ones.
    let mut huge = random_mesh(&mut rng, 1000, 1.0, 0.01);
    huge.positions[0] = [-100.0, -100.0, 0.3];
    huge.positions[1] = [100.0, -100.0, -0.3];
    huge.positions[2] = [0.0, 100.0, 0.0];
    check(&ctx, &huge, &[], "one huge among tiny");
    // Axis-aligned cubes on a grid: faces on every candidate plane, rays along the faces.
    let (cubes, along_faces) = cube_grid();
    check(&ctx, &cubes, &along_faces, "cubes");
}
