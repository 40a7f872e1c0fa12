//! The binary BVH node format shared by the LBVH builder, the CPU references and the ray
//! casting kernels (`struct BvhNode` in `glsl/common/bvh.glsl`).
//!
//! A tree over `n` primitives has `n - 1` internal nodes, stored at indices `0..n-1` with the
//! root at 0, and `n` leaves, one primitive each. A child reference is either an internal
//! node index or [`LEAF_BIT`] | the leaf's index `k`; leaf `k` holds primitive
//! `leaf_primitives[k]` (the k-th primitive in Morton order). Each node stores the boxes of
//! both children, so traversal tests the two children of a node with one 64-byte read.
//! A tree over one primitive is one node whose right child is [`INVALID_CHILD`] with an empty
//! (inverted) box, so that it is never entered.

/// Set in a child reference that names a leaf.
pub const LEAF_BIT: u32 = 0x8000_0000;
/// The child reference of a missing child (only in the one-primitive tree).
pub const INVALID_CHILD: u32 = u32::MAX;
/// The parent of the root.
pub const NO_PARENT: u32 = u32::MAX;

/// One internal node: both children's boxes and references, its parent and its leaf count.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BvhNode {
    /// Smallest corner of the left child's box.
    pub left_min: [f32; 3],
    /// Left child reference.
    pub left: u32,
    /// Largest corner of the left child's box.
    pub left_max: [f32; 3],
    /// Right child reference.
    pub right: u32,
    /// Smallest corner of the right child's box.
    pub right_min: [f32; 3],
    /// Parent internal node, or [`NO_PARENT`] for the root.
    pub parent: u32,
    /// Largest corner of the right child's box.
    pub right_max: [f32; 3],
    /// Number of leaves below this node.
    pub leaf_count: u32,
}

const _: () = assert!(std::mem::size_of::<BvhNode>() == 64);
