//! The reference of the BVH builder's one climbing kernel (`glsl/bvh/hploc.comp`): H-PLOC
//! ("Hierarchical parallel locally-ordered clustering", Benthin et al., HPG 2024) over the
//! Morton-ordered leaves, with Apetrei's agglomerative LBVH (2014) as its special case.
//!
//! The leaves climb the binary radix tree of their sorted codes bottom-up. Every node of the
//! radix tree holds a short list of *clusters* (subtrees already built), in Morton order: a
//! leaf holds itself, a node the concatenation of its children's lists. Whenever a node's
//! range holds more than `merge_threshold` leaves (and always at the root), its list is
//! reduced by PLOC (Meister & Bittner 2018) to at most `merge_threshold` clusters (one at
//! the root). Each PLOC iteration finds every cluster's nearest neighbour within
//! `search_radius` positions, the one whose union with it has the least surface area (equal
//! areas: the nearer pair, then the pair starting at an even position), and merges every
//! mutual pair into a new node (the lower position on the left, the merged cluster taking its
//! place); the rest keep their order.
//! The globally least pair is always mutual, so every iteration merges.
//!
//! With a threshold of one, every node's two clusters merge at once: the tree is the binary
//! radix tree itself (Karras 2012), built in the same climb that fits its boxes, which is
//! Apetrei's construction. Larger thresholds give trees of SAH quality close to a full
//! sweep for little more work, since the searches stay within a workgroup's few clusters.
//!
//! Nodes are numbered as the GPU numbers them, without a counter: a cluster's id is its least
//! leaf position, every merge retires the larger id of its two clusters, and the node takes
//! that id less one as its index; the root takes index 0 and the node there moves to the
//! root's index. The trees are the same node for node.

use super::cpu::{Lbvh, MortonLeaves, build_radix_tree, internal_node_count, radix_node};
use super::{BvhNode, INVALID_CHILD, LEAF_BIT, NO_PARENT};
use crate::geom::aabb::{Bounds, EMPTY_BOUNDS, union};
use crate::geom::morton::MortonBits;

/// How the climb clusters (`LbvhParams::quality` chooses one of two settings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterParams {
    /// The most clusters a node below the root keeps (1: the radix tree itself).
    pub merge_threshold: u32,
    /// How many positions either side of a cluster its nearest-neighbour search looks.
    pub search_radius: u32,
}

/// A subtree built so far: its box, its reference (`LEAF_BIT | k` or an internal node), its
/// leaf count and its id (its least leaf position). The GPU's `Cluster` (`glsl/bvh/hploc.comp`)
/// keeps the box and reference, and the id or the height in one tag.
#[derive(Clone, Copy, Debug)]
struct Cluster {
    bounds: Bounds,
    reference: u32,
    leaves: u32,
    id: u32,
}

/// Half the surface area of a box in `f32`, in the order of operations the GPU uses
/// (`precise` there), so both make the same choices.
pub fn half_area(b: &Bounds) -> f32 {
    let d: [f32; 3] = std::array::from_fn(|k| b.1[k] - b.0[k]);
    d[0] * d[1] + d[1] * d[2] + d[2] * d[0]
}

/// How pairs of equal area compare (lower first): the nearer pair, then the pair whose lower
/// position is even, then the lower pair. With the area this orders all pairs, so the least
/// pair is mutual; on a run of equal boxes (or of boxes without area) it pairs neighbours
/// (0, 1), (2, 3), ... instead of growing one cluster, which would make a chain.
fn tie_break(i: usize, j: usize) -> usize {
    2 * i.abs_diff(j) + (i.min(j) & 1)
}

/// Bytes the climbing kernel reads and writes in device memory, counted from its access
/// pattern as the reference replays the climb: a work counter, the same on every device.
/// Atomic exchanges count as a read and a write; shared memory is not counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClimbTraffic {
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
}

/// Bytes of a `Cluster`, a `BvhNode`, and the reads of a leaf's triangle (its primitive id,
/// three indices, three vertices).
const CLUSTER: u64 = 32;
const NODE: u64 = 64;
const LEAF_READS: u64 = 4 + 12 + 36;

impl ClimbTraffic {
    pub(crate) fn read(&mut self, bytes: u64) {
        self.bytes_read += bytes;
    }

    pub(crate) fn write(&mut self, bytes: u64) {
        self.bytes_written += bytes;
    }

