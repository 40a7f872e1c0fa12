//! kd-trees from the GPU builder (`accel::kdtree_build`) and the CPU SAH builder: each tree
//! checked by `check_kdtree` (structure, every triangle in every leaf it reaches, depth), and
//! GPU ray casting over it (`glsl/kdtree/trace.comp`) against brute force, on random
//! soups, real meshes, and the adversarial scenes of a kd-tree (all triangles in one plane,
//! duplicates, one huge triangle among tiny ones, axis-aligned cubes whose faces lie on split
//! planes) with rays that run inside split planes. The GPU builder's overflow-and-grow path
//! and its SAH cost against the CPU builder's are tested too.

use crate::common;

use canopy::accel::kdtree::KdTreeGpu;
use canopy::accel::kdtree::build::{
    CHUNK, GROWTH_BOUND, KdBuildParams, KdTreeBuilder, KdTreeStructure,
};
use canopy::accel::kdtree::cpu::{build_sah_kdtree, check_kdtree, kdtree_stats};
use canopy::accel::kdtree::scratch::{KdChunk, KdEntry, KdLargeNode, KdRecord, KdSmallNode};
use canopy::accel::kdtree::{KdParams, KdTree};
use canopy::accel::{RayStructure, submit_until_complete};
use canopy::geom::ray::{Query, Ray};
use canopy::scene::Mesh;
use canopy::vk::Context;
use common::{
    DeviceMesh, Rng, assert_hits_match_brute_force, context, cramped_kd_params, cube_grid,
    random_mesh, random_rays, rays_in_plane_z0, trace,
};

/// Where a test's tree comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Builder {
    Cpu,
    Gpu,
}

/// Builds `mesh`'s tree on the GPU with `params` (its lists grown until they fit), checks it
/// and returns it with the host copy.
fn gpu_build(
    ctx: &Context,
    mesh: &Mesh,
    device: &DeviceMesh,
    params: KdBuildParams,
    label: &str,
) -> (KdTreeStructure, KdTree) {
    let mut gpu = KdTreeStructure::new(ctx, params, device.count, 1).unwrap();
    submit_until_complete(ctx, &mut gpu, |rec, gpu| {
        gpu.record_build(rec, &device.input(), 0)
    })
    .unwrap();
    common::assert_valid(ctx);
    let status = gpu.status(0);
    let tree = gpu
        .tree()
        .download(ctx, status.nodes, status.leaf_triangles)
        .unwrap();
    check_kdtree(&mesh.positions, &mesh.triangles, &tree)
        .unwrap_or_else(|e| panic!("{label} (GPU build): {e}"));
    let depth = params.depth_limit(device.count);
    // Depth and leaf size bounds: a leaf above T records only at the depth limit or after
    // stalled splits, and nothing deeper than the limit.
    KdTreeGpu::upload(ctx, &tree).unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(
        tree_depth(&tree) <= depth,
        "{label}: depth {} above the limit {depth}",
        tree_depth(&tree)
    );
    (gpu, tree)
}

fn tree_depth(tree: &KdTree) -> u32 {
    let mut deepest = 0;
    let mut stack = vec![(0usize, 0u32)];
    while let Some((i, d)) = stack.pop() {
        deepest = deepest.max(d);
        let node = tree.nodes[i];
        if !node.is_leaf() {
            stack.push((i + 1, d + 1));
            stack.push((node.right_child() as usize, d + 1));
        }
    }
    deepest
}

fn check(ctx: &Context, mesh: &Mesh, extra_rays: &[Ray], label: &str, builder: Builder) {
    let device = DeviceMesh::new(ctx, mesh);
    let (uploaded, built);
    let gpu: &KdTreeGpu = match builder {
        Builder::Cpu => {
            let tree = build_sah_kdtree(&mesh.positions, &mesh.triangles, &KdParams::default());
            check_kdtree(&mesh.positions, &mesh.triangles, &tree)
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            uploaded = KdTreeGpu::upload(ctx, &tree).unwrap();
            &uploaded
        }
        Builder::Gpu => {
            built = gpu_build(ctx, mesh, &device, KdBuildParams::default(), label).0;
            built.tree()
        }
    };
    if mesh.triangles.is_empty() {
        return;
    }
    let input = device.input();
    let structure = gpu.over(&input);
    let mut rays = random_rays(&mut Rng::new(mesh.triangle_count() as u64), mesh, 3000);
    rays.extend_from_slice(extra_rays);
    let closest = trace(ctx, &structure, &rays, Query::Closest);
    let any = trace(ctx, &structure, &rays, Query::Any);
    assert_hits_match_brute_force(
        mesh,
        &rays,
        &closest,
        &any,
        &format!("{label} ({builder:?})"),
    );
}

fn random_and_real_meshes(builder: Builder) {
    let ctx = context();
    let mut rng = Rng::new(21);
    // A soup of long triangles duplicates heavily under splitting: kept smaller for the GPU
    // build on lavapipe.
    let largest = match builder {
        Builder::Cpu => 20_000,
        Builder::Gpu => 5000,
    };
    for n in [1, 2, 10, 1000, largest] {
        let mesh = random_mesh(&mut rng, n, 3.0, 0.8);
        check(&ctx, &mesh, &[], &format!("random {n}"), builder);
    }
    let path = common::test_data("meshes/bunny_small.obj");
    check(
        &ctx,
        &Mesh::load(&path).unwrap(),
        &[],
        "bunny_small",
        builder,
    );
}

