//! Rays through a kd-tree: `glsl/kdtree/trace.comp`, one invocation per ray with a per-ray
//! stack of far children, clipped to the scene box; [`super::cpu::trace_kdtree`] is its CPU
//! mirror, counting the same work. A kd-tree's leaves hold triangle ids, so it is traced
//! together with the triangles it was built over ([`KdTreeGpu::over`]).

use super::KdTreeGpu;
use crate::accel::{Traversable, TraversalBatch};
use crate::geom::TriangleInput;
use crate::prims::Groups;
use crate::shaders;
use crate::vk::{Recorder, Result, Slice};

/// Push constants of `trace.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TraceKdPush {
    /// Nodes in preorder.
    pub nodes_address: u64,
    /// Leaf triangle ids.
    pub leaf_triangles_address: u64,
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
    /// Padding.
    pub pad: u32,
    /// [`crate::geom::RayWork`] written per ray by the counting kernel, 0 otherwise.
    pub work_address: u64,
    /// The scene's appearance buffer where materials cut out, 0 for none.
    pub cutouts_address: u64,
}

/// A kd-tree with the triangles it was built over: what rays are traced through.
#[derive(Clone, Copy)]
pub struct KdTreeOver<'a> {
    /// The tree.
    pub tree: &'a KdTreeGpu,
    /// Vertex positions.
    pub positions: Slice<'a, [f32; 3]>,
    /// Triangles.
    pub triangles: Slice<'a, [u32; 3]>,
}

impl KdTreeGpu {
    /// This tree over the triangles of `input` (those it was built over), to trace rays
    /// through.
    pub fn over<'a>(&'a self, input: &TriangleInput<'a>) -> KdTreeOver<'a> {
        KdTreeOver {
            tree: self,
            positions: input.positions,
            triangles: input.triangles,
        }
    }
}

impl Traversable for KdTreeOver<'_> {
    fn record_traversal(
        &self,
        rec: &mut Recorder,
        batch: &TraversalBatch,
        groups: &Groups,
    ) -> Result<()> {
        self.positions.check("kd-tree positions", 1, 4)?;
        self.triangles.check("kd-tree triangles", 1, 4)?;
        let pipeline = batch.pipeline(rec.context(), &shaders::KDTREE_TRACE)?;
        let (count_address, host_count) = batch.count.push();
        let push = TraceKdPush {
            nodes_address: self.tree.nodes.address(),
            leaf_triangles_address: self.tree.leaf_triangles.address(),
            positions_address: self.positions.address(),
            triangles_address: self.triangles.address(),
            rays_address: batch.rays.address(),
            hits_address: batch.hits.address(),
            bounds_address: self.tree.bounds.address(),
            count_address,
            host_count,
            pad: 0,
            work_address: batch.work_address(),
            cutouts_address: batch.cutouts_address(),
        };
        rec.dispatch_groups(&pipeline, &push, groups)
    }
}
