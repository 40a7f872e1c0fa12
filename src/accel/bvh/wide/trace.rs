//! Rays through a [`WideBvh`]: `glsl/bvh/wide_trace.comp`, one invocation per ray with a
//! per-ray stack; [`super::cpu::trace_wide`] is its CPU mirror, counting the same work.

use super::WideBvh;
use super::format::WideNode;
use crate::accel::bvh::LeafTriangle;
use crate::accel::bvh::trace::record_trace;
use crate::accel::{FetchBytes, Traversable, TraversalBatch};
use crate::prims::Groups;
use crate::shaders;
use crate::vk::{Recorder, Result};

impl Traversable for WideBvh {
    fn record_traversal(
        &self,
        rec: &mut Recorder,
        batch: &TraversalBatch,
        groups: &Groups,
    ) -> Result<()> {
        let tree = (&self.nodes, &self.leaf_triangles, self.primitive_count());
        record_trace(rec, batch, groups, &shaders::BVH_WIDE_TRACE, tree)
    }

    /// A node holds its eight children's quantized boxes; a leaf its triangle.
    fn fetch_bytes(&self) -> Option<FetchBytes> {
        Some(FetchBytes {
            node: std::mem::size_of::<WideNode>() as u32,
            primitive: std::mem::size_of::<LeafTriangle>() as u32,
        })
    }
}
