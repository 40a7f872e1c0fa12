//! The kd-tree builder's scratch lists as the GPU writes them: Rust mirrors of the structs of
//! `glsl/kdtree/build.glsl`, byte for byte (proved from the SPIR-V in `tests/layout.rs`). The
//! host never reads them; it sizes the lists by them.

/// A triangle's clipped box in a large level's record list (`Record`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KdRecord {
    /// The box's low corner.
    pub lo: [f32; 3],
    /// The box's high corner.
    pub hi: [f32; 3],
    /// The triangle.
    pub triangle: u32,
}

/// A node of the large-node stage (`LargeNode`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KdLargeNode {
    /// Low corner of the node's region of space.
    pub cell_lo: [f32; 3],
    /// Its first record in the level's record list.
    pub first: u32,
    /// High corner of its region.
    pub cell_hi: [f32; 3],
    /// Its records (for a child: the classifying kernel's atomic counter).
    pub count: u32,
    /// Low corner of its records' box, as ordered uints (atomicMin).
    pub tight_lo: [u32; 3],
    /// Its tree entry.
    pub entry: u32,
    /// High corner of its records' box, as ordered uints (atomicMax).
    pub tight_hi: [u32; 3],
    /// Its depth.
    pub depth: u32,
    /// The split's axis (0-2), or 3 when it was not split.
    pub split_axis: u32,
    /// The split's position.
    pub split: f32,
    /// Consecutive splits above it that separated nothing.
    pub stalls: u32,
    /// Its chunks past their box, then past their classification (counted atomically).
    pub chunks_done: u32,
}

/// A chunk of up to [`super::build::CHUNK`] records of one large node (`Chunk`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KdChunk {
    /// The node's index in the level's node list.
    pub node: u32,
    /// The chunk's first record.
    pub first: u32,
}

/// A node of the small-node stage, its records a bit set of its small root's (`SmallNode`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KdSmallNode {
    /// Low corner of its region of space.
    pub cell_lo: [f32; 3],
    /// The small root's first record.
    pub root_first: u32,
    /// High corner of its region.
    pub cell_hi: [f32; 3],
    /// The small root's records.
    pub root_count: u32,
    /// Bit i: the root's record i is in this node.
    pub members: u64,
    /// Its tree entry.
    pub entry: u32,
    /// Its depth.
    pub depth: u32,
}

/// A tree node while the build runs, linked to its parent (`Entry`); the output step writes
/// the nodes in preorder from them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KdEntry {
    /// [`super::KdNode`]'s first word without the right child (for a leaf: complete).
    pub word0: u32,
    /// [`super::KdNode`]'s second word.
    pub word1: u32,
    /// The parent entry, with bit 31 set for a right child; `u32::MAX` for the root.
    pub parent: u32,
    /// Leaves under the left child, written bottom-up: while the children arrive, `(the
    /// first's leaves << 1) | 1`.
    pub leaves: u32,
}