fn adversarial_scenes(builder: Builder) {
    let ctx = context();
    let mut rng = Rng::new(22);
    // All triangles in the plane z = 0, with rays lying in that plane.
    let mut flat = random_mesh(&mut rng, 2000, 3.0, 0.5);
    flat.positions.iter_mut().for_each(|p| p[2] = 0.0);
    let in_plane = rays_in_plane_z0(200);
    check(&ctx, &flat, &in_plane, "one plane", builder);
    // Every triangle twice.
    let mut doubled = random_mesh(&mut rng, 500, 2.0, 0.5);
    let copies = doubled.triangles.clone();
    doubled.triangles.extend(copies);
    check(&ctx, &doubled, &[], "coincident triangles", builder);
    // One huge triangle among tiny ones.
    let mut huge = random_mesh(&mut rng, 1000, 1.0, 0.01);
    huge.positions[0] = [-100.0, -100.0, 0.3];
    huge.positions[1] = [100.0, -100.0, -0.3];
    huge.positions[2] = [0.0, 100.0, 0.0];
    check(&ctx, &huge, &[], "one huge among tiny", builder);
    // Axis-aligned cubes on a grid: faces on every candidate plane, rays along the faces.
    let (cubes, along_faces) = cube_grid();
    check(&ctx, &cubes, &along_faces, "cubes", builder);
}

#[test]
fn cpu_trees_random_and_real_meshes() {
    random_and_real_meshes(Builder::Cpu);
}

#[test]
fn cpu_trees_adversarial_scenes() {
    adversarial_scenes(Builder::Cpu);
}

#[test]
fn gpu_trees_random_and_real_meshes() {
    random_and_real_meshes(Builder::Gpu);
}

#[test]
fn gpu_trees_adversarial_scenes() {
    adversarial_scenes(Builder::Gpu);
}

#[test]
fn gpu_build_small_and_empty_meshes() {
    let ctx = context();
    let mut rng = Rng::new(23);
    for n in [0, 1, 2, 63, 64, 65, 300] {
        let mesh = random_mesh(&mut rng, n, 2.0, 0.5);
        check(&ctx, &mesh, &[], &format!("random {n}"), Builder::Gpu);
    }
}

#[test]
fn gpu_build_overflow_grows_and_rebuilds() {
    let ctx = context();
    let mesh = random_mesh(&mut Rng::new(24), 5000, 3.0, 0.8);
    let device = DeviceMesh::new(&ctx, &mesh);
    // Lists far too small for the tree: the first build overflows.
    let builder = KdTreeBuilder::new(&ctx, cramped_kd_params(), device.count).unwrap();
    let first = builder.capacity();
    let tree = builder.allocate_tree(&ctx).unwrap();
    let readback = builder.status_readback(&ctx).unwrap();
    ctx.submit_and_wait(|rec| builder.record(rec, &device.input(), &tree, &readback))
        .unwrap();
    let overflow = readback.overflow().expect("the tight lists overflow");
    assert!(!overflow.lists().is_empty());
    // The structure grows its lists until the tree fits, and the tree is right.
    let (grown_structure, grown) =
        gpu_build(&ctx, &mesh, &device, cramped_kd_params(), "cramped lists");
    assert_ne!(grown_structure.builder().capacity(), first);
    let (_, reference) = gpu_build(
        &ctx,
        &mesh,
        &device,
        KdBuildParams::default(),
        "default lists",
    );
    // The same tree up to ties between equally good split candidates, whose order depends on
    // the order atomics appended the records in.
    let grown_cost = kdtree_stats(&grown, &KdParams::default()).sah_cost;
    let reference_cost = kdtree_stats(&reference, &KdParams::default()).sah_cost;
    assert!(
        (grown_cost - reference_cost).abs() <= 1e-3 * reference_cost,
        "a grown build makes the same tree: SAH {grown_cost} vs {reference_cost}"
    );
    common::assert_valid(&ctx);
}

#[test]
fn gpu_build_sah_close_to_cpu() {
    let ctx = context();
    let path = common::test_data("meshes/bunny_small.obj");
    // The target on real meshes is 15%; a random soup of long triangles, all straddling the
    // large stage's median planes, is the median split's worst case.
    let meshes = [
        ("bunny_small", Mesh::load(&path).unwrap(), 1.15),
        (
            "random 20000",
            random_mesh(&mut Rng::new(25), 20_000, 3.0, 0.8),
            1.5,
        ),
    ];
    for (label, mesh, bound) in &meshes {
        let device = DeviceMesh::new(&ctx, mesh);
        let (_, gpu) = gpu_build(&ctx, mesh, &device, KdBuildParams::default(), label);
        let cpu = build_sah_kdtree(&mesh.positions, &mesh.triangles, &KdParams::default());
        let gpu_cost = kdtree_stats(&gpu, &KdParams::default()).sah_cost;
        let cpu_cost = kdtree_stats(&cpu, &KdParams::default()).sah_cost;
        println!(
            "{label}: GPU SAH {gpu_cost:.2}, CPU SAH {cpu_cost:.2}, ratio {:.3}",
            gpu_cost / cpu_cost
        );
        assert!(
            gpu_cost < cpu_cost * bound,
            "{label}: GPU SAH {gpu_cost} vs CPU {cpu_cost}"
        );
    }
}

