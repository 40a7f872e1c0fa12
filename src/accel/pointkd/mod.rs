//! Point kd-trees priced by the voxel volume heuristic (VVH, Wald et al. 2004) and their
//! k-nearest-neighbour search (seed 000 §5.1-5.2): the query engine that photon mapping and
//! point-cloud modelling share.
//!
//! A node splits its points by a plane on one axis: points whose coordinate is below the split
//! go left. Large nodes (more than [`PointKdParams::large_node`] points) are split at the
//! spatial median of their points' box, or cut off empty space of their cell when more than
//! [`PointKdParams::empty_space`] of it is empty on one side; small nodes take the split of
//! least VVH cost among the points' own coordinates, or become leaves when no split pays:
//!
//! `VVH(x) = Cts + (C_L(x) V(d_L(x) ± R) + C_R(x) V(d_R(x) ± R)) / V(d ± R)`
//!
//! where `V(b ± R)` is the volume of cell `b` grown by the query radius `R` on every side: a
//! query of radius `R` reaches a node when its centre lies in that volume.
//!
//! Both builders decide with products, sums and comparisons only, never a division (Vulkan
//! lets a device round one by up to 2.5 ulps), and never split at a subnormal float (a device
//! may flush subnormals to zero, as NVIDIA's do, and compare points with zero instead), so the
//! GPU builds the CPU's tree on every device for points whose coordinates are zero or normal.
//! A nonzero coordinate below 1.2e-38 in size is zero to such a device, and is not supported.
//!
//! An internal node's two children are stored next to each other (the left one first), so a
//! builder working level by level allocates them as a pair. Each node keeps the box of its
//! points (a query skips a node its radius does not reach) and each leaf a run of
//! [`PointKdTree::point_ids`].
//!
//! [`cpu`] builds trees on the CPU and answers queries by brute force (the reference);
//! [`knn`] runs the queries on the GPU: k nearest by one nearest-first walk per query, or by
//! Alg. 6 (range searches with a histogram of distances that narrow the radius to the k-th
//! neighbour's, then one gathering the k nearest), which also answers radii and range queries.

pub mod build;
pub mod cpu;
pub mod knn;
pub mod radius;

/// The leaf tag in a node's `word0` (axes are 0-2).
pub const POINT_KD_LEAF: u32 = 3;

/// A node, 32 bytes (`PointKdNode` in `glsl/pointkd/format.glsl`). `word0` holds the axis (or
/// [`POINT_KD_LEAF`]) in bits 0-1 and above them the left child's index (internal; the right
/// child follows it) or the point count (leaf); `word1` is the split's bits (internal) or the
/// leaf's first entry in [`PointKdTree::point_ids`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PointKdNode {
    /// Low corner of the node's points' box.
    pub lo: [f32; 3],
    /// Axis or leaf tag, and the left child or point count.
    pub word0: u32,
    /// High corner of the node's points' box.
    pub hi: [f32; 3],
    /// Split position bits, or first point entry.
    pub word1: u32,
}

const _: () = assert!(std::mem::size_of::<PointKdNode>() == 32);

impl PointKdNode {
    /// A leaf of `count` points from entry `first`, over the box `lo`..`hi`.
    pub fn leaf(first: u32, count: u32, (lo, hi): ([f32; 3], [f32; 3])) -> Self {
        Self {
            lo,
            word0: POINT_KD_LEAF | (count << 2),
            hi,
            word1: first,
        }
    }

    /// An internal node splitting on `axis` at `split`, its children at `left` and `left + 1`.
    pub fn split(axis: usize, split: f32, left: u32, (lo, hi): ([f32; 3], [f32; 3])) -> Self {
        Self {
            lo,
            word0: axis as u32 | (left << 2),
            hi,
            word1: split.to_bits(),
        }
    }

    /// Whether it is a leaf.
    pub fn is_leaf(&self) -> bool {
        self.word0 & 3 == POINT_KD_LEAF
    }

    /// The axis of an internal node.
    pub fn axis(&self) -> usize {
        (self.word0 & 3) as usize
    }

    /// The left child of an internal node, or the point count of a leaf.
    pub fn payload(&self) -> u32 {
        self.word0 >> 2
    }

    /// The split of an internal node.
    pub fn split_position(&self) -> f32 {
        f32::from_bits(self.word1)
    }
}

/// A point kd-tree: nodes (the root first, children in pairs) and the points of each leaf as
/// runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PointKdTree {
    /// The nodes.
    pub nodes: Vec<PointKdNode>,
    /// Point indices, a run per leaf.
    pub point_ids: Vec<u32>,
    /// The query radius `R` its VVH priced.
    pub query_radius: f32,
}

/// How a point kd-tree is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PointKdParams {
    /// `Cts`: the cost of visiting a node, in point tests.
    pub traversal_cost: f32,
    /// `R`: the query radius the VVH prices nodes for (the radius of the queries the tree will
    /// answer; `None`: the radius of a sphere holding `k_estimate` points at the cloud's mean
    /// density in its box).
    pub query_radius: Option<f32>,
    /// The neighbours per query `query_radius` is estimated for.
    pub k_estimate: u32,
    /// `T`: nodes of more points are large (spatial median and empty-space cuts); the others
    /// take exact VVH splits. The paper: 32.
    pub large_node: u32,
    /// `Ce`: a large node cuts off the empty part of its cell on one side when that part is
    /// more than this fraction of the cell's extent. The paper: 10%.
    pub empty_space: f32,
    /// Nodes of at most this many points are leaves without pricing.
    pub max_leaf: u32,
    /// The deepest leaf; deeper nodes become leaves (queries keep a stack this deep).
    pub max_depth: u32,
}

impl Default for PointKdParams {
    /// `Cts` 1, `R` estimated for 16 neighbours, `T` 32, `Ce` 10%, leaves of up to 2 points
    /// without pricing, depth at most 60.
    fn default() -> Self {
        Self {
            traversal_cost: 1.0,
            query_radius: None,
            k_estimate: 16,
            large_node: 32,
            empty_space: 0.1,
            max_leaf: 2,
            max_depth: 60,
        }
    }
}

/// The deepest tree the GPU queries walk: their stack size (`POINT_KD_STACK_SIZE` in
/// `glsl/pointkd/format.glsl`).
pub const MAX_DEPTH: u32 = 64;
