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
//! Children are stored next to each other (left at an even offset from the first child,
//! right just after), which is how the GPU builder's chunks of nodes hand out pairs.

pub mod build;
pub mod cpu;
pub mod trace;

use crate::geom::aabb::Bounds;

/// The leaf tag in a node's two low bits (axes are 0-2).
pub const BIH_LEAF: u32 = 3;

/// A BIH node, 16 bytes (`BihNode` in `glsl/bih/format.glsl`).
/// `word0` holds the axis (0-2) or [`BIH_LEAF`] in bits 0-1, and above them the index of the
/// left child (internal; the right child follows it) or the primitive count (leaf); `word1`
/// is the leaf's first entry in [`BihTree::leaf_primitives`] (0 for internal nodes);
/// `clip` are the left child's maximum and the right child's minimum on the axis (internal;
/// 0 for leaves).
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
    /// An internal node splitting on `axis`, its children at `left` and `left + 1`.
    pub fn internal(axis: usize, left: u32, clip: [f32; 2]) -> Self {
        debug_assert!(axis < 3 && left < 1 << 30);
        Self {
            word0: axis as u32 | (left << 2),
            word1: 0,
            clip,
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

    /// The split axis of an internal node.
    pub fn axis(&self) -> usize {
        (self.word0 & 3) as usize
    }

    /// The left child of an internal node (the right child is the next node).
    pub fn left_child(&self) -> u32 {
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
}

impl Default for BihParams {
    fn default() -> Self {
        Self {
            bins: 32,
            max_leaf: 4,
            traversal_cost: 1.0,
            intersection_cost: 1.0,
            max_depth: trace::MAX_DEPTH,
        }
    }
}

impl BihParams {
    /// An error naming the first parameter out of range.
    pub fn check(&self) -> Result<(), String> {
        if !(2..=256).contains(&self.bins) {
            return Err(format!("BIH bins {}: must be in 2..=256", self.bins));
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
