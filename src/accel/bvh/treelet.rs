//! The reference of the BVH builder's treelet passes (`glsl/bvh/treelets.comp`): treelet
//! restructuring (Karras & Aila, "Fast parallel construction of high-quality bounding volume
//! hierarchies", HPG 2013) after the climb.
//!
//! A pass visits every internal node bottom-up, each after both of its children. At a node
//! `p` of at least [`TreeletParams::min_leaves`] leaves it grows a *treelet*: starting from
//! `p`'s two children, it opens the treelet leaf of largest surface area that is an internal
//! node (its two children take its place: the left one its slot, the right one a new last
//! slot) until the treelet has [`TREELET_LEAVES`] leaves or none can be opened. It then finds,
//! by dynamic programming over the subsets of those leaves, the binary tree over them of least
//! SAH cost, and rebuilds the treelet in that shape if it is cheaper than the one there,
//! reusing the treelet's internal nodes: `p` stays its root, and each node made takes the
//! next of the others (in the order they were opened) for each child that is not a leaf, left
//! then right, the nodes made depth first, left first.
//!
//! With one triangle per leaf every tree over the treelet's leaves holds the same leaves, so
//! only its internal nodes' areas differ: a subset of two leaves or more costs its box's half
//! area plus the least `cost(P) + cost(S \ P)` over the partitions of `S` (`P` holding `S`'s
//! lowest leaf, enumerated in increasing order; the first least wins), a single leaf nothing.
//! The treelet as it stands costs its root's half area plus those of the nodes opened, summed
//! in the order they were opened. The new tree puts `P` on the left. Only a strictly cheaper
//! shape replaces the treelet, so a pass never makes a tree worse. All sums are in `f32` as
//! the GPU makes them. The choices depend only on the subtree below `p`, so the order in which
//! the GPU's invocations reach the nodes does not change the tree.

use super::cpu::top_down_order;
use super::ploc::{ClimbTraffic, half_area};
use super::{Bvh, BvhNode, LEAF_BIT};
use crate::geom::aabb::{Bounds, union};
use crate::shaders;
use crate::vk::{Buffer, Context, MemoryKind, Pipeline, Recorder, Result};
use std::sync::Arc;

/// The most leaves of a treelet (the GPU's `TREELET_LEAVES`).
pub const TREELET_LEAVES: usize = 7;

/// How a build restructures its tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeletParams {
    /// Passes over the tree (0: none).
    pub passes: u32,
    /// The fewest leaves below a node whose treelet is restructured.
    pub min_leaves: u32,
}

/// Push constants of `treelets.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TreeletPush {
    /// Internal nodes, restructured in place.
    pub nodes_address: u64,
    /// Each leaf's parent (u32), kept up to date.
    pub leaf_parents_address: u64,
    /// Each internal node's subtree height (u32), written by the pass.
    pub heights_address: u64,
    /// Arrival counts (u32 per internal node, zero between passes).
    pub arrivals_address: u64,
    /// The root's height written (host-visible).
    pub height_address: u64,
    /// Leaves.
    pub host_count: u32,
    /// Padding.
    pub pad: u32,
}

/// The GPU's treelet passes: their pipeline and scratch (12 bytes per leaf: each leaf's
/// parent, written by the climb and kept up to date by the passes, and per internal node its
/// height and its arrival count, zero between passes).
pub struct TreeletPasses {
    params: TreeletParams,
    pipeline: Arc<Pipeline>,
    workgroup_size: u32,
    scratch: Buffer,
    capacity: u64,
}

impl TreeletPasses {
    /// Passes of `params` over trees of up to `capacity` leaves.
    pub fn new(ctx: &Context, params: TreeletParams, capacity: u32) -> Result<Self> {
        let capacity = capacity.max(1) as u64;
        let scratch = ctx.create_buffer("bvh treelets", 12 * capacity, MemoryKind::Device)?;
        // Every pass leaves the arrival counts as it found them.
        ctx.submit_and_wait(|rec| {
            rec.fill(&scratch, 8 * capacity, 4 * capacity, 0);
            Ok(())
        })?;
        // Like the climb, small workgroups: invocations climb for very different numbers of
        // levels, and a workgroup ends with its last one. The workgroup solves a treelet's
        // subsets together: 35 of them at most have the same size.
        let workgroup_size = 32u32.next_multiple_of(ctx.caps().subgroup_size);
        Ok(Self {
            params,
            pipeline: ctx.pipeline(
                &shaders::BVH_TREELETS,
                workgroup_size,
                &[("MIN_LEAVES", params.min_leaves.max(3))],
            )?,
            workgroup_size,
            scratch,
            capacity,
        })
    }

