//! The binary BVH node format shared by the LBVH builder, the CPU references and the ray
//! casting kernels (`struct BvhNode` in `glsl/bvh/format.glsl`).
//!
//! A tree over `n` primitives has `n - 1` internal nodes, stored at indices `0..n-1` with the
//! root at 0, and `n` leaves, one primitive each. A child reference is either an internal
//! node index or [`LEAF_BIT`] | the leaf's index `k`; leaf `k` holds primitive
//! `leaf_primitives[k]` (the k-th primitive in Morton order). Each node stores the boxes of
//! both children, so traversal tests the two children of a node with one 64-byte read.
//! A tree over one primitive is one node whose right child is [`INVALID_CHILD`] with an empty
//! (inverted) box, so that it is never entered.

pub mod boxes;
pub mod cpu;
pub mod instances;
pub mod lbvh;
pub mod ploc;
pub mod refit;
pub mod sah;
pub mod trace;
pub mod traverse;
pub mod treelet;
pub mod wide;

use crate::vk::{Buffer, Context, MemoryKind, Result};

/// Set in a child reference that names a leaf.
pub const LEAF_BIT: u32 = 0x8000_0000;
/// The child reference of a missing child (only in the one-primitive tree).
pub const INVALID_CHILD: u32 = u32::MAX;
/// The parent of the root.
pub const NO_PARENT: u32 = u32::MAX;
/// The tallest tree traversal takes: its stack holds one node per level (`BVH_STACK_SIZE` in
/// `glsl/bvh/walk.glsl`). A fast tree is never taller than its key bits + 32; a
/// high-quality tree is checked after its build ([`Bvh::fits_traversal_stack`]).
pub const MAX_TRAVERSAL_HEIGHT: u32 = 96;

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
const _: () = assert!(std::mem::size_of::<LeafTriangle>() == 48);

/// A leaf's triangle in leaf (Morton) order, as traversal reads it (`LeafTriangle` in
/// `glsl/bvh/format.glsl`): three vertices, the triangle's id in the first `w`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LeafTriangle {
    /// First vertex; `a[3]` holds the triangle id's bits.
    pub a: [f32; 4],
    /// Second vertex (w unused).
    pub b: [f32; 4],
    /// Third vertex (w unused).
    pub c: [f32; 4],
}

/// A binary BVH on the device: what a builder writes and ray casting reads.
pub struct Bvh {
    /// Internal nodes (one when the tree has one primitive).
    pub nodes: Buffer,
    /// Each leaf's triangle, in leaf order.
    pub leaf_triangles: Buffer,
    /// Each leaf's primitive id, in leaf order.
    pub leaf_primitives: Buffer,
    /// The height of the last completed build's tree (u32, host-visible).
    height: Buffer,
    capacity: u32,
    primitive_count: u32,
}

impl Bvh {
    /// Device memory for a tree over up to `capacity` primitives.
    pub fn new(ctx: &Context, capacity: u32) -> Result<Self> {
        let n = capacity.max(1) as u64;
        Ok(Self {
            nodes: ctx.create_buffer(
                "bvh nodes",
                n * std::mem::size_of::<BvhNode>() as u64,
                MemoryKind::Device,
            )?,
            leaf_triangles: ctx.create_buffer(
                "bvh leaf triangles",
                n * std::mem::size_of::<LeafTriangle>() as u64,
                MemoryKind::Device,
            )?,
            leaf_primitives: ctx.create_buffer("bvh leaf primitives", n * 4, MemoryKind::Device)?,
            height: ctx.create_buffer("bvh height", 4, MemoryKind::Readback)?,
            capacity,
            primitive_count: 0,
        })
    }

    /// The most primitives this tree can hold.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Primitives in the tree of the last recorded build.
    pub fn primitive_count(&self) -> u32 {
        self.primitive_count
    }

    pub(crate) fn set_primitive_count(&mut self, count: u32) {
        self.primitive_count = count;
    }

    /// The device address the build writes the tree's height to.
    pub(crate) fn height_address(&self) -> u64 {
        self.height.address()
    }

    /// The height of the last build's tree, once its submission has completed: the internal
    /// nodes on its longest path from the root to a leaf (0 for an empty tree).
    pub fn height(&self) -> u32 {
        if self.primitive_count == 0 {
            return 0;
        }
        let bytes = self.height.mapped().expect("readback buffers are mapped");
        *bytemuck::from_bytes(&bytes[..4])
    }

    /// Whether the last build's tree (once its submission has completed) can be traced:
    /// whether it is at most [`MAX_TRAVERSAL_HEIGHT`] tall. A tree that is not must be built
    /// again with [`lbvh::BvhQuality::Fast`]; tracing it would miss hits.
    pub fn fits_traversal_stack(&self) -> bool {
        self.height() <= MAX_TRAVERSAL_HEIGHT
    }

    /// Device bytes held.
    pub fn bytes(&self) -> u64 {
        self.nodes.size() + self.leaf_triangles.size() + self.leaf_primitives.size()
    }

    /// Reads the tree back (after the build has completed): the internal nodes and each
    /// leaf's primitive id.
    pub fn download(&self, ctx: &Context) -> Result<(Vec<BvhNode>, Vec<u32>)> {
        let n = self.primitive_count as usize;
        if n == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let nodes = ctx.download(&self.nodes, 0, (n - 1).max(1))?;
        let leaves = ctx.download(&self.leaf_primitives, 0, n)?;
        Ok((nodes, leaves))
    }
}
