//! A full-sweep SAH BVH builder: the quality baseline the LBVH's SAH cost is compared with.
//!
//! Top-down, each node evaluates every split position along every axis of its primitives
//! sorted by centroid, with prefix and suffix boxes, and takes the one of least
//! `SA(left)·N(left) + SA(right)·N(right)` (the greedy SAH with the cost constants of
//! [`crate::accel::bvh::cpu`]; ties go to the lower axis, then the earlier position). A node whose
//! centroids all coincide is split in the middle. Splitting goes down to one primitive per
//! leaf, so the tree is in the LBVH's [`BvhNode`] format and comparable with
//! [`tree_stats`](crate::accel::bvh::cpu::tree_stats). The primitives are sorted along each axis once
//! and every split partitions the three orders stably, so a build is O(n · depth).

use crate::accel::bvh::cpu::{Lbvh, build_radix_tree, fit_boxes};
use crate::accel::bvh::{BvhNode, LEAF_BIT, NO_PARENT};
use crate::geom::aabb::{Bounds, EMPTY_BOUNDS, centroid, surface_area, triangle_bounds, union};

/// A primitive in one of the per-axis orders.
#[derive(Clone, Copy)]
struct Item {
    /// The primitive's box.
    bounds: Bounds,
    /// The primitive's index.
    primitive: u32,
}

/// A child still to be made: primitives `start..end` of the orders, below `parent`.
struct Pending {
    /// First primitive.
    start: usize,
    /// One past the last primitive.
    end: usize,
    /// The node that references it, or [`NO_PARENT`] for the root.
    parent: u32,
    /// Whether it is the parent's left child.
    is_left: bool,
}

