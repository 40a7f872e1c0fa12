//! The GPU LBVH against its CPU reference: Morton codes, the exact radix-tree topology over
//! the GPU's sorted codes, and the tree invariants (every triangle in one leaf, parents
//! contain children, n - 1 internal nodes) on random, adversarial and real meshes, with 30-
//! and 63-bit codes; then GPU closest-hit and any-hit ray casting against brute force.

use crate::common;

use canopy::accel::bvh::cpu as cpu_lbvh;
use canopy::accel::bvh::cpu::MortonLeaves;
use canopy::accel::bvh::lbvh::{BvhQuality, LbvhBuilder, LbvhParams, LbvhStructure};
use canopy::accel::bvh::{Bvh, BvhNode};
use canopy::accel::bvh::{ploc, sah};
use canopy::accel::{RayStructure, submit_until_complete};
use canopy::bench::count_work;
use canopy::geom::TriangleInput;
use canopy::geom::morton::MortonBits;
use canopy::geom::ray::{MISS, Query};
use canopy::geom::{aabb, morton};
use canopy::scene::Mesh;
use canopy::vk::{Buffer, Context};
use common::{
    DeviceMesh, Rng, assert_hits_match_brute_force, assert_valid, context, cube_grid, random_mesh,
    random_rays, rays_in_plane_z0, trace,
};

/// A mesh on the device with its built tree.
struct Built {
    nodes: Vec<BvhNode>,
    leaf_primitives: Vec<u32>,
    keys: Vec<u64>,
    bvh: Bvh,
    _positions: Buffer,
    _triangles: Buffer,
}

fn build(ctx: &Context, mesh: &Mesh, bits: MortonBits, quality: BvhQuality) -> Built {
    let params = LbvhParams {
        morton_bits: bits,
        quality,
        ..LbvhParams::default()
    };
    build_with(ctx, mesh, params)
}

fn build_with(ctx: &Context, mesh: &Mesh, params: LbvhParams) -> Built {
    let (n, bits) = (mesh.triangle_count() as u32, params.morton_bits);
    let builder = LbvhBuilder::new(ctx, params, n).unwrap();
    let mut bvh = Bvh::new(ctx, n).unwrap();
    let positions = ctx
        .create_buffer_with("positions", &mesh.positions)
        .unwrap();
    let triangles = ctx
        .create_buffer_with("triangles", &mesh.triangles)
        .unwrap();
    ctx.submit_and_wait(|rec| {
        let input = TriangleInput::whole(&positions, &triangles, n);
        builder.record(rec, &input, &mut bvh)
    })
    .unwrap();
    let (nodes, leaf_primitives) = bvh.download(ctx).unwrap();
    let keys = match bits {
        MortonBits::Bits30 => ctx
            .download::<u32>(builder.sorted_keys(), 0, n as usize)
            .unwrap()
            .into_iter()
            .map(u64::from)
            .collect(),
        MortonBits::Bits63 => ctx
            .download::<u64>(builder.sorted_keys(), 0, n as usize)
            .unwrap(),
    };
    assert_valid(ctx);
    Built {
        nodes,
        leaf_primitives,
        keys,
        bvh,
        _positions: positions,
        _triangles: triangles,
    }
}

/// Builds on the GPU with every quality and checks everything against the CPU; returns the
/// stats of the fast tree, the high-quality one and the best one.
fn check_tree(
    ctx: &Context,
    mesh: &Mesh,
    bits: MortonBits,
    label: &str,
) -> [cpu_lbvh::TreeStats; 3] {
    BvhQuality::ALL.map(|quality| check_tree_of(ctx, mesh, bits, quality, label))
}