    /// Where the climb writes each leaf's parent.
    pub(crate) fn leaf_parents_address(&self) -> u64 {
        self.scratch.address()
    }

    /// Records the passes over `bvh`, just built by a climb that wrote its leaves' parents
    /// to [`Self::leaf_parents_address`], each followed by a compute → compute barrier. A tree
    /// of fewer than three leaves has nothing to restructure.
    pub(crate) fn record(&self, rec: &mut Recorder, bvh: &Bvh) -> Result<()> {
        let n = bvh.primitive_count();
        if n < 3 || self.params.passes == 0 {
            return Ok(());
        }
        let base = self.scratch.address();
        let push = TreeletPush {
            nodes_address: bvh.nodes.address(),
            leaf_parents_address: base,
            heights_address: base + 4 * self.capacity,
            arrivals_address: base + 8 * self.capacity,
            height_address: bvh.height_address(),
            host_count: n,
            pad: 0,
        };
        for _ in 0..self.params.passes {
            rec.dispatch(&self.pipeline, &push, n.div_ceil(self.workgroup_size))?;
            rec.barrier_compute_to_compute();
        }
        Ok(())
    }
}

/// A leaf of a treelet: a child reference and the box its parent stores for it.
#[derive(Clone, Copy, Debug)]
struct TreeletLeaf {
    reference: u32,
    bounds: Bounds,
}

/// A node's two children as treelet leaves.
fn children_of(node: &BvhNode) -> [TreeletLeaf; 2] {
    [
        TreeletLeaf {
            reference: node.left,
            bounds: (node.left_min, node.left_max),
        },
        TreeletLeaf {
            reference: node.right,
            bounds: (node.right_min, node.right_max),
        },
    ]
}

/// Bytes of a `BvhNode`, and of one of its fields or of a u32 of scratch.
const NODE: u64 = 64;
const WORD: u64 = 4;

/// The passes of `params` over the tree `nodes` (internal nodes, root at 0, over more than two
/// leaves; smaller trees are left as they are). Returns the bytes the GPU's passes move in
/// device memory, counted from their access pattern.
pub fn restructure(nodes: &mut [BvhNode], params: TreeletParams) -> ClimbTraffic {
    let mut traffic = ClimbTraffic::default();
    if nodes.len() < 2 {
        return traffic;
    }
    let mut heights = vec![0u32; nodes.len()];
    for _ in 0..params.passes {
        // Every leaf reads its parent; every node takes two arrivals and resets its count.
        let leaves = nodes.len() as u64 + 1;
        traffic.read(WORD * leaves);
        traffic.read(2 * WORD * nodes.len() as u64);
        traffic.write(3 * WORD * nodes.len() as u64);
        // Children before parents.
        for p in top_down_order(nodes).into_iter().rev() {
            restructure_treelet(nodes, &mut heights, p as u32, params, &mut traffic);
            // The climb reads the parent (the root writes its height for the host).
            traffic.write(WORD * (p == 0) as u64);
            traffic.read(WORD * (p != 0) as u64);
        }
    }
    traffic
}

/// The height of a treelet leaf's subtree (0 for a triangle), from `heights`.
fn height_of(leaf: &TreeletLeaf, heights: &[u32]) -> u32 {
    if leaf.reference & LEAF_BIT != 0 {
        0
    } else {
        heights[leaf.reference as usize]
    }
}

/// Treelet leaves that are internal nodes.
fn internal_count(leaves: &[TreeletLeaf]) -> u64 {
    leaves
        .iter()
        .filter(|l| l.reference & LEAF_BIT == 0)
        .count() as u64
}

