//! Ray casting against a [`Bvh`] or a kd-tree: "trace these rays against this structure", for
//! the renderer and for embedding apps alike. `glsl/trace/trace_bvh.comp` and
//! `glsl/trace/trace_kdtree.comp` run one invocation per ray with a per-ray stack and the
//! watertight ray/triangle test; closest-hit queries return the nearest hit, any-hit
//! (occlusion) queries stop at the first.

use crate::accel::bvh::Bvh;
use crate::accel::kdtree::KdTreeGpu;
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

/// Push constants of `trace_kdtree.comp`.
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
}

/// What rays are traced against.
#[derive(Clone, Copy)]
pub enum Structure<'a> {
    /// A binary BVH (its leaves hold copies of their triangles).
    Bvh(&'a Bvh),
    /// A kd-tree over these triangles (its leaves hold triangle ids).
    KdTree {
        /// The tree.
        tree: &'a KdTreeGpu,
        /// Vertex positions.
        positions: Slice<'a, [f32; 3]>,
        /// Triangles.
        triangles: Slice<'a, [u32; 3]>,
    },
}

impl<'a> From<&'a Bvh> for Structure<'a> {
    fn from(bvh: &'a Bvh) -> Self {
        Structure::Bvh(bvh)
    }
}

/// Traces batches of rays against BVHs and kd-trees.
pub struct Tracer {
    /// Per structure (BVH, kd-tree), the closest-hit and any-hit pipelines.
    pipelines: [[Arc<Pipeline>; 2]; 2],
    indirect: IndirectArgs,
}

impl Tracer {
    /// The tracing kernels for `ctx`'s device.
    pub fn new(ctx: &Context) -> Result<Self> {
        let both = |kernel| -> Result<[Arc<Pipeline>; 2]> {
            Ok([
                ctx.pipeline(kernel, WORKGROUP_SIZE, &[0])?,
                ctx.pipeline(kernel, WORKGROUP_SIZE, &[1])?,
            ])
        };
        Ok(Self {
            pipelines: [
                both(&shaders::TRACE_TRACE_BVH)?,
                both(&shaders::TRACE_TRACE_KDTREE)?,
            ],
            indirect: IndirectArgs::new(ctx, "trace", 1)?,
        })
    }

    /// Records `query` for `count` rays of `rays` against `structure` (a `&Bvh` converts),
    /// writing one [`Hit`] per ray to `hits`. The structure's build must be recorded before
    /// (with its barrier) or have run, and the rays written before a barrier; no barrier is
    /// recorded after the trace: readers of the hits need one.
    pub fn record<'a>(
        &self,
        rec: &mut Recorder,
        structure: impl Into<Structure<'a>>,
        query: Query,
        rays: Slice<Ray>,
        hits: Slice<Hit>,
        count: Count,
    ) -> Result<()> {
        check_count("trace", &count, u32::MAX)?;
        rays.check("trace rays", count.max() as u64, 16)?;
        hits.check("trace hits", count.max() as u64, 16)?;
        let (count_address, host_count) = count.push();
        let any = (query == Query::Any) as usize;
        let groups = self
            .indirect
            .groups_for(rec, 0, &count, WORKGROUP_SIZE, 0)?;
        match structure.into() {
            Structure::Bvh(bvh) => {
                let push = TracePush {
                    nodes_address: bvh.nodes.address(),
                    leaf_triangles_address: bvh.leaf_triangles.address(),
                    rays_address: rays.address(),
                    hits_address: hits.address(),
                    count_address,
                    host_count,
                    primitive_count: bvh.primitive_count(),
                };
                rec.dispatch_groups(&self.pipelines[0][any], &push, &groups)?;
            }
            Structure::KdTree {
                tree,
                positions,
                triangles,
            } => {
                positions.check("kd-tree positions", 1, 4)?;
                triangles.check("kd-tree triangles", 1, 4)?;
                let push = TraceKdPush {
                    nodes_address: tree.nodes.address(),
                    leaf_triangles_address: tree.leaf_triangles.address(),
                    positions_address: positions.address(),
                    triangles_address: triangles.address(),
                    rays_address: rays.address(),
                    hits_address: hits.address(),
                    bounds_address: tree.bounds.address(),
                    count_address,
                    host_count,
                    pad: 0,
                };
                rec.dispatch_groups(&self.pipelines[1][any], &push, &groups)?;
            }
        }
        Ok(())
    }
}
