//! The bounding interval hierarchy (Wächter & Keller 2006), built with a binned SAH as in
//! the GPU work-queue builder of seed 004: its node format and parameters, and the CPU
//! reference builder and traversal ([`cpu`]) the GPU builder is checked against.
//!
//! A BIH node splits its primitives by one axis into two children and keeps, instead of
//! boxes, two planes: the left child's maximum and the right child's minimum on that axis
//! (`clip`). The two intervals may overlap (a triangle straddling the split goes to one side,
//! whole) or leave a gap (empty space between the children). The primitives are partitioned
//! in place, so every primitive is in exactly one leaf and a leaf is a run of
//! [`BihTree::leaf_primitives`].
//!
//! A ray reaching a node has been clipped by the planes of all its ancestors: the node's
//! *region* is the scene box cut by them, larger than the box of its primitives on every axis
//! no ancestor split. The SAH therefore prices children by their regions (the paper's child
//! bounds "adjusted with respect to the split direction", seed 004 Fig. 1), and a node whose
//! region holds much empty space can instead become a *clip node* (Wächter & Keller's empty
//! space cut): one child, reached only between two planes on one axis, the bounds of the
//! node's primitives there. A clip node's child is never another clip node, which bounds the
//! tree (below).
//!
//! Children are stored next to each other (a split's left child, then its right).
//!
//! Size: a tree over `n` primitives has at most `n - 1` splits (both children hold
//! primitives), so at most `2n - 1` split and leaf nodes; each clip node sits above a split
//! or above a leaf of more than `max_leaf` primitives, so there are at most
//! `n - 1 + n / (max_leaf + 1)` of them ([`max_nodes`]).

pub mod build;
pub mod cpu;
pub mod trace;

use crate::geom::aabb::Bounds;

/// The leaf tag in a node's two low bits (axes are 0-2).
pub const BIH_LEAF: u32 = 3;

/// An internal node's `word1`: a split (two children).
pub const BIH_SPLIT: u32 = 0;

/// An internal node's `word1`: a clip node (one child, between `clip[0]` and `clip[1]`).
pub const BIH_CLIP: u32 = 1;

/// The most nodes a BIH over `primitives` primitives with leaves of up to `max_leaf` can
/// have (see the module's documentation).
pub fn max_nodes(primitives: u32, max_leaf: u32) -> u64 {
    let n = primitives.max(1) as u64;
    2 * n - 1 + (n - 1) + n / (max_leaf as u64 + 1)
}

/// A BIH node, 16 bytes (`BihNode` in `glsl/bih/format.glsl`).
/// `word0` holds the axis (0-2) or [`BIH_LEAF`] in bits 0-1, and above them the index of the
/// first child (internal; a split's right child follows its left) or the primitive count
/// (leaf); `word1` is the leaf's first entry in [`BihTree::leaf_primitives`], or for an
/// internal node [`BIH_SPLIT`] or [`BIH_CLIP`]; `clip` holds the planes on the axis: a
/// split's left child maximum and right child minimum, a clip node's child minimum and
/// maximum (0 for leaves).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BihNode {
    /// Axis or leaf tag, and the left child or primitive count.
    pub word0: u32,
    /// A leaf's first primitive entry.
    pub word1: u32,
    /// The left child's maximum and the right child's minimum on the axis.
    pub clip: [f32; 2],
}

const _: () = assert!(std::mem::size_of::<BihNode>() == 16);

impl BihNode {
    /// A split on `axis`, its children at `left` and `left + 1`, the left one ending at
    /// `clip[0]` and the right one starting at `clip[1]`.
    pub fn split(axis: usize, left: u32, clip: [f32; 2]) -> Self {
        debug_assert!(axis < 3 && left < 1 << 30);
        Self {
            word0: axis as u32 | (left << 2),
            word1: BIH_SPLIT,
            clip,
        }
    }

    /// A clip node on `axis`: its one child at `child`, reached between `planes[0]` and
    /// `planes[1]`.
    pub fn clip(axis: usize, child: u32, planes: [f32; 2]) -> Self {
        debug_assert!(axis < 3 && child < 1 << 30);
        Self {
            word0: axis as u32 | (child << 2),
            word1: BIH_CLIP,
            clip: planes,
        }
    }

    /// A leaf of `count` primitives from entry `first` of the leaf primitive list.
    pub fn leaf(first: u32, count: u32) -> Self {
        debug_assert!(count < 1 << 30);
        Self {
            word0: BIH_LEAF | (count << 2),
            word1: first,
            clip: [0.0; 2],
        }
    }