fn check_tree_of(
    ctx: &Context,
    mesh: &Mesh,
    bits: MortonBits,
    quality: BvhQuality,
    label: &str,
) -> cpu_lbvh::TreeStats {
    let label = format!("{label} ({quality:?}, {bits:?})");
    let built = build(ctx, mesh, bits, quality);
    let n = mesh.triangle_count();
    let boxes = aabb::triangle_bounds(&mesh.positions, &mesh.triangles);
    let stats = cpu_lbvh::check_invariants(&built.nodes, &built.leaf_primitives, &boxes)
        .unwrap_or_else(|e| panic!("{label}, n={n}: {e}"));
    assert_eq!(stats.internal_nodes, n.saturating_sub(1).max(1), "{label}");
    assert_eq!(
        built.bvh.height(),
        stats.depth,
        "{label}: height written by the build"
    );

    // Codes: sorted, and each equal to the CPU's code of the leaf's triangle up to one cell
    // per axis: the GPU's division for the grid scale may be off by an ulp or two (SPIR-V
    // allows 2.5), which moves points that close to a cell boundary into the next cell (on an
    // H200, 12% of the 63-bit codes of the two-cluster scene, whose cells are near an ulp).
    let centroids: Vec<[f32; 3]> = boxes.iter().map(aabb::centroid).collect();
    let (cpu_codes, _) = bits.point_codes(&centroids);
    for (k, (&key, &p)) in built.keys.iter().zip(&built.leaf_primitives).enumerate() {
        if k > 0 {
            assert!(built.keys[k - 1] <= key, "{label}: keys unsorted at {k}");
        }
        let (gpu, cpu) = (
            morton::morton_decode(key),
            morton::morton_decode(cpu_codes[p as usize]),
        );
        for a in 0..3 {
            assert!(
                gpu[a].abs_diff(cpu[a]) <= 1,
                "{label}: leaf {k} (triangle {p}) code cell {gpu:?} vs CPU {cpu:?}"
            );
        }
    }
    // Equal keys keep triangle order (the sort is stable).
    for k in 1..n {
        if built.keys[k - 1] == built.keys[k] {
            assert!(
                built.leaf_primitives[k - 1] < built.leaf_primitives[k],
                "{label}: unstable at {k}"
            );
        }
    }

    // Shape: exactly the CPU's tree over the GPU's sorted keys; the fast tree is Karras'
    // radix tree itself, numbered differently.
    let key_bits = bits.key_bits();
    let leaf_boxes: Vec<aabb::Bounds> = built
        .leaf_primitives
        .iter()
        .map(|&p| boxes[p as usize])
        .collect();
    let leaves = MortonLeaves {
        keys: built.keys.clone(),
        leaf_primitives: built.leaf_primitives.clone(),
        leaf_boxes: leaf_boxes.clone(),
    };
    let expected = quality.build_on_cpu(&leaves, key_bits).nodes;
    cpu_lbvh::same_tree(&built.nodes, &expected)
        .unwrap_or_else(|e| panic!("{label}, n={n}: GPU against CPU: {e}"));
    // Numbered the same too: node indices come from the merges, not from the GPU's timing.
    if let Some(i) = (0..expected.len()).find(|&i| built.nodes[i] != expected[i]) {
        panic!(
            "{label}, n={n}: node {i} is {:?} on the GPU, {:?} on the CPU",
            built.nodes[i], expected[i]
        );
    }
    if quality == BvhQuality::Fast {
        let mut radix = cpu_lbvh::build_radix_tree(&built.keys, key_bits);
        cpu_lbvh::fit_boxes(&mut radix, &leaf_boxes);
        cpu_lbvh::same_tree(&built.nodes, &radix)
            .unwrap_or_else(|e| panic!("{label}, n={n}: GPU against the radix tree: {e}"));
    }
    stats
}

#[test]
fn random_meshes_at_every_size() {
    let ctx = context();
    let sg = ctx.caps().subgroup_size as usize;
    let mut rng = Rng::new(7);
    for bits in [MortonBits::Bits30, MortonBits::Bits63] {
        for n in [1, 2, 3, sg - 1, sg, sg + 1, 255, 256, 257, 1025, 20_000] {
            let mesh = random_mesh(&mut rng, n, 10.0, 0.3);
            check_tree(&ctx, &mesh, bits, &format!("random {n}"));
        }
    }
}

#[test]
fn any_climb_workgroup_size() {
    let ctx = context();
    let mesh = random_mesh(&mut Rng::new(9), 5000, 10.0, 0.3);
    let boxes = aabb::triangle_bounds(&mesh.positions, &mesh.triangles);
    // Sizes not a multiple of the subgroup size are rounded up to one.
    for climb_workgroup_size in [12, 32, 64, 128, 256] {
        let params = LbvhParams {
            climb_workgroup_size,
            ..LbvhParams::default()
        };
        let built = build_with(&ctx, &mesh, params);
        cpu_lbvh::check_invariants(&built.nodes, &built.leaf_primitives, &boxes)
            .unwrap_or_else(|e| panic!("workgroups of {climb_workgroup_size}: {e}"));
    }
    for climb_workgroup_size in [0, 512] {
        let params = LbvhParams {
            climb_workgroup_size,
            ..LbvhParams::default()
        };
        let error = LbvhBuilder::new(&ctx, params, 10).err().expect("rejected");
        assert!(
            error.to_string().contains("climb workgroup size"),
            "{error}"
        );
    }
}

