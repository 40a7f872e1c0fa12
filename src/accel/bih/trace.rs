//! Rays through a BIH: `glsl/bih/trace.comp`, one invocation per ray with a per-ray stack and
//! the interval clipping of Wächter & Keller 2006; [`super::cpu::trace_bih`] is its CPU mirror,
//! counting the same work. A BIH's leaves hold triangle ids, so it is traced together with the
//! triangles it was built over ([`BihTreeGpu::over`]).

use super::{BihNode, BihTree};
use crate::accel::{Traversable, TraversalBatch};
use crate::geom::TriangleInput;
use crate::geom::aabb::Aabb;
use crate::prims::Groups;
use crate::shaders;
use crate::vk::{Buffer, Context, Error, MemoryKind, Recorder, Result, Slice};

/// The deepest tree the ray casting kernel traverses: its stack size (`STACK_SIZE` in
/// `glsl/bih/trace.comp`).
pub const MAX_DEPTH: u32 = 64;

/// Push constants of `trace.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TraceBihPush {
    /// Nodes, the root first.
    pub nodes_address: u64,
    /// Leaf primitive ids.
    pub leaf_primitives_address: u64,
    /// Vertex positions.
    pub positions_address: u64,
    /// Triangles.
    pub triangles_address: u64,
    /// Rays.
    pub rays_address: u64,
    /// Hits written.
    pub hits_address: u64,
    /// The scene box.
    pub bounds_address: u64,
    /// Device ray count or 0.
    pub count_address: u64,
    /// Host ray count.
    pub host_count: u32,
    /// Primitives in the tree (0: every ray misses).
    pub primitive_count: u32,
    /// [`crate::geom::RayWork`] written per ray by the counting kernel, 0 otherwise.
    pub work_address: u64,
    /// The scene's appearance buffer where materials cut out, 0 for none.
    pub cutouts_address: u64,
}

/// A BIH on the device.
pub struct BihTreeGpu {
    /// Nodes, the root first.
    pub nodes: Buffer,
    /// Each leaf's primitives, as runs.
    pub leaf_primitives: Buffer,
    /// The scene box the root covers (one [`Aabb`]).
    pub bounds: Buffer,
    capacity: u32,
    primitive_count: u32,
}

impl BihTreeGpu {
    /// Uploads a tree built on the CPU. Trees deeper than [`MAX_DEPTH`] and malformed ones
    /// (children or leaf entries out of range) are refused. Primitive ids must be below the
    /// triangle count of the mesh it is traced with.
    pub fn upload(ctx: &Context, tree: &BihTree) -> Result<Self> {
        let depth = depth(tree).map_err(Error::InvalidInput)?;
        if depth > MAX_DEPTH {
            return Err(Error::InvalidInput(format!(
                "BIH of depth {depth}: ray casting takes at most {MAX_DEPTH}"
            )));
        }
        let (lo, hi) = tree.bounds;
        // An empty list still needs a buffer to point at.
        let leaf_primitives: &[u32] = if tree.leaf_primitives.is_empty() {
            &[u32::MAX]
        } else {
            &tree.leaf_primitives
        };
        Ok(Self {
            nodes: ctx.create_buffer_with("bih nodes", &tree.nodes)?,
            leaf_primitives: ctx.create_buffer_with("bih leaf primitives", leaf_primitives)?,
            bounds: ctx.create_buffer_with("bih bounds", &[Aabb::new(lo, hi)])?,
            capacity: tree.leaf_primitives.len().max(1) as u32,
            primitive_count: tree.leaf_primitives.len() as u32,
        })
    }