/// Under a pretended limit of 64 workgroups per dimension, the builder's chunk, node and
/// small-node lists outgrow one dimension and its GPU-grown grids fold (no read-back, no
/// refusal); the tree is still valid and traces like brute force.
#[test]
fn gpu_build_with_folded_grids() {
    let ctx = common::folding_context();
    let mesh = random_mesh(&mut Rng::new(36), 30_000, 10.0, 0.2);
    check(&ctx, &mesh, &[], "folded 30K", Builder::Gpu);
}

/// The builder's scratch, computed from its buffer sizes: a builder's buffers are the bytes
/// `scratch_bytes_for` gives without making one, and at the 5M default scene's size they stay
/// under the bound that follows from the struct sizes and the default factors (the two record
/// lists and the entries in one buffer, the small roots' records and the small roots, the large
/// nodes, their children and chunks): under 1.5 GB, 299 bytes per triangle (800 before the
/// lists shared the entries' buffer and the entries shrank to 16 bytes, 448 before the small
/// roots' split masks moved to the small stage's registers).
#[test]
fn gpu_build_scratch_within_its_bound() {
    let ctx = context();
    let params = KdBuildParams::default();
    for n in [0, 5000] {
        let builder = KdTreeBuilder::new(&ctx, params, n).unwrap();
        assert_eq!(
            builder.scratch_bytes(),
            KdTreeBuilder::scratch_bytes_for(n, &params).unwrap()
        );
    }
    let size = |bytes: usize| bytes as f64;
    let record = size(std::mem::size_of::<KdRecord>());
    let entry = size(std::mem::size_of::<KdEntry>());
    let small_root = size(std::mem::size_of::<KdSmallNode>());
    let large_node = size(std::mem::size_of::<KdLargeNode>());
    let chunk = size(std::mem::size_of::<KdChunk>());
    let records = params.record_factor as f64;
    let nodes = params.node_factor as f64;
    let small_records = params.small_record_factor as f64;
    let large_nodes = records / (params.small_threshold + 1) as f64;
    let per_triangle = (2.0 * records * record + nodes / 16.0 * entry).max(nodes * entry)
        + small_records * (record + params.small_root_factor as f64 * small_root)
        + 4.0 * large_nodes * large_node
        + 2.0 * (records / CHUNK as f64 + large_nodes) * chunk;
    let n = 5_005_832;
    let bytes = KdTreeBuilder::scratch_bytes_for(n, &params).unwrap() as f64;
    println!(
        "scratch at {n} triangles: {bytes} bytes, {:.1} per triangle (bound {per_triangle:.1})",
        bytes / n as f64
    );
    assert!(bytes / n as f64 <= per_triangle * 1.001, "{bytes}");
    assert!(bytes < 1.5e9, "{bytes}");
}

/// Triangles nested in each other lie in a great many cells each, and their tree's lists
/// would grow a thousandfold (400 triangles took 2.2M records and a minute on lavapipe): the
/// lists stay within `GROWTH_BOUND` times their default size, the depth limit falls instead,
/// and the shallower tree is still right.
#[test]
fn nested_triangles_keep_the_build_lists_bounded() {
    let ctx = context();
    let mesh = common::nested_triangles(400);
    let device = DeviceMesh::new(&ctx, &mesh);
    let (gpu, _) = gpu_build(&ctx, &mesh, &device, KdBuildParams::default(), "nested");
    let first = KdTreeBuilder::new(&ctx, KdBuildParams::default(), device.count)
        .unwrap()
        .capacity();
    let grown = gpu.builder().capacity();
    let within = |list: u32, of: u32| list as u64 <= GROWTH_BOUND as u64 * of as u64;
    assert!(
        within(grown.records, first.records)
            && within(grown.nodes, first.nodes)
            && within(grown.leaf_triangles, first.leaf_triangles)
            && within(grown.small_records, first.small_records)
            && within(grown.small_roots, first.small_roots),
        "grown to {grown} from {first}"
    );
    let limit = gpu.builder().params().depth_limit(device.count);
    let default_limit = KdBuildParams::default().depth_limit(device.count);
    assert!(limit < default_limit, "depth limit {limit}");
    let mut rng = Rng::new(3);
    let rays = random_rays(&mut rng, &mesh, 1500);
    let input = device.input();
    let traversable = gpu.traversable(&input);
    let closest = trace(&ctx, traversable.as_ref(), &rays, Query::Closest);
    let any = trace(&ctx, traversable.as_ref(), &rays, Query::Any);
    assert_hits_match_brute_force(&mesh, &rays, &closest, &any, "nested");
}
