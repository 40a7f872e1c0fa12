//! The octree and k-d tree references of Karras §4, by their plain definitions.
//!
//! Points are quantized in their [`MortonFrame`] with `levels` bits per axis (`levels` = 10
//! with 30-bit codes, 21 with 63-bit codes) and Morton-encoded. The octree's nodes at level
//! `ℓ` (`0..=levels`) are the distinct prefixes `code >> 3(levels - ℓ)`; level 0 is the root.
//! The GPU derives the same nodes from the edges of the radix tree over the unique codes.
//!
//! The k-d tree is that radix tree itself: each internal node splits its points by the bit
//! after their common prefix, that is by an axis-aligned plane, see [`point_kd_splits`].

use crate::accel::bvh::cpu::radix_node;
pub use crate::accel::octree::KdSplit;
use crate::geom::morton::{MortonFrame, encode_points, morton_decode, morton63};

/// The `parent_prefix` of the root.
pub const NO_PARENT_PREFIX: u64 = u64::MAX;

/// One octree node: the cell of level `level` whose codes begin with `prefix`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OctreeNodeRef {
    /// Depth of the node, 0 for the root.
    pub level: u32,
    /// The top `3 · level` bits of the node's codes.
    pub prefix: u64,
    /// `prefix >> 3`, the parent's prefix, or [`NO_PARENT_PREFIX`] for the root.
    pub parent_prefix: u64,
}

/// The octree over a point set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuOctree {
    /// Bits per axis of the codes, and the level of the leaves.
    pub levels: u32,
    /// Number of nodes at each level `0..=levels` (all 0 without points).
    pub nodes_per_level: Vec<usize>,
    /// All nodes, sorted by (level, prefix).
    pub nodes: Vec<OctreeNodeRef>,
}

/// Width of the keys the GPU sorts codes of `levels` bits per axis in: 32 while the
/// `3 · levels`-bit code fits, else 64.
pub fn octree_key_bits(levels: u32) -> u32 {
    if 3 * levels <= 32 { 32 } else { 64 }
}

/// The distinct Morton codes (`levels` bits per axis, 1..=21) of `points` in the frame
/// [`MortonFrame::from_points`]`(points, levels)`, sorted.
pub fn unique_sorted_codes(points: &[[f32; 3]], levels: u32) -> Vec<u64> {
    assert!((1..=21).contains(&levels), "{levels} levels");
    let (mut codes, _) = encode_points(points, levels, morton63);
    codes.sort_unstable();
    codes.dedup();
    codes
}

/// The octree of `points` with `levels` levels below the root.
pub fn build_octree(points: &[[f32; 3]], levels: u32) -> CpuOctree {
    let codes = unique_sorted_codes(points, levels);
    let mut nodes = Vec::new();
    let mut nodes_per_level = Vec::with_capacity(levels as usize + 1);
    for level in 0..=levels {
        let before = nodes.len();
        let shift = 3 * (levels - level);
        let mut previous = None;
        for &code in &codes {
            let prefix = code >> shift;
            if previous != Some(prefix) {
                previous = Some(prefix);
                nodes.push(OctreeNodeRef {
                    level,
                    prefix,
                    parent_prefix: if level == 0 {
                        NO_PARENT_PREFIX
                    } else {
                        prefix >> 3
                    },
                });
            }
        }
        nodes_per_level.push(nodes.len() - before);
    }
    CpuOctree {
        levels,
        nodes_per_level,
        nodes,
    }
}

/// The split of radix node `i` over `unique_codes` as (axis, boundary in grid units): points
/// of the left child have grid coordinate below the boundary along the axis, those of the
/// right child at or above it.
fn split_cell(unique_codes: &[u64], levels: u32, i: usize) -> (u32, u32) {
    let key_bits = octree_key_bits(levels);
    let node = radix_node(unique_codes, key_bits, i);
    // The prefix length within the 3 · levels code bits.
    let prefix_len = (node.prefix_len - (key_bits - 3 * levels) as i32) as u32;
    let axis = prefix_len % 3;
    let axis_bits = prefix_len / 3;
    let c = morton_decode(unique_codes[node.first as usize])[axis as usize] >> (levels - axis_bits);
    (axis, (c * 2 + 1) << (levels - axis_bits - 1))
}

