//! SAH kd-trees: the node format shared by the builders and the ray casting kernel
//! (`glsl/common/kdtree.glsl`), and a kd-tree on the device.
//!
//! Nodes are stored in preorder, 8 bytes each ([`KdNode`]); leaves list their triangles as
//! runs of ids in one array. A kd-tree reaches the device by uploading the CPU builder's tree
//! ([`crate::cpu::kdtree::build_sah_kdtree`]) or by building it on the GPU
//! ([`crate::accel::kdtree_build::KdTreeBuilder`], which writes the same format).

use crate::cpu::kdtree::KdTree;
use crate::prims::reduce::Aabb;
use crate::vk::{Buffer, Context, Error, MemoryKind, Result};

pub use crate::cpu::kdtree::KdNode;

/// The deepest tree the ray casting kernel traverses: its stack size (`STACK_SIZE` in
/// `glsl/trace/trace_kdtree.comp`).
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
    /// Uploads a tree built on the CPU. Malformed trees (child or triangle references out of
    /// range) and trees deeper than [`MAX_DEPTH`] are refused. Triangle ids must be below the
    /// triangle count of the mesh it is traced with.
    pub fn upload(ctx: &Context, tree: &KdTree) -> Result<Self> {
        let depth = depth(&tree.nodes, tree.leaf_triangles.len()).map_err(Error::InvalidInput)?;
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

impl KdTreeGpu {
    /// Space for a tree of up to `nodes` nodes and `leaf_triangles` leaf references, for the
    /// GPU builder to write.
    pub fn allocate(ctx: &Context, nodes: u32, leaf_triangles: u32) -> Result<Self> {
        let buffer = |name: &str, bytes: u64| ctx.create_buffer(name, bytes, MemoryKind::Device);
        Ok(Self {
            nodes: buffer("kd-tree nodes", nodes.max(1) as u64 * 8)?,
            leaf_triangles: buffer("kd-tree leaf triangles", leaf_triangles.max(1) as u64 * 4)?,
            bounds: buffer("kd-tree bounds", std::mem::size_of::<Aabb>() as u64)?,
        })
    }

    /// Device bytes held.
    pub fn bytes(&self) -> u64 {
        self.nodes.size() + self.leaf_triangles.size() + self.bounds.size()
    }

    /// Reads the tree back: its first `nodes` nodes and `leaf_triangles` leaf references (the
    /// counts a build reports).
    pub fn download(&self, ctx: &Context, nodes: u32, leaf_triangles: u32) -> Result<KdTree> {
        let bounds: Vec<Aabb> = ctx.download(&self.bounds, 0, 1)?;
        Ok(KdTree {
            bounds: (bounds[0].min, bounds[0].max),
            nodes: ctx.download(&self.nodes, 0, nodes as usize)?,
            leaf_triangles: ctx.download(&self.leaf_triangles, 0, leaf_triangles as usize)?,
        })
    }
}

/// Depth of a preorder tree (a lone leaf has depth 0), or why it is not one: every right
/// child and every leaf's run of triangle ids must lie in the arrays.
fn depth(nodes: &[KdNode], leaf_triangles: usize) -> std::result::Result<u32, String> {
    if nodes.is_empty() {
        return Err("a kd-tree has at least one node".into());
    }
    let mut deepest = 0;
    let mut stack = vec![(0usize, 0u32)];
    while let Some((i, d)) = stack.pop() {
        deepest = deepest.max(d);
        let node = &nodes[i];
        if node.is_leaf() {
            let end = node.first_triangle() as usize + node.triangle_count() as usize;
            if end > leaf_triangles {
                return Err(format!("leaf {i} lists triangles past the end of the list"));
            }
        } else {
            let right = node.right_child() as usize;
            if right <= i + 1 || right >= nodes.len() || d as usize >= nodes.len() {
                return Err(format!(
                    "node {i} has right child {right} of {}",
                    nodes.len()
                ));
            }
            stack.push((i + 1, d + 1));
            stack.push((right, d + 1));
        }
    }
    Ok(deepest)
}