    /// A child link written into a node, if `child` is a node.
    fn link(&mut self, child: u32) {
        if child & LEAF_BIT == 0 {
            self.write(4);
        }
    }
}

/// A tree built by the reference, with the traffic of the climb that builds it.
pub struct Clustered {
    /// The nodes, as the GPU numbers them.
    pub nodes: Vec<BvhNode>,
    /// What the climb moves in device memory.
    pub traffic: ClimbTraffic,
}

/// The tree under construction: nodes numbered as the GPU numbers them.
struct Nodes {
    nodes: Vec<BvhNode>,
    traffic: ClimbTraffic,
}

impl Nodes {
    /// The node over `left` and `right` (`left` the lower id): its index is the id its merge
    /// retires less one, the root's 0 (the node there moves to the root's index).
    fn merge(&mut self, mut left: Cluster, mut right: Cluster, root: bool) -> Cluster {
        let mut index = right.id - 1;
        if root && index != 0 {
            let moved = self.nodes[0];
            self.nodes[index as usize] = moved;
            for child in [moved.left, moved.right] {
                if child & LEAF_BIT == 0 {
                    self.nodes[child as usize].parent = index;
                }
            }
            if left.reference == 0 {
                left.reference = index;
            } else if right.reference == 0 {
                right.reference = index;
            } else {
                let parent = &mut self.nodes[moved.parent as usize];
                if parent.left == 0 {
                    parent.left = index;
                } else {
                    parent.right = index;
                }
            }
            index = 0;
        }
        self.nodes[index as usize] = BvhNode {
            left_min: left.bounds.0,
            left: left.reference,
            left_max: left.bounds.1,
            right: right.reference,
            right_min: right.bounds.0,
            parent: NO_PARENT,
            right_max: right.bounds.1,
            leaf_count: left.leaves + right.leaves,
        };
        for child in [left.reference, right.reference] {
            if child & LEAF_BIT == 0 {
                self.nodes[child as usize].parent = index;
            }
            self.traffic.link(child);
        }
        self.traffic.write(NODE);
        Cluster {
            bounds: union(&left.bounds, &right.bounds),
            reference: index,
            leaves: left.leaves + right.leaves,
            id: left.id,
        }
    }
}

/// PLOC iterations over `clusters` until at most `target` remain (`root`: the last merge
/// makes the root; `lists`: the workgroup reduces lists, reading its operands' nodes).
fn reduce(
    nodes: &mut Nodes,
    clusters: &mut Vec<Cluster>,
    target: usize,
    radius: usize,
    root: bool,
    lists: bool,
) {
    while clusters.len() > target {
        let c = clusters.len();
        let nearest: Vec<usize> = (0..c)
            .map(|i| {
                let mut best = (f32::INFINITY, usize::MAX, i);
                for j in i.saturating_sub(radius)..(i + radius + 1).min(c) {
                    if j != i {
                        let area = half_area(&union(&clusters[i].bounds, &clusters[j].bounds));
                        let tie = tie_break(i, j);
                        if area < best.0 || (area == best.0 && tie < best.1) {
                            best = (area, tie, j);
                        }
                    }
                }
                best.2
            })
            .collect();
        let mut kept = Vec::with_capacity(c);
        for i in 0..c {
            let j = nearest[i];
            if nearest[j] != i {
                kept.push(clusters[i]);
            } else if i < j {
                if lists {
                    // A list's node operands: leaf counts and heights read from their nodes.
                    for operand in [clusters[i], clusters[j]] {
                        if operand.reference & LEAF_BIT == 0 {
                            nodes.traffic.read(8);
                        }
                    }
                }
                kept.push(nodes.merge(clusters[i], clusters[j], root && c == 2));
            }
        }
        *clusters = kept;
    }
}