    /// Whether this is a leaf.
    pub fn is_leaf(&self) -> bool {
        self.word0 & 3 == BIH_LEAF
    }

    /// Whether this is a clip node.
    pub fn is_clip(&self) -> bool {
        !self.is_leaf() && self.word1 == BIH_CLIP
    }

    /// The axis of an internal node.
    pub fn axis(&self) -> usize {
        (self.word0 & 3) as usize
    }

    /// The first child of an internal node (a split's left; its right is the next node).
    pub fn first_child(&self) -> u32 {
        self.word0 >> 2
    }

    /// The primitives of a leaf.
    pub fn primitive_count(&self) -> u32 {
        self.word0 >> 2
    }

    /// A leaf's first entry in the leaf primitive list.
    pub fn first_primitive(&self) -> u32 {
        self.word1
    }
}

/// A BIH: nodes from the root at 0, every primitive once in `leaf_primitives`, and the scene
/// box the root covers (the traversal clips rays to it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BihTree {
    /// Nodes, the root first.
    pub nodes: Vec<BihNode>,
    /// The primitives of the leaves, each leaf a run.
    pub leaf_primitives: Vec<u32>,
    /// The box of every primitive.
    pub bounds: Bounds,
}

/// The largest subtree one small-node workgroup of the GPU builder may build, in primitives
/// (the paper hands nodes under 1024 to its small-node stage). A small-node workgroup loops
/// over its whole subtree, and lavapipe ends every loop of a shader execution once they have
/// run 65,535 iterations in all: a subtree of 128 primitives has at most 446 nodes (leaves of
/// one), and its busiest invocation loops about 80 times per node, well within that.
pub const MAX_SMALL_SUBTREE: u32 = 128;

/// How a BIH is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BihParams {
    /// Bins per axis of the binned SAH (default 32: 31 split candidates, as the paper).
    pub bins: u32,
    /// A node of at most this many primitives is a leaf (default 4; the paper's Fig. 6 trades
    /// it between build and trace time).
    pub max_leaf: u32,
    /// Cost of visiting a node, relative to `intersection_cost` (default 1).
    pub traversal_cost: f32,
    /// Cost of one ray/triangle test (default 1).
    pub intersection_cost: f32,
    /// Nodes this deep are leaves (default and at most [`trace::MAX_DEPTH`], the traversal's
    /// stack): one round of the GPU build per level.
    pub max_depth: u32,
    /// Nodes of more primitives than this are built by the GPU's large-node stage (many
    /// workgroups per node), the others by its small-node stage (one workgroup per subtree).
    /// Default and at most [`MAX_SMALL_SUBTREE`].
    pub large_node: u32,
    /// Whether the builders may make clip nodes (default true; without them every internal
    /// node is a split, as in the paper).
    pub clip_nodes: bool,
}

impl Default for BihParams {
    fn default() -> Self {
        Self {
            bins: 32,
            max_leaf: 4,
            traversal_cost: 1.0,
            intersection_cost: 1.0,
            max_depth: trace::MAX_DEPTH,
            clip_nodes: true,
            large_node: MAX_SMALL_SUBTREE,
        }
    }
}

impl BihParams {
    /// An error naming the first parameter out of range.
    pub fn check(&self) -> Result<(), String> {
        if !(2..=256).contains(&self.bins) {
            return Err(format!("BIH bins {}: must be in 2..=256", self.bins));
        }
        if !(1..=MAX_SMALL_SUBTREE).contains(&self.large_node) {
            return Err(format!(
                "BIH large-node threshold {}: must be in 1..={MAX_SMALL_SUBTREE}",
                self.large_node
            ));
        }
        if self.max_leaf == 0 {
            return Err("BIH leaf size 0: must be at least 1".into());
        }
        if self.max_depth > trace::MAX_DEPTH {
            return Err(format!(
                "BIH depth limit {}: ray casting takes at most {}",
                self.max_depth,
                trace::MAX_DEPTH
            ));
        }
        let positive = |c: f32| c.is_finite() && c > 0.0;
        if !positive(self.traversal_cost) || !positive(self.intersection_cost) {
            return Err(format!(
                "BIH costs {} and {}: must be finite and positive",
                self.traversal_cost, self.intersection_cost
            ));
        }
        Ok(())
    }
}
