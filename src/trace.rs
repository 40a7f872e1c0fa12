//! Ray casting against a [`Bvh`]: "trace these rays against this structure", for the renderer
//! and for embedding apps alike. `glsl/trace/trace_bvh.comp` runs one invocation per ray with
//! a per-ray stack and the watertight ray/triangle test; closest-hit queries return the
//! nearest hit, any-hit (occlusion) queries stop at the first.

use crate::accel::bvh::Bvh;
use crate::prims::indirect::IndirectArgs;
use crate::prims::{Count, Slice, WORKGROUP_SIZE, check_count};
use crate::shaders;
use crate::vk::{Context, Pipeline, Recorder, Result};
use std::sync::Arc;

/// The triangle id of a [`Hit`] that hit nothing.
pub const MISS: u32 = u32::MAX;

/// A ray as the GPU reads it: hits count only for `tmin < t < tmax`. 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Ray {
    /// Origin.
    pub origin: [f32; 3],
    /// Nearest distance counted, in units of `direction`.
    pub tmin: f32,
    /// Direction (need not be normalised).
    pub direction: [f32; 3],
    /// Farthest distance counted.
    pub tmax: f32,
}

/// A ray's hit: distance, triangle ([`MISS`] for none, then `t == tmax`) and the
/// barycentric weights `u` of the triangle's second vertex and `v` of its third, so the hit
/// point is `(1 - u - v) a + u b + v c`. 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Hit {
    /// Distance along the ray.
    pub t: f32,
    /// Triangle id, or [`MISS`].
    pub triangle: u32,
    /// Weight of the second vertex.
    pub u: f32,
    /// Weight of the third vertex.
    pub v: f32,
}

/// What a query asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// The nearest hit.
    Closest,
    /// Any hit (occlusion): the first found, not necessarily the nearest.
    Any,
}

/// Push constants of `trace_bvh.comp`.
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
}

/// Traces batches of rays against binary BVHs.
pub struct Tracer {
    closest: Arc<Pipeline>,
    any: Arc<Pipeline>,
    indirect: IndirectArgs,
}

impl Tracer {
    /// The tracing kernels for `ctx`'s device.
    pub fn new(ctx: &Context) -> Result<Self> {
        Ok(Self {
            closest: ctx.pipeline(&shaders::TRACE_TRACE_BVH, WORKGROUP_SIZE, &[0])?,
            any: ctx.pipeline(&shaders::TRACE_TRACE_BVH, WORKGROUP_SIZE, &[1])?,
            indirect: IndirectArgs::new(ctx, "trace", 1)?,
        })
    }

    /// Records `query` for `count` rays of `rays` against `bvh`, writing one [`Hit`] per ray
    /// to `hits`. The tree's build must be recorded before (with its barrier) or have run.
    pub fn record(
        &self,
        rec: &mut Recorder,
        bvh: &Bvh,
        query: Query,
        rays: Slice<Ray>,
        hits: Slice<Hit>,
        count: Count,
    ) -> Result<()> {
        check_count("trace", &count, u32::MAX)?;
        rays.check("trace rays", count.max() as u64, 16)?;
        hits.check("trace hits", count.max() as u64, 16)?;
        let (count_address, host_count) = count.push();
        let push = TracePush {
            nodes_address: bvh.nodes.address(),
            leaf_triangles_address: bvh.leaf_triangles.address(),
            rays_address: rays.address(),
            hits_address: hits.address(),
            count_address,
            host_count,
            primitive_count: bvh.primitive_count(),
        };
        let pipeline = match query {
            Query::Closest => &self.closest,
            Query::Any => &self.any,
        };
        let groups = self.indirect.groups_for(rec, 0, &count, WORKGROUP_SIZE, 0);
        rec.dispatch_groups(pipeline, &push, &groups);
        Ok(())
    }
}