/// The tree over leaves in Morton order: `sorted_keys` (`key_bits` 32 or 64, as
/// [`build_radix_tree`] takes them) and each leaf's box.
pub fn cluster_sorted(
    sorted_keys: &[u64],
    key_bits: u32,
    leaf_boxes: &[Bounds],
    params: ClusterParams,
) -> Clustered {
    let n = sorted_keys.len();
    let mut traffic = ClimbTraffic::default();
    // Every leaf reads its triangle, writes it in leaf order and publishes its cluster.
    traffic.read(LEAF_READS * n as u64);
    traffic.write((48 + CLUSTER) * n as u64);
    if n < 2 {
        let mut nodes = build_radix_tree(sorted_keys, key_bits);
        if let (Some(root), Some(b)) = (nodes.first_mut(), leaf_boxes.first()) {
            (root.left_min, root.left_max) = *b;
            (root.right_min, root.right_max) = EMPTY_BOUNDS;
            root.right = INVALID_CHILD;
        }
        return Clustered { nodes, traffic };
    }
    let radix = build_radix_tree(sorted_keys, key_bits);
    let mut nodes = Nodes {
        nodes: vec![bytemuck::Zeroable::zeroed(); internal_node_count(n)],
        traffic,
    };
    let key_bytes = key_bits as u64 / 8;
    let threshold = params.merge_threshold.max(1) as usize;
    let radius = params.search_radius.max(1) as usize;
    // Post-order over the radix tree: the clusters of each finished child on a stack.
    let leaf = |k: u32| Cluster {
        bounds: leaf_boxes[k as usize],
        reference: LEAF_BIT | k,
        leaves: 1,
        id: k,
    };
    let mut lists: Vec<Vec<Cluster>> = Vec::new();
    let mut stack = vec![(0u32, false)];
    while let Some((i, children_done)) = stack.pop() {
        let node = radix[i as usize];
        if !children_done {
            stack.push((i, true));
            for child in [node.right, node.left] {
                if child & LEAF_BIT == 0 {
                    stack.push((child, false));
                }
            }
            continue;
        }
        // Both children arrive: each compares the keys across its range's ends (unless one
        // is an end of all leaves) and exchanges its ends at their boundary; the second
        // resets the boundary's slot.
        let range = radix_node(sorted_keys, key_bits, i as usize);
        let (first, split, last) = (range.first, range.split + 1, range.last);
        for (a, b) in [(first, split - 1), (split, last)] {
            if a > 0 && (b as usize) < n - 1 {
                nodes.traffic.read(4 * key_bytes);
            }
            nodes.traffic.read(4);
            nodes.traffic.write(4);
        }
        nodes.traffic.write(4);
        // Children were pushed right then left, so they finished left first.
        let right = if node.right & LEAF_BIT != 0 {
            vec![leaf(node.right & !LEAF_BIT)]
        } else {
            lists.pop().expect("right child's clusters")
        };
        let mut clusters = if node.left & LEAF_BIT != 0 {
            vec![leaf(node.left & !LEAF_BIT)]
        } else {
            lists.pop().expect("left child's clusters")
        };
        clusters.extend(right);
        let root = i == 0;
        if root || node.leaf_count as usize > threshold {
            let target = if root { 1 } else { threshold };
            let traffic = &mut nodes.traffic;
            if threshold == 1 {
                // The second arrival reads its sibling's cluster and publishes the merge.
                traffic.read(CLUSTER);
                traffic.write(CLUSTER);
            } else {
                // The workgroup reads the children's counts (where they merged) and
                // clusters, and writes back the range's clusters and count.
                for size in [split - first, last + 1 - split] {
                    if size as usize > threshold {
                        traffic.read(4);
                    }
                }
                traffic.read(CLUSTER * clusters.len() as u64);
            }
            reduce(
                &mut nodes,
                &mut clusters,
                target,
                radius,
                root,
                threshold > 1,
            );
            if threshold > 1 {
                nodes
                    .traffic
                    .write(CLUSTER * clusters.len() as u64 + 4 * !root as u64);
            }
        }
        lists.push(clusters);
    }
    // The root's height, for the host.
    nodes.traffic.write(4);
    Clustered {
        nodes: nodes.nodes,
        traffic: nodes.traffic,
    }
}

/// The tree of a triangle mesh: its [`MortonLeaves`] (sorted as
/// [`crate::accel::bvh::cpu::build_lbvh`] sorts them), then [`cluster_sorted`].
pub fn build_clustered(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    bits: MortonBits,
    params: ClusterParams,
) -> Lbvh {
    let leaves = MortonLeaves::of(positions, triangles, bits);
    Lbvh {
        nodes: cluster_sorted(&leaves.keys, bits.key_bits(), &leaves.leaf_boxes, params).nodes,
        leaf_primitives: leaves.leaf_primitives,
    }
}
