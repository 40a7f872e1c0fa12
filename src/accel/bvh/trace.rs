//! Rays through a [`Bvh`]: `glsl/bvh/trace.comp`, one invocation per ray with a per-ray stack
//! and the watertight ray/triangle test; [`super::traverse`] is its CPU mirror, counting the
//! same work.

use super::{Bvh, BvhNode, LeafTriangle};
use crate::accel::{FetchBytes, Traversable, TraversalBatch};
use crate::prims::Groups;
use crate::shaders;
use crate::vk::{Buffer, Kernel, Recorder, Result};

/// Push constants of `trace.comp` and `wide_trace.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TracePush {
    /// Internal nodes.
    pub nodes_address: u64,
    /// Leaf triangles.
    pub leaf_triangles_address: u64,
    /// Rays.
    pub rays_address: u64,
    /// Hits written.
    pub hits_address: u64,
    /// Device ray count or 0.
    pub count_address: u64,
    /// Host ray count.
    pub host_count: u32,
    /// Primitives in the tree.
    pub primitive_count: u32,
    /// [`crate::geom::RayWork`] written per ray by the counting kernel, 0 otherwise.
    pub work_address: u64,
    /// The scene's appearance buffer where materials cut out, 0 for none.
    pub cutouts_address: u64,
}

impl Traversable for Bvh {
    fn record_traversal(
        &self,
        rec: &mut Recorder,
        batch: &TraversalBatch,
        groups: &Groups,
    ) -> Result<()> {
        let tree = (&self.nodes, &self.leaf_triangles, self.primitive_count());
        record_trace(rec, batch, groups, &shaders::BVH_TRACE, tree)
    }

    /// A node holds both children's boxes; a leaf its triangle.
    fn fetch_bytes(&self) -> Option<FetchBytes> {
        Some(FetchBytes {
            node: std::mem::size_of::<BvhNode>() as u32,
            primitive: std::mem::size_of::<LeafTriangle>() as u32,
        })
    }
}

/// Records `kernel` (`trace.comp`, or `wide_trace.comp` of the 8-wide tree) tracing `batch`
/// through a tree of `(nodes, leaf triangles, primitive count)`.
pub(crate) fn record_trace(
    rec: &mut Recorder,
    batch: &TraversalBatch,
    groups: &Groups,
    kernel: &Kernel,
    (nodes, leaf_triangles, primitive_count): (&Buffer, &Buffer, u32),
) -> Result<()> {
    let pipeline = batch.pipeline(rec.context(), kernel)?;
    let (count_address, host_count) = batch.count.push();
    let push = TracePush {
        nodes_address: nodes.address(),
        leaf_triangles_address: leaf_triangles.address(),
        rays_address: batch.rays.address(),
        hits_address: batch.hits.address(),
        count_address,
        host_count,
        primitive_count,
        work_address: batch.work_address(),
        cutouts_address: batch.cutouts_address(),
    };
    rec.dispatch_groups(&pipeline, &push, groups)
}
