//! The GPU octree and point k-d tree against the CPU: node sets per level with their parents,
//! the radix tree over the distinct codes, and the k-d split planes, for random points with
//! many duplicates (on a grid whose arithmetic is exact, so GPU and CPU agree on every cell)
//! and for a real range scan, with 30- and 63-bit codes.

use crate::common;

use canopy::accel::bvh::cpu as cpu_lbvh;
use canopy::accel::octree::cpu as cpu_octree;
use canopy::accel::octree::{OctreeBuilder, OctreeHost};
use canopy::geom::morton::MortonFrame;
use canopy::geom::{MortonBits, PointInput};
use canopy::scene::Mesh;
use canopy::vk::Context;
use canopy::vk::Slice;
use common::{Rng, assert_valid, context};

fn gpu_octree(ctx: &Context, points: &[[f32; 3]], bits: MortonBits) -> OctreeHost {
    let n = points.len() as u32;
    let builder = OctreeBuilder::new(ctx, bits, n).unwrap();
    let octree = builder.allocate(ctx).unwrap();
    let buffer = ctx.create_buffer_with("points", points).unwrap();
    ctx.submit_and_wait(|rec| {
        builder.record(
            rec,
            &PointInput {
                positions: Slice::whole(&buffer),
                count: n,
            },
            &octree,
        )
    })
    .unwrap();
    assert_valid(ctx);
    octree.download(ctx).unwrap()
}

fn check(ctx: &Context, points: &[[f32; 3]], bits: MortonBits, label: &str) {
    let levels = bits.per_axis();
    let got = gpu_octree(ctx, points, bits);
    let expected = cpu_octree::build_octree(points, levels);
    let codes = cpu_octree::unique_sorted_codes(points, levels);
    assert_eq!(
        got.distinct_points as usize,
        codes.len(),
        "{label}: distinct points"
    );
    assert_eq!(
        got.nodes_per_level(),
        expected.nodes_per_level,
        "{label}: nodes per level"
    );

    // Every node with its parent's prefix, as the CPU lists them.
    let mut nodes: Vec<cpu_octree::OctreeNodeRef> = got
        .nodes
        .iter()
        .map(|node| cpu_octree::OctreeNodeRef {
            level: node.level,
            prefix: node.prefix,
            parent_prefix: match node.parent {
                u32::MAX => cpu_octree::NO_PARENT_PREFIX,
                p => {
                    let parent = &got.nodes[p as usize];
                    assert_eq!(parent.level + 1, node.level, "{label}: parent level");
                    parent.prefix
                }
            },
        })
        .collect();
    nodes.sort();
    assert_eq!(nodes, expected.nodes, "{label}: nodes and parents");

    // The radix tree over the distinct codes, read as a point k-d tree.
    if codes.len() > 1 {
        let key_bits = bits.key_bits();
        let radix = cpu_lbvh::build_radix_tree(&codes, key_bits);
        for (i, (g, c)) in got.radix_nodes.iter().zip(&radix).enumerate() {
            assert_eq!(
                (g.left, g.right, g.parent, g.leaf_count),
                (c.left, c.right, c.parent, c.leaf_count),
                "{label}: radix node {i}"
            );
        }
        let frame = MortonFrame::from_points(points, levels);
        let splits = cpu_octree::point_kd_splits(&codes, levels, &frame);
        for (i, (g, c)) in got.splits.iter().zip(&splits).enumerate() {
            assert_eq!(g.axis, c.axis, "{label}: split {i} axis");
            let tolerance = 1e-6 * c.plane.abs().max(1.0);
            assert!(
                (g.plane - c.plane).abs() <= tolerance,
                "{label}: split {i}: {g:?} vs {c:?}"
            );
        }
    }
}

/// Points at cell centres of a 1024-cell grid on [0, 1024]³ (with the corners, so the bounds
/// are exact): every quantization is exact at 10 and 21 bits per axis.
fn grid_points(rng: &mut Rng, n: usize) -> Vec<[f32; 3]> {
    let mut points = vec![[0.0; 3], [1024.0; 3]];
    points.extend((2..n).map(|_| std::array::from_fn(|_| rng.below(1024) as f32 + 0.5)));
    points.truncate(n);
    points
}

#[test]
fn random_points_with_duplicates() {
    let ctx = context();
    let mut rng = Rng::new(5);
    for bits in [MortonBits::Bits30, MortonBits::Bits63] {
        for n in [1, 2, 3, 100, 5_000] {
            let points = grid_points(&mut rng, n);
            check(&ctx, &points, bits, &format!("grid {n}"));
        }
        // Heavy duplication: 20,000 points in 64 cells.
        let points: Vec<[f32; 3]> = (0..20_000)
            .map(|i| std::array::from_fn(|a| [0.5, 1023.5, 511.5, 100.5][(i >> (2 * a)) & 3]))
            .collect();
        check(&ctx, &points, bits, "64 cells");
    }
}

#[test]
fn range_scan() {
    let ctx = context();
    let path = common::test_data("points/bun090.ply");
    let points = Mesh::load_points(&path).unwrap();
    assert!(points.len() > 30_000);
    check(&ctx, &points, MortonBits::Bits30, "bun090");
}

/// Under a pretended limit of 64 workgroups per dimension, the octree's per-point and
/// per-node steps run in 2D and 3D grids and still match the CPU.
#[test]
fn folded_grids_build_the_same_octree() {
    let ctx = common::folding_context();
    let points = grid_points(&mut Rng::new(37), 300_000);
    check(&ctx, &points, MortonBits::Bits30, "folded 300K");
}