#[test]
fn adversarial_meshes() {
    let ctx = context();
    let mut rng = Rng::new(11);
    // All centroids identical: every key equal, the tree is split by index alone.
    let one = random_mesh(&mut rng, 1, 1.0, 1.0);
    let same = Mesh {
        positions: one.positions.clone(),
        triangles: vec![[0, 1, 2]; 3000],
        normals: Vec::new(),
    };
    for bits in [MortonBits::Bits30, MortonBits::Bits63] {
        let [fast, high, best] = check_tree(&ctx, &same, bits, "identical");
        // Index bits split the fast tree evenly; equal boxes make every pair as good as any
        // other, and merging neighbours pairwise keeps the clustered tree shallow too; no
        // treelet of equal boxes is cheaper than the fast tree's.
        for (stats, most) in [(fast, 13), (high, 16), (best, 13)] {
            assert!(
                stats.depth <= most,
                "identical: depth {} for 3000 leaves",
                stats.depth
            );
        }
    }
    // Two clusters far apart.
    let mut clusters = random_mesh(&mut rng, 2000, 1.0, 0.01);
    for p in clusters.positions.iter_mut().skip(3000) {
        p[0] += 1e6;
    }
    // A flat scene, zero-area triangles (points and segments) and tiny ones among huge ones.
    let mut flat = random_mesh(&mut rng, 2000, 5.0, 0.5);
    flat.positions.iter_mut().for_each(|p| p[2] = 0.0);
    let mut degenerate = random_mesh(&mut rng, 1000, 5.0, 0.5);
    for t in 0..500 {
        let a = degenerate.positions[3 * t];
        degenerate.positions[3 * t + 1] = a;
        degenerate.positions[3 * t + 2] = if t % 2 == 0 {
            a
        } else {
            [a[0] + 1.0, a[1], a[2]]
        };
    }
    let mut mixed = random_mesh(&mut rng, 1000, 1.0, 1e-4);
    mixed.positions[0] = [-1e4, -1e4, 0.0];
    mixed.positions[1] = [1e4, -1e4, 0.0];
    mixed.positions[2] = [0.0, 1e4, 0.0];
    for (mesh, label) in [
        (&clusters, "two clusters"),
        (&flat, "flat"),
        (&degenerate, "degenerate"),
        (&mixed, "huge among tiny"),
    ] {
        for bits in [MortonBits::Bits30, MortonBits::Bits63] {
            check_tree(&ctx, mesh, bits, label);
        }
    }
}

fn test_mesh(name: &str) -> Mesh {
    Mesh::load(&common::test_data(&format!("meshes/{name}"))).unwrap()
}

#[test]
fn real_meshes() {
    let ctx = context();
    // A scanned-and-posed character of several parts at different scales, and a CAD part of
    // flat faces and sharp edges.
    for name in ["capsule.obj", "gear.obj"] {
        let mesh = test_mesh(name);
        let n = mesh.triangle_count();
        let [fast, high, best] = check_tree(&ctx, &mesh, MortonBits::Bits30, name);
        let cost = |nodes: &[BvhNode]| cpu_lbvh::tree_stats(nodes, n).sah_cost;
        let leaves = MortonLeaves::of(&mesh.positions, &mesh.triangles, MortonBits::Bits30);
        let cpu = BvhQuality::ALL.map(|quality| cost(&quality.build_on_cpu(&leaves, 32).nodes));
        let sweep = cost(&sah::build_sah_bvh(&mesh.positions, &mesh.triangles).nodes);
        println!(
            "{name}: {n} triangles, depths {} / {} / {}, SAH cost fast {:.2}, high {:.2}, \
             best {:.2} (CPU {cpu:.2?}); full sweep {sweep:.2}",
            fast.depth, high.depth, best.depth, fast.sah_cost, high.sah_cost, best.sah_cost
        );
        for (gpu, cpu) in [fast.sah_cost, high.sah_cost, best.sah_cost]
            .into_iter()
            .zip(cpu)
        {
            assert!(
                (gpu / cpu - 1.0).abs() < 0.02,
                "{name}: SAH cost {gpu} far from the CPU's {cpu}"
            );
        }
        // The clustered and the restructured trees are within 10% of the full sweep on both
        // meshes, and the restructured one costs less than the fast one it starts from.
        for stats in [high, best] {
            assert!(
                stats.sah_cost < 1.1 * sweep,
                "{name}: SAH cost {} against the full sweep's {sweep}",
                stats.sah_cost
            );
        }
        assert!(best.sah_cost < 0.95 * fast.sah_cost, "{name}");
    }
}

