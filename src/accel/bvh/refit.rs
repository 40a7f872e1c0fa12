//! Refit (`glsl/bvh/refit.comp`): a built binary BVH's boxes made again over its triangles'
//! new positions, keeping its topology. Two dispatches, against a full rebuild's sort and
//! climb; the wide layout is collapsed again after it.
//!
//! **Quality.** The boxes are exact, so every ray still finds what a rebuilt tree finds, but
//! the tree was ordered for the old positions. As triangles move apart from that order (a
//! character's arm swinging across its body), the boxes grow and overlap and tracing slows;
//! a refit never restores it. [`sah_drift`] measures how far the tree's SAH cost has moved
//! from a fresh build's (on the host, from both trees' statistics): rebuild when it passes
//! what the application accepts.

use super::cpu::TreeStats;
use super::{Bvh, BvhNode, INVALID_CHILD, LEAF_BIT, NO_PARENT};
use crate::geom::TriangleInput;
use crate::geom::aabb::{Bounds, EMPTY_BOUNDS, union};
use crate::prims::WORKGROUP_SIZE;
use crate::shaders;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use std::sync::Arc;

/// Push constants of `refit.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RefitPush {
    /// Vertex positions (the new ones).
    pub positions_address: u64,
    /// Triangle indices.
    pub triangles_address: u64,
    /// Internal nodes, boxes rewritten.
    pub nodes_address: u64,
    /// Leaf triangles, rewritten.
    pub leaf_triangles_address: u64,
    /// Each leaf's triangle.
    pub leaf_primitives_address: u64,
    /// Scratch: each leaf's parent.
    pub leaf_parents_address: u64,
    /// Scratch: each internal node's arrival count.
    pub arrivals_address: u64,
    /// Triangles.
    pub count: u32,
    /// Padding.
    pub pad: u32,
}

/// Refits binary BVHs of up to a fixed number of triangles; reusable every frame.
pub struct BvhRefitter {
    parents: Arc<Pipeline>,
    climb: Arc<Pipeline>,
    /// A u32 per leaf (its parent), then a u32 per internal node (its arrivals).
    scratch: Buffer,
    capacity: u32,
}

impl BvhRefitter {
    /// A refitter for trees of up to `capacity` triangles (8 bytes of scratch a triangle).
    pub fn new(ctx: &Context, capacity: u32) -> Result<Self> {
        let step = |step: u32| {
            ctx.pipeline(
                &shaders::BVH_REFIT,
                WORKGROUP_SIZE,
                &[
                    ("STEP", step),
                    (
                        "UNIFORM_CLIMB",
                        ctx.caps().ends_divergent_invocations_at_memory_barriers() as u32,
                    ),
                ],
            )
        };
        Ok(Self {
            parents: step(0)?,
            climb: step(1)?,
            scratch: ctx.create_buffer(
                "bvh refit scratch",
                capacity.max(1) as u64 * 8,
                MemoryKind::Device,
            )?,
            capacity,
        })
    }

    /// Records the refit of `bvh` (built over the same triangles, in the same order) to the
    /// positions of `input`, followed by a compute → compute barrier. The triangle count must
    /// be the tree's: a different one is an error, since the topology no longer fits.
    pub fn record(&self, rec: &mut Recorder, input: &TriangleInput, bvh: &Bvh) -> Result<()> {
        let n = bvh.primitive_count();
        if input.count != n {
            return Err(Error::InvalidInput(format!(
                "refit of a BVH over {n} triangles with {} triangles: rebuild it instead",
                input.count
            )));
        }
        if n > self.capacity {
            return Err(Error::InvalidInput(format!(
                "refit of {n} triangles: this refitter holds {}",
                self.capacity
            )));
        }
        if n == 0 {
            return Ok(());
        }
        input.positions.check("refit positions", 1, 4)?;
        input.triangles.check("refit triangles", n as u64, 4)?;
        let push = RefitPush {
            positions_address: input.positions.address(),
            triangles_address: input.triangles.address(),
            nodes_address: bvh.nodes.address(),
            leaf_triangles_address: bvh.leaf_triangles.address(),
            leaf_primitives_address: bvh.leaf_primitives.address(),
            leaf_parents_address: self.scratch.address(),
            arrivals_address: self.scratch.address() + self.capacity.max(1) as u64 * 4,
            count: n,
            pad: 0,
        };
        rec.begin_stage("bvh refit");
        let internal = n.max(2) - 1;
        rec.dispatch(&self.parents, &push, internal.div_ceil(WORKGROUP_SIZE))?;
        rec.barrier_compute_to_compute();
        rec.dispatch(&self.climb, &push, n.div_ceil(WORKGROUP_SIZE))?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }
}

/// The boxes `refit.comp` writes, on the CPU: each internal node's two child boxes over the
/// triangles of `leaves` (each leaf's triangle) at `positions`.
pub fn refit_on_cpu(
    nodes: &mut [BvhNode],
    leaves: &[u32],
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
) {
    fn bounds(
        reference: u32,
        nodes: &mut [BvhNode],
        leaves: &[u32],
        positions: &[[f32; 3]],
        triangles: &[[u32; 3]],
    ) -> Bounds {
        if reference & LEAF_BIT != 0 {
            let t = triangles[leaves[(reference & !LEAF_BIT) as usize] as usize];
            return t.iter().fold(EMPTY_BOUNDS, |b, &v| {
                let p = positions[v as usize];
                union(&b, &(p, p))
            });
        }
        let node = nodes[reference as usize];
        let left = bounds(node.left, nodes, leaves, positions, triangles);
        let node = &mut nodes[reference as usize];
        (node.left_min, node.left_max) = left;
        if node.right == INVALID_CHILD {
            return left;
        }
        let right = bounds(node.right, nodes, leaves, positions, triangles);
        let node = &mut nodes[reference as usize];
        (node.right_min, node.right_max) = right;
        union(&left, &right)
    }
    if !nodes.is_empty() && nodes[0].parent == NO_PARENT {
        bounds(0, nodes, leaves, positions, triangles);
    }
}

/// How far a refitted tree's SAH cost has drifted: its cost over that of a tree built fresh
/// over the same positions, minus one (0.15: tracing is expected to take about 15% longer).
/// `refitted` and `fresh` are the two trees' statistics from
/// [`check_invariants`](super::cpu::check_invariants).
pub fn sah_drift(refitted: &TreeStats, fresh: &TreeStats) -> f64 {
    refitted.sah_cost / fresh.sah_cost - 1.0
}
