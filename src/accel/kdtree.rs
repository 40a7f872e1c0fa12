//! SAH kd-trees: the node format shared by the builders and the ray casting kernel
//! (`glsl/common/kdtree.glsl`), and a kd-tree on the device.
//!
//! Nodes are stored in preorder, 8 bytes each ([`KdNode`]); leaves list their triangles as
//! runs of ids in one array. A kd-tree on the device is built today by uploading the CPU
//! builder's tree ([`crate::cpu::kdtree::build_sah_kdtree`]); the GPU builder (Zhou et al. 2008
//! with Chang et al. 2013) writes the same format.

use crate::cpu::kdtree::KdTree;
use crate::prims::reduce::Aabb;
use crate::vk::{Buffer, Context, Error, Result};

pub use crate::cpu::kdtree::KdNode;

/// The deepest tree the ray casting kernel traverses (its stack size).
pub const MAX_DEPTH: u32 = 64;

/// A kd-tree on the device.
pub struct KdTreeGpu {
    /// Nodes in preorder.
    pub nodes: Buffer,
    /// Each leaf's triangle ids, as runs.
    pub leaf_triangles: Buffer,
    /// The scene box the root covers (one [`Aabb`]).
    pub bounds: Buffer,
}

impl KdTreeGpu {
    /// Uploads a tree built on the CPU. Trees deeper than [`MAX_DEPTH`] are refused.
    pub fn upload(ctx: &Context, tree: &KdTree) -> Result<Self> {
        let depth = depth(&tree.nodes);
        if depth > MAX_DEPTH {
            return Err(Error::InvalidInput(format!(
                "kd-tree of depth {depth}: ray casting takes at most {MAX_DEPTH}"
            )));
        }
        let (lo, hi) = tree.bounds;
        // An empty list still needs a buffer to point at.
        let leaf_triangles: &[u32] = if tree.leaf_triangles.is_empty() {
            &[u32::MAX]
        } else {
            &tree.leaf_triangles
        };
        Ok(Self {
            nodes: ctx.create_buffer_with("kd-tree nodes", &tree.nodes)?,
            leaf_triangles: ctx.create_buffer_with("kd-tree leaf triangles", leaf_triangles)?,
            bounds: ctx.create_buffer_with("kd-tree bounds", &[Aabb::new(lo, hi)])?,
        })
    }
}

/// Depth of a preorder tree (a lone leaf has depth 0).
fn depth(nodes: &[KdNode]) -> u32 {
    let mut deepest = 0;
    let mut stack = vec![(0usize, 0u32)];
    while let Some((i, d)) = stack.pop() {
        deepest = deepest.max(d);
        let node = &nodes[i];
        if !node.is_leaf() {
            stack.push((i + 1, d + 1));
            stack.push((node.right_child() as usize, d + 1));
        }
    }
    deepest
}