/// The high-quality and best builds record at most twice the fast build's dispatches and
/// barriers (the high-quality one as many; the best one a dispatch and a barrier more per
/// treelet pass), and move at most twice its bytes (their steps replayed on the CPU from the
/// kernels' access pattern), on three meshes.
#[test]
fn better_trees_cost_at_most_twice_the_dispatches_and_the_bytes() {
    let ctx = context();
    for name in ["capsule.obj", "gear.obj", "bunny_small.obj"] {
        let mesh = test_mesh(name);
        let device = DeviceMesh::new(&ctx, &mesh);
        let n = device.count;
        let mut bvh = Bvh::new(&ctx, n).unwrap();
        let leaves = MortonLeaves::of(&mesh.positions, &mesh.triangles, MortonBits::Bits30);
        let [fast, high, best] = BvhQuality::ALL.map(|quality| {
            let params = LbvhParams {
                quality,
                ..LbvhParams::default()
            };
            let builder = LbvhBuilder::new(&ctx, params, n).unwrap();
            let work =
                count_work(&ctx, |rec| builder.record(rec, &device.input(), &mut bvh)).unwrap();
            let tree = quality.build_on_cpu(&leaves, 32);
            let moved = |t: ploc::ClimbTraffic| (t.bytes_read + t.bytes_written) as f64;
            let tree_bytes = moved(tree.climb_traffic) + moved(tree.treelet_traffic);
            let bytes = builder.sorted_codes_bytes_per_triangle() + tree_bytes / n as f64;
            (work, bytes)
        });
        let passes = BvhQuality::Best.treelet_params().passes;
        assert_eq!(
            (high.0.dispatches, high.0.barriers),
            (fast.0.dispatches, fast.0.barriers),
            "{name}"
        );
        assert_eq!(
            (best.0.dispatches, best.0.barriers),
            (fast.0.dispatches + passes, fast.0.barriers + passes),
            "{name}"
        );
        println!(
            "{name}: a build moves {:.0} bytes per triangle fast, {:.0} high, {:.0} best",
            fast.1, high.1, best.1
        );
        for other in [high.1, best.1] {
            assert!(other <= 2.0 * fast.1, "{name}: {other} against {}", fast.1);
        }
    }
    assert_valid(&ctx);
}

fn check_hits(ctx: &Context, mesh: &Mesh, bits: MortonBits, rays: usize, label: &str) {
    let mut rng = Rng::new(mesh.triangle_count() as u64);
    let rays = random_rays(&mut rng, mesh, rays);
    for quality in BvhQuality::ALL {
        let built = build(ctx, mesh, bits, quality);
        let closest = trace(ctx, &built.bvh, &rays, Query::Closest);
        let any = trace(ctx, &built.bvh, &rays, Query::Any);
        assert_hits_match_brute_force(mesh, &rays, &closest, &any, &format!("{label} {quality:?}"));
    }
}

#[test]
fn ray_casting_matches_brute_force() {
    let ctx = context();
    let mut rng = Rng::new(3);
    for (n, bits) in [
        (1, MortonBits::Bits30),
        (2, MortonBits::Bits30),
        (300, MortonBits::Bits63),
        (5000, MortonBits::Bits30),
    ] {
        let mesh = random_mesh(&mut rng, n, 3.0, 0.8);
        check_hits(&ctx, &mesh, bits, 3000, &format!("random {n}"));
    }
    let bunny = test_mesh("bunny_small.obj");
    check_hits(&ctx, &bunny, MortonBits::Bits30, 2000, "bunny_small");
}