/// The splitting plane of every internal node of the radix tree over `unique_codes` (sorted,
/// distinct, `levels` bits per axis, in `frame`): a node whose codes share `p` bits splits
/// along axis `p % 3` at `origin + boundary / scale`, the boundary in grid units being
/// `(2c + 1) << (levels - p/3 - 1)` with `c` the `p/3` bits of the axis in the prefix. Empty
/// for fewer than two codes.
pub fn point_kd_splits(unique_codes: &[u64], levels: u32, frame: &MortonFrame) -> Vec<KdSplit> {
    (0..unique_codes.len().saturating_sub(1))
        .map(|i| {
            let (axis, boundary) = split_cell(unique_codes, levels, i);
            let a = axis as usize;
            KdSplit {
                axis,
                plane: frame.origin[a] + boundary as f32 / frame.scale[a],
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accel::bvh::LEAF_BIT;
    use crate::accel::bvh::cpu::build_radix_tree;
    use crate::rng::Rng;

    /// Random points, a quarter of them duplicates and a dense cluster near the origin.
    fn points(n: usize, seed: u64) -> Vec<[f32; 3]> {
        let mut rng = Rng::new(seed);
        let mut points: Vec<[f32; 3]> = Vec::with_capacity(n);
        for i in 0..n {
            let p = match i % 4 {
                0 if i > 0 => points[rng.below(i as u32) as usize],
                1 => std::array::from_fn(|_| rng.f32_in(0.0, 1e-3)),
                _ => std::array::from_fn(|_| rng.f32_in(-5.0, 5.0)),
            };
            points.push(p);
        }
        points
    }

    #[test]
    fn levels_hold_the_distinct_prefixes() {
        for levels in [10, 21] {
            let pts = points(5000, levels as u64);
            let codes = unique_sorted_codes(&pts, levels);
            assert!(codes.windows(2).all(|w| w[0] < w[1]));
            let tree = build_octree(&pts, levels);
            assert_eq!(tree.nodes_per_level.len(), levels as usize + 1);
            assert_eq!(tree.nodes_per_level[0], 1);
            assert_eq!(tree.nodes_per_level[levels as usize], codes.len());
            assert!(tree.nodes.windows(2).all(|w| w[0] < w[1]));
            assert_eq!(tree.nodes.len(), tree.nodes_per_level.iter().sum::<usize>());
            for node in &tree.nodes[1..] {
                let parent = OctreeNodeRef {
                    level: node.level - 1,
                    prefix: node.parent_prefix,
                    parent_prefix: if node.level == 1 {
                        NO_PARENT_PREFIX
                    } else {
                        node.parent_prefix >> 3
                    },
                };
                assert!(tree.nodes.binary_search(&parent).is_ok(), "{node:?}");
            }
        }
    }

    /// Karras' count: an edge from a radix node with prefix length δp to a child with δc
    /// holds ⌊δc/3⌋ - ⌊δp/3⌋ octree nodes (leaves have the full length), plus the octree's
    /// root and the ⌊δ/3⌋ nodes above the radix root (none here: the frame spans the points,
    /// so the top bit of the widest axis differs).
    #[test]
    fn radix_tree_edges_count_the_octree_nodes() {
        for levels in [10, 21] {
            let codes = unique_sorted_codes(&points(3000, 40 + levels as u64), levels);
            let key_bits = octree_key_bits(levels);
            let offset = (key_bits - 3 * levels) as i32;
            let nodes = build_radix_tree(&codes, key_bits);
            let mut count = 1 + (radix_node(&codes, key_bits, 0).prefix_len - offset) as usize / 3;
            for (i, node) in nodes.iter().enumerate() {
                let parent_len = radix_node(&codes, key_bits, i).prefix_len - offset;
                for c in [node.left, node.right] {
                    let child_len = if c & LEAF_BIT != 0 {
                        3 * levels as i32
                    } else {
                        radix_node(&codes, key_bits, c as usize).prefix_len - offset
                    };
                    count += (child_len / 3 - parent_len / 3) as usize;
                }
            }
            assert_eq!(
                count,
                build_octree(&points(3000, 40 + levels as u64), levels)
                    .nodes
                    .len()
            );
        }
    }

    #[test]
    fn kd_planes_separate_the_children() {
        for levels in [10, 21] {
            let pts = points(4000, 60 + levels as u64);
            let codes = unique_sorted_codes(&pts, levels);
            let frame = MortonFrame::from_points(&pts, levels);
            let splits = point_kd_splits(&codes, levels, &frame);
            assert_eq!(splits.len(), codes.len() - 1);
            let key_bits = octree_key_bits(levels);
            for (i, split) in splits.iter().enumerate() {
                let node = radix_node(&codes, key_bits, i);
                let (axis, boundary) = split_cell(&codes, levels, i);
                assert_eq!(axis, split.axis);
                let a = axis as usize;
                for k in node.first..=node.last {
                    let q = morton_decode(codes[k as usize])[a];
                    assert_eq!(q < boundary, k <= node.split, "node {i}, key {k}");
                }
            }
            // In world units, points of each side lie on that side of the plane (up to
            // rounding in the quantization).
            let slack = 1e-4;
            let nodes = build_radix_tree(&codes, key_bits);
            let mut sides = vec![Vec::new(); codes.len()];
            for p in &pts {
                let code = morton63(frame.quantize(*p, levels));
                sides[codes.binary_search(&code).unwrap()].push(*p);
            }
            for (i, split) in splits.iter().enumerate() {
                let node = radix_node(&codes, key_bits, i);
                let a = split.axis as usize;
                for k in node.first..=node.last {
                    for p in &sides[k as usize] {
                        if k <= node.split {
                            assert!(p[a] <= split.plane + slack);
                        } else {
                            assert!(p[a] >= split.plane - slack);
                        }
                    }
                }
                assert_eq!(nodes[i].leaf_count, node.last - node.first + 1);
            }
        }
    }

    #[test]
    fn small_inputs() {
        let tree = build_octree(&[], 10);
        assert_eq!(tree.nodes_per_level, vec![0; 11]);
        assert!(tree.nodes.is_empty());
        let tree = build_octree(&[[1.0, 2.0, 3.0]; 3], 10);
        assert_eq!(tree.nodes_per_level, vec![1; 11]);
        assert!(tree.nodes.iter().all(|n| n.prefix == 0));
        assert!(point_kd_splits(&[0], 10, &MortonFrame::from_points(&[], 10)).is_empty());
        // Two points at opposite corners split at the middle along x.
        let pts = [[0.0, 0.0, 0.0], [2.0, 4.0, 8.0]];
        let codes = unique_sorted_codes(&pts, 10);
        let frame = MortonFrame::from_points(&pts, 10);
        let splits = point_kd_splits(&codes, 10, &frame);
        assert_eq!(
            splits,
            vec![KdSplit {
                axis: 0,
                plane: 1.0
            }]
        );
        assert_eq!(
            build_octree(&pts, 10).nodes_per_level,
            [vec![1], vec![2; 10]].concat()
        );
    }
}
