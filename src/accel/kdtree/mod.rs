//! SAH kd-trees: the node format shared by the builders and the ray casting kernel
//! (`glsl/kdtree/format.glsl`), and a kd-tree on the device.
//!
//! A [`KdTree`] holds [`KdNode`]s (8 bytes each) in preorder (depth first, left subtree
//! first): the root is node 0, an internal node's left child is the node right after it, and
//! the node stores the index of its right child. A leaf references a run of
//! [`KdTree::leaf_triangles`]. The root's box is the scene box; a child's box is its parent's
//! cut at the split plane. A kd-tree reaches the device by uploading the CPU builder's tree
//! ([`cpu::build_sah_kdtree`]) or by building it on the GPU ([`build::KdTreeBuilder`], which
//! writes the same format).

pub mod build;
pub mod cpu;
pub mod scratch;
pub mod trace;

use crate::geom::aabb::{Aabb, Bounds};
use crate::vk::{Buffer, Context, Error, MemoryKind, Result};

/// The `word0` axis bits of a leaf.
const LEAF_AXIS: u32 = 3;

/// A k-d tree node as the GPU reads it. 8 bytes.
///
/// - internal: `word0 = axis | right_child << 2` (axis 0, 1 or 2 for x, y, z), `word1` the
///   split position's bits ([`f32::to_bits`]); the left child is the next node;
/// - leaf: `word0 = 3 | triangle_count << 2`, `word1` the index in
///   [`KdTree::leaf_triangles`] of its first triangle.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KdNode {
    /// Axis (3 for a leaf) in bits 0..2, right child index or triangle count above.
    pub word0: u32,
    /// Split position bits, or the leaf's first entry in [`KdTree::leaf_triangles`].
    pub word1: u32,
}

const _: () = assert!(std::mem::size_of::<KdNode>() == 8);

impl KdNode {
    /// The largest right child index and leaf triangle count (30 bits).
    pub const MAX_INDEX: u32 = (1 << 30) - 1;

    /// An internal node splitting along `axis` (0, 1 or 2) at `split`, its right child at
    /// node `right`.
    ///
    /// # Panics
    ///
    /// If `axis > 2` or `right` > [`Self::MAX_INDEX`].
    pub fn internal(axis: usize, split: f32, right: u32) -> Self {
        assert!(axis < 3, "axis {axis}");
        assert!(right <= Self::MAX_INDEX, "right child {right}");
        Self {
            word0: axis as u32 | right << 2,
            word1: split.to_bits(),
        }
    }

    /// A leaf of `count` triangles, the first at `leaf_triangles[first]`.
    ///
    /// # Panics
    ///
    /// If `count` > [`Self::MAX_INDEX`].
    pub fn leaf(first: u32, count: u32) -> Self {
        assert!(count <= Self::MAX_INDEX, "{count} triangles in a leaf");
        Self {
            word0: LEAF_AXIS | count << 2,
            word1: first,
        }
    }

    /// Whether the node is a leaf.
    pub fn is_leaf(&self) -> bool {
        self.word0 & 3 == LEAF_AXIS
    }

    /// The split axis of an internal node (0, 1 or 2; 3 for a leaf).
    pub fn axis(&self) -> usize {
        (self.word0 & 3) as usize
    }

    /// The split position of an internal node.
    pub fn split(&self) -> f32 {
        f32::from_bits(self.word1)
    }

    /// The index of an internal node's right child.
    pub fn right_child(&self) -> u32 {
        self.word0 >> 2
    }

    /// The number of triangles of a leaf.
    pub fn triangle_count(&self) -> u32 {
        self.word0 >> 2
    }

    /// The index in [`KdTree::leaf_triangles`] of a leaf's first triangle.
    pub fn first_triangle(&self) -> u32 {
        self.word1
    }
}

/// A k-d tree over a triangle mesh.
#[derive(Clone, Debug, PartialEq)]
pub struct KdTree {
    /// The scene box, the root's box: the union of the triangles' boxes ([`crate::geom::aabb::EMPTY_BOUNDS`]
    /// without triangles).
    pub bounds: Bounds,
    /// The nodes in preorder, root at 0.
    pub nodes: Vec<KdNode>,
    /// The triangles of the leaves, each leaf's a contiguous run. [`cpu::build_sah_kdtree`] lays
    /// the runs out in preorder, each in ascending order.
    pub leaf_triangles: Vec<u32>,
}

/// The cost model and depth limit of [`cpu::build_sah_kdtree`].
///
/// Splitting a node of area `SA` into children of areas `SA_L`, `SA_R` holding `N_L`, `N_R`
/// triangles costs `Ct + Ci · (SA_L/SA · N_L + SA_R/SA · N_R)`, times `empty_bonus` when a
/// child with volume is empty; the node stays a leaf unless some split costs less than
/// `Ci · N`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KdParams {
    /// `Ct`, the cost of one traversal step; 1 by default, the unit of all costs.
    pub traversal_cost: f32,
    /// `Ci`, the cost of one ray/triangle test; 1.5 by default: the watertight test costs a
    /// little more than a traversal step, and a higher `Ci` gives smaller leaves.
    pub intersection_cost: f32,
    /// The factor on the cost of a split that leaves one child empty; 0.8 by default, so that
    /// empty space is cut off, which rays then skip at the price of one step. It does not apply
    /// when the empty child is flat (the plane on the node's face): such a split gains nothing.
    pub empty_bonus: f32,
    /// The depth (root 0) at which every node becomes a leaf. `None`, the default, is
    /// `round(8 + 1.3 · log2 n)` for `n` triangles (see [`Self::depth_limit`]): deep enough for
    /// leaves of a few triangles, while bounding the traversal stack and the duplication of
    /// straddling triangles.
    pub max_depth: Option<u32>,
}

impl Default for KdParams {
    fn default() -> Self {
        Self {
            traversal_cost: 1.0,
            intersection_cost: 1.5,
            empty_bonus: 0.8,
            max_depth: None,
        }
    }
}

impl KdParams {
    /// The depth limit for `triangles` triangles: [`Self::max_depth`], or by default
    /// `round(8 + 1.3 · log2 max(n, 1))`.
    pub fn depth_limit(&self, triangles: usize) -> u32 {
        self.max_depth
            .unwrap_or_else(|| (8.0 + 1.3 * (triangles.max(1) as f64).log2()).round() as u32)
    }

    /// The cost of splitting a node into children whose areas are `ratios` of the node's,
    /// holding `counts` triangles; `volume[c]` says whether child `c` has volume (the plane is
    /// not on its face).
    pub(crate) fn split_cost(
        &self,
        ratios: [f64; 2],
        counts: [usize; 2],
        volume: [bool; 2],
    ) -> f64 {
        let cost = self.traversal_cost as f64
            + self.intersection_cost as f64
                * (ratios[0] * counts[0] as f64 + ratios[1] * counts[1] as f64);
        if (0..2).any(|c| counts[c] == 0 && volume[c]) {
            cost * self.empty_bonus as f64
        } else {
            cost
        }
    }
}

/// The deepest tree the ray casting kernel traverses: its stack size (`STACK_SIZE` in
/// `glsl/kdtree/trace.comp`).
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