#[test]
fn rays_along_box_faces() {
    let ctx = context();
    let mut flat = random_mesh(&mut Rng::new(4), 2000, 3.0, 0.5);
    flat.positions.iter_mut().for_each(|p| p[2] = 0.0);
    let (cubes, along_faces) = cube_grid();
    for (mesh, extra, label) in [
        (&flat, rays_in_plane_z0(300), "flat"),
        (&cubes, along_faces, "cubes"),
    ] {
        let built = build(&ctx, mesh, MortonBits::Bits30, BvhQuality::High);
        let mut rays = random_rays(&mut Rng::new(5), mesh, 1000);
        rays.extend(extra);
        let closest = trace(&ctx, &built.bvh, &rays, Query::Closest);
        let any = trace(&ctx, &built.bvh, &rays, Query::Any);
        assert_hits_match_brute_force(mesh, &rays, &closest, &any, label);
    }
}

#[test]
fn empty_tree_misses_everything() {
    let ctx = context();
    let mesh = random_mesh(&mut Rng::new(1), 4, 1.0, 1.0);
    let mut built = build(&ctx, &mesh, MortonBits::Bits30, BvhQuality::Fast);
    let builder = LbvhBuilder::new(&ctx, LbvhParams::default(), 4).unwrap();
    ctx.submit_and_wait(|rec| {
        let input = TriangleInput::whole(&built._positions, &built._triangles, 0);
        builder.record(rec, &input, &mut built.bvh)
    })
    .unwrap();
    let rays = random_rays(&mut Rng::new(2), &mesh, 100);
    let hits = trace(&ctx, &built.bvh, &rays, Query::Closest);
    assert!(hits.iter().all(|h| h.triangle == MISS));
}

/// Triangles nested inside each other, each a little larger than the last: clustering merges
/// them one at a time into a chain far taller than traversal's stack. The build says so, and
/// the structure builds fast trees instead, whose hits are right.
#[test]
fn too_tall_trees_are_built_again_fast() {
    let ctx = context();
    let mesh = common::nested_triangles(3000);
    let fast = build(&ctx, &mesh, MortonBits::Bits30, BvhQuality::Fast);
    assert!(fast.bvh.fits_traversal_stack());
    let high = build(&ctx, &mesh, MortonBits::Bits30, BvhQuality::High);
    assert!(
        !high.bvh.fits_traversal_stack(),
        "nested triangles: a clustered tree {} tall",
        high.bvh.height()
    );

    let params = LbvhParams {
        quality: BvhQuality::High,
        ..LbvhParams::default()
    };
    let n = mesh.triangle_count() as u32;
    let mut structure = LbvhStructure::new(&ctx, params, n).unwrap();
    let (positions, triangles) = (&high._positions, &high._triangles);
    let input = TriangleInput::whole(positions, triangles, n);
    submit_until_complete(&ctx, &mut structure, |rec, s| {
        s.record_build(rec, &input, 0)
    })
    .unwrap();
    assert!(structure.bvh().fits_traversal_stack());
    let rays = random_rays(&mut Rng::new(8), &mesh, 2000);
    let closest = trace(&ctx, structure.bvh(), &rays, Query::Closest);
    let any = trace(&ctx, structure.bvh(), &rays, Query::Any);
    assert_hits_match_brute_force(&mesh, &rays, &closest, &any, "nested, built again");
    assert_valid(&ctx);
}

/// Under a pretended limit of 64 workgroups per dimension, every LBVH step runs in 2D and 3D
/// grids (more than 64 x 64 workgroups of 64 triangles) and the tree still equals the CPU's;
/// ray casting folds its grid too and returns exactly the hits of an unfolded run.
#[test]
fn folded_grids_build_and_trace_like_the_cpu() {
    let folded = common::folding_context();
    let mut rng = Rng::new(35);
    let n = 270_000;
    assert!(n / 64 > (common::FOLDING_LIMIT * common::FOLDING_LIMIT) as usize);
    let mesh = random_mesh(&mut rng, n, 30.0, 0.2);
    check_tree(&folded, &mesh, MortonBits::Bits30, "folded 270K");

    let small = random_mesh(&mut rng, 500, 3.0, 0.8);
    let rays = random_rays(&mut rng, &small, 270_000);
    let plain = context();
    for query in [Query::Closest, Query::Any] {
        let expected = trace(
            &plain,
            &build(&plain, &small, MortonBits::Bits30, BvhQuality::High).bvh,
            &rays,
            query,
        );
        let got = trace(
            &folded,
            &build(&folded, &small, MortonBits::Bits30, BvhQuality::High).bvh,
            &rays,
            query,
        );
        assert!(
            got == expected,
            "{query:?}: folded and unfolded hits differ"
        );
    }
}