/// The SAH BVH of a triangle mesh: internal nodes numbered in depth-first order (root 0),
/// leaf `k` the `k`-th leaf in depth-first order, left child first.
pub fn build_sah_bvh(positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> Lbvh {
    let bounds = triangle_bounds(positions, triangles);
    let n = bounds.len();
    if n < 2 {
        let mut nodes = build_radix_tree(&[0][..n], 32);
        fit_boxes(&mut nodes, &bounds);
        return Lbvh {
            nodes,
            leaf_primitives: (0..n as u32).collect(),
        };
    }
    // The primitives by centroid along each axis, ties by index.
    let orders: [Vec<Item>; 3] = std::array::from_fn(|axis| {
        let mut keyed: Vec<(f32, Item)> = bounds
            .iter()
            .zip(0..)
            .map(|(b, primitive)| {
                let item = Item {
                    bounds: *b,
                    primitive,
                };
                (centroid(b)[axis], item)
            })
            .collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
        keyed.into_iter().map(|(_, item)| item).collect()
    });
    let mut builder = Builder {
        orders,
        goes_left: vec![false; n],
        suffix_area: vec![0.0; n],
        scratch: Vec::with_capacity(n),
        nodes: Vec::with_capacity(n - 1),
        leaf_primitives: Vec::with_capacity(n),
    };
    builder.build(n);
    Lbvh {
        nodes: builder.nodes,
        leaf_primitives: builder.leaf_primitives,
    }
}

/// The build's state: the three orders, partitioned in place node by node.
struct Builder {
    /// The primitives sorted by centroid along x, y and z, each node's a contiguous range.
    orders: [Vec<Item>; 3],
    /// Per primitive, whether the split being made sends it left.
    goes_left: Vec<bool>,
    /// Surface areas of the suffixes of the range being swept.
    suffix_area: Vec<f64>,
    /// The right-going items while a range is partitioned.
    scratch: Vec<Item>,
    /// Internal nodes made so far.
    nodes: Vec<BvhNode>,
    /// The primitives of the leaves made so far.
    leaf_primitives: Vec<u32>,
}

impl Builder {
    /// Makes the tree over all `n` primitives, children in depth-first order.
    fn build(&mut self, n: usize) {
        let mut stack = vec![Pending {
            start: 0,
            end: n,
            parent: NO_PARENT,
            is_left: true,
        }];
        while let Some(p) = stack.pop() {
            let child = if p.end - p.start == 1 {
                self.leaf_primitives.push(self.orders[0][p.start].primitive);
                LEAF_BIT | (self.leaf_primitives.len() - 1) as u32
            } else {
                let index = self.nodes.len() as u32;
                let mid = self.split(p.start, p.end, p.parent);
                stack.push(Pending {
                    start: mid,
                    end: p.end,
                    parent: index,
                    is_left: false,
                });
                stack.push(Pending {
                    start: p.start,
                    end: mid,
                    parent: index,
                    is_left: true,
                });
                index
            };
            if let Some(parent) = self.nodes.get_mut(p.parent as usize) {
                if p.is_left {
                    parent.left = child;
                } else {
                    parent.right = child;
                }
            }
        }
    }

    /// Splits primitives `start..end` (at least two) into a new node below `parent`, with
    /// both child boxes set, and returns where the right child's primitives begin.
    fn split(&mut self, start: usize, end: usize, parent: u32) -> usize {
        let count = end - start;
        let identical = (0..3).all(|axis| {
            let order = &self.orders[axis];
            centroid(&order[start].bounds)[axis] == centroid(&order[end - 1].bounds)[axis]
        });
        let (axis, left_count) = if identical {
            (0, count / 2)
        } else {
            self.best_split(start, end)
        };
        let mid = start + left_count;
        let order = &self.orders[axis];
        let fold = |items: &[Item]| items.iter().fold(EMPTY_BOUNDS, |b, i| union(&b, &i.bounds));
        let (left, right) = (fold(&order[start..mid]), fold(&order[mid..end]));
        for (k, item) in order[start..end].iter().enumerate() {
            self.goes_left[item.primitive as usize] = k < left_count;
        }
        for other in (0..3).filter(|&a| a != axis) {
            let items = &mut self.orders[other][start..end];
            self.scratch.clear();
            let mut kept = 0;
            for k in 0..count {
                let item = items[k];
                if self.goes_left[item.primitive as usize] {
                    items[kept] = item;
                    kept += 1;
                } else {
                    self.scratch.push(item);
                }
            }
            items[kept..].copy_from_slice(&self.scratch);
        }
        self.nodes.push(BvhNode {
            left_min: left.0,
            left_max: left.1,
            right_min: right.0,
            right_max: right.1,
            parent,
            leaf_count: count as u32,
            ..bytemuck::Zeroable::zeroed()
        });
        mid
    }

    /// The axis and left-child size of least SAH cost over primitives `start..end`.
    fn best_split(&mut self, start: usize, end: usize) -> (usize, usize) {
        let count = end - start;
        let mut best = (f64::INFINITY, 0, count / 2);
        for (axis, order) in self.orders.iter().enumerate() {
            let items = &order[start..end];
            let mut acc = EMPTY_BOUNDS;
            for k in (1..count).rev() {
                acc = union(&acc, &items[k].bounds);
                self.suffix_area[k] = surface_area(&acc);
            }
            let mut acc = EMPTY_BOUNDS;
            for k in 1..count {
                acc = union(&acc, &items[k - 1].bounds);
                let cost = surface_area(&acc) * k as f64 + self.suffix_area[k] * (count - k) as f64;
                if cost < best.0 {
                    best = (cost, axis, k);
                }
            }
        }
        (best.1, best.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accel::bvh::cpu::tests::Soup;
    use crate::accel::bvh::cpu::{TreeStats, build_lbvh, check_invariants};
    use crate::geom::morton::MortonBits;

    fn check_sah(soup: &Soup) -> TreeStats {
        let bvh = build_sah_bvh(&soup.positions, &soup.triangles);
        check_invariants(&bvh.nodes, &bvh.leaf_primitives, &soup.bounds())
            .unwrap_or_else(|e| panic!("{} triangles: {e}", soup.triangles.len()))
    }

    fn lbvh_cost(soup: &Soup) -> f64 {
        let bvh = build_lbvh(&soup.positions, &soup.triangles, MortonBits::Bits63);
        check_invariants(&bvh.nodes, &bvh.leaf_primitives, &soup.bounds())
            .unwrap()
            .sah_cost
    }

    #[test]
    fn valid_at_many_sizes_and_cheaper_than_lbvh() {
        for n in [0, 1, 2, 3, 7, 8, 9, 255, 256, 257, 10_000] {
            let soup = Soup::random(n, 100 + n as u64);
            let stats = check_sah(&soup);
            assert_eq!(stats.leaves, n);
            if n >= 256 {
                assert!(stats.sah_cost < lbvh_cost(&soup), "{n} triangles");
            }
        }
    }

    #[test]
    fn identical_centroids_split_in_the_middle() {
        let soup = Soup::new(1000, 12, 0.0, |_, _| [1.0, 2.0, 3.0]);
        let stats = check_sah(&soup);
        assert_eq!(stats.depth, 10);
    }

    #[test]
    fn leaves_and_nodes_in_depth_first_order() {
        let soup = Soup::random(300, 13);
        let bvh = build_sah_bvh(&soup.positions, &soup.triangles);
        let (mut next_node, mut next_leaf) = (0, 0);
        let mut stack = vec![0];
        while let Some(c) = stack.pop() {
            if c & LEAF_BIT != 0 {
                assert_eq!(c, LEAF_BIT | next_leaf);
                next_leaf += 1;
            } else {
                assert_eq!(c, next_node);
                next_node += 1;
                let node = bvh.nodes[c as usize];
                stack.extend([node.right, node.left]);
            }
        }
        assert_eq!((next_node, next_leaf), (299, 300));
    }

    #[test]
    fn root_split_is_the_cheapest() {
        let soup = Soup::random(40, 14);
        let bounds = soup.bounds();
        let bvh = build_sah_bvh(&soup.positions, &soup.triangles);
        let root = bvh.nodes[0];
        let cost = |b: &[Bounds]| surface_area(&b.iter().fold(EMPTY_BOUNDS, |a, x| union(&a, x)));
        let left = match root.left {
            c if c & LEAF_BIT != 0 => 1,
            c => bvh.nodes[c as usize].leaf_count,
        };
        let right = 40 - left;
        let chosen = surface_area(&(root.left_min, root.left_max)) * left as f64
            + surface_area(&(root.right_min, root.right_max)) * right as f64;
        for axis in 0..3 {
            let mut sorted = bounds.clone();
            sorted.sort_by(|a, b| centroid(a)[axis].total_cmp(&centroid(b)[axis]));
            for k in 1..40 {
                let c = cost(&sorted[..k]) * k as f64 + cost(&sorted[k..]) * (40 - k) as f64;
                assert!(chosen <= c * (1.0 + 1e-12), "axis {axis}, {k} left");
            }
        }
    }
}