/// Handles node `p`, whose children's subtrees are final: restructures its treelet and
/// records its height.
fn restructure_treelet(
    nodes: &mut [BvhNode],
    heights: &mut [u32],
    p: u32,
    params: TreeletParams,
    traffic: &mut ClimbTraffic,
) {
    let root = nodes[p as usize];
    traffic.read(NODE);
    let children = children_of(&root);
    let height = height_of(&children[0], heights).max(height_of(&children[1], heights)) + 1;
    // A node of few leaves only records its height, from its children's.
    let keep = |heights: &mut [u32], traffic: &mut ClimbTraffic| {
        traffic.read(WORD * internal_count(&children));
        heights[p as usize] = height;
        traffic.write(WORD);
    };
    if root.leaf_count < params.min_leaves.max(3) {
        keep(heights, traffic);
        return;
    }
    // The invocation that grows the treelet reads each node it opens.
    let mut leaves = children.to_vec();
    let mut internals = vec![p];
    let mut current = half_area(&union(&leaves[0].bounds, &leaves[1].bounds));
    while leaves.len() < TREELET_LEAVES {
        let mut opened: Option<(usize, f32)> = None;
        for (i, leaf) in leaves.iter().enumerate() {
            let area = half_area(&leaf.bounds);
            if leaf.reference & LEAF_BIT == 0 && opened.is_none_or(|(_, best)| area > best) {
                opened = Some((i, area));
            }
        }
        let Some((i, area)) = opened else { break };
        current += area;
        let node = nodes[leaves[i].reference as usize];
        traffic.read(NODE);
        internals.push(leaves[i].reference);
        let [left, right] = children_of(&node);
        leaves[i] = left;
        leaves.push(right);
    }
    // Each leaf's height and leaf count.
    traffic.read(2 * WORD * internal_count(&leaves));
    let leaf_heights: Vec<u32> = leaves.iter().map(|l| height_of(l, heights)).collect();
    let m = leaves.len();
    let full = (1usize << m) - 1;
    let mut bounds = vec![leaves[0].bounds; full + 1];
    let mut cost = vec![0f32; full + 1];
    let mut best_part = vec![0usize; full + 1];
    let mut subset_height = vec![0u32; full + 1];
    for s in 1..=full {
        let low = s & s.wrapping_neg();
        let rest = s ^ low;
        if rest == 0 {
            let k = low.trailing_zeros() as usize;
            bounds[s] = leaves[k].bounds;
            subset_height[s] = leaf_heights[k];
            continue;
        }
        bounds[s] = union(&bounds[rest], &bounds[low]);
        // Partitions (P, S \ P) with P holding S's lowest leaf: P = low | r, r a proper
        // subset of the rest, in increasing order.
        let mut least = f32::INFINITY;
        let mut r = 0usize;
        loop {
            let part = low | r;
            let c = cost[part] + cost[s ^ part];
            if c < least {
                least = c;
                best_part[s] = part;
            }
            r = r.wrapping_sub(rest) & rest;
            if r == rest {
                break;
            }
        }
        cost[s] = half_area(&bounds[s]) + least;
        let part = best_part[s];
        subset_height[s] = subset_height[part].max(subset_height[s ^ part]) + 1;
    }
    if cost[full] >= current {
        keep(heights, traffic);
        return;
    }

    let counts: Vec<u32> = leaves
        .iter()
        .map(|l| {
            if l.reference & LEAF_BIT != 0 {
                1
            } else {
                nodes[l.reference as usize].leaf_count
            }
        })
        .collect();
    let mut next_internal = 1;
    let mut stack = vec![(full, p, root.parent)];
    while let Some((s, index, parent)) = stack.pop() {
        let left_set = best_part[s];
        let right_set = s ^ left_set;
        let mut child = |set: usize| -> u32 {
            if set.count_ones() == 1 {
                leaves[set.trailing_zeros() as usize].reference
            } else {
                let q = internals[next_internal];
                next_internal += 1;
                q
            }
        };
        let (left, right) = (child(left_set), child(right_set));
        let leaf_count: u32 = (0..m).filter(|k| s >> k & 1 != 0).map(|k| counts[k]).sum();
        nodes[index as usize] = BvhNode {
            left_min: bounds[left_set].0,
            left,
            left_max: bounds[left_set].1,
            right,
            right_min: bounds[right_set].0,
            parent,
            right_max: bounds[right_set].1,
            leaf_count,
        };
        heights[index as usize] = subset_height[s];
        traffic.write(NODE + WORD);
        for (set, c) in [(right_set, right), (left_set, left)] {
            if set.count_ones() > 1 {
                stack.push((set, c, index));
            } else {
                // A leaf's parent, or an internal leaf's parent link.
                traffic.write(WORD);
                if c & LEAF_BIT == 0 {
                    nodes[c as usize].parent = index;
                }
            }
        }
    }
}