    /// Space for a tree over up to `capacity` primitives with leaves of up to `max_leaf`
    /// ([`super::max_nodes`] nodes), for the GPU builder to write.
    pub fn allocate(ctx: &Context, capacity: u32, max_leaf: u32) -> Result<Self> {
        let buffer = |name: &str, bytes: u64| ctx.create_buffer(name, bytes, MemoryKind::Device);
        let n = capacity.max(1) as u64;
        let node_bytes = std::mem::size_of::<BihNode>() as u64;
        Ok(Self {
            nodes: buffer(
                "bih nodes",
                super::max_nodes(capacity, max_leaf) * node_bytes,
            )?,
            leaf_primitives: buffer("bih leaf primitives", 4 * n)?,
            bounds: buffer("bih bounds", std::mem::size_of::<Aabb>() as u64)?,
            capacity: capacity.max(1),
            primitive_count: 0,
        })
    }

    /// The most primitives it holds.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The primitives of the tree last built or uploaded.
    pub fn primitive_count(&self) -> u32 {
        self.primitive_count
    }

    pub(crate) fn set_primitive_count(&mut self, count: u32) {
        self.primitive_count = count;
    }

    /// Device bytes held.
    pub fn bytes(&self) -> u64 {
        self.nodes.size() + self.leaf_primitives.size() + self.bounds.size()
    }

    /// This tree over the triangles of `input` (those it was built over), to trace rays
    /// through.
    pub fn over<'a>(&'a self, input: &TriangleInput<'a>) -> BihTreeOver<'a> {
        BihTreeOver {
            tree: self,
            positions: input.positions,
            triangles: input.triangles,
        }
    }
}

/// The most internal nodes above a leaf of `tree`, or why its nodes cannot be walked.
fn depth(tree: &BihTree) -> std::result::Result<u32, String> {
    let nodes: &[BihNode] = &tree.nodes;
    let mut deepest = 0;
    let mut stack = vec![(0usize, 0u32)];
    let mut visited = 0usize;
    while let Some((index, depth)) = stack.pop() {
        visited += 1;
        let node = nodes
            .get(index)
            .ok_or(format!("BIH node {index} out of range"))?;
        if visited > nodes.len() {
            return Err("BIH nodes form a cycle".into());
        }
        if node.is_leaf() {
            let end = node.first_primitive() as u64 + node.primitive_count() as u64;
            if end > tree.leaf_primitives.len() as u64 {
                return Err(format!("BIH leaf {index} reaches past the leaf list"));
            }
            deepest = deepest.max(depth);
        } else {
            let first = node.first_child() as usize;
            if first <= index {
                return Err(format!("BIH node {index}: child {first} not after it"));
            }
            stack.push((first, depth + 1));
            if !node.is_clip() {
                stack.push((first + 1, depth + 1));
            }
        }
    }
    Ok(deepest)
}

/// A BIH with the triangles it was built over: what rays are traced through.
#[derive(Clone, Copy)]
pub struct BihTreeOver<'a> {
    /// The tree.
    pub tree: &'a BihTreeGpu,
    /// Vertex positions.
    pub positions: Slice<'a, [f32; 3]>,
    /// Triangles.
    pub triangles: Slice<'a, [u32; 3]>,
}

impl Traversable for BihTreeOver<'_> {
    fn record_traversal(
        &self,
        rec: &mut Recorder,
        batch: &TraversalBatch,
        groups: &Groups,
    ) -> Result<()> {
        self.positions.check("BIH positions", 1, 4)?;
        self.triangles.check("BIH triangles", 1, 4)?;
        let pipeline = batch.pipeline(rec.context(), &shaders::BIH_TRACE)?;
        let (count_address, host_count) = batch.count.push();
        let push = TraceBihPush {
            nodes_address: self.tree.nodes.address(),
            leaf_primitives_address: self.tree.leaf_primitives.address(),
            positions_address: self.positions.address(),
            triangles_address: self.triangles.address(),
            rays_address: batch.rays.address(),
            hits_address: batch.hits.address(),
            bounds_address: self.tree.bounds.address(),
            count_address,
            host_count,
            primitive_count: self.tree.primitive_count,
            work_address: batch.work_address(),
            cutouts_address: batch.cutouts_address(),
        };
        rec.dispatch_groups(&pipeline, &push, groups)
    }
}
