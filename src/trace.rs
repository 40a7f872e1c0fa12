//! Ray casting against a [`Bvh`] or a kd-tree: "trace these rays against this structure", for
//! the renderer and for embedding apps alike. `glsl/trace/trace_bvh.comp` and
//! `glsl/trace/trace_kdtree.comp` run one invocation per ray with a per-ray stack and the
//! watertight ray/triangle test; closest-hit queries return the nearest hit, any-hit
//! (occlusion) queries stop at the first.
//!
//! [`Tracer::record_counted`] runs the same traversal and also writes each ray's
//! [`RayWork`]: nodes visited and primitives tested, counts that need no GPU to be compared
//! (the CPU references [`crate::accel::bvh::traverse::trace_bvh`] and
//! [`crate::accel::kdtree::cpu::trace_kdtree`] count the same way) and that [`TraversalWork`]
//! summarises per batch. It is a specialization of the same kernels (`COUNT_WORK`): the fast
//! path that [`Tracer::record`] runs does no counting.

use crate::accel::bvh::Bvh;
use crate::accel::kdtree::KdTreeGpu;
use crate::geom::ray::{Hit, Query, Ray, RayWork};
use crate::prims::indirect::IndirectArgs;
use crate::prims::{WORKGROUP_SIZE, check_count};
use crate::shaders;
use crate::vk::{Context, Kernel, Pipeline, Recorder, Result};
use crate::vk::{Count, Slice};
use std::sync::Arc;

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
    /// [`RayWork`] written per ray by the counting kernel, 0 otherwise.
    pub work_address: u64,
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
    /// [`RayWork`] written per ray by the counting kernel, 0 otherwise.
    pub work_address: u64,
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

/// The tracing kernels, per structure (BVH, kd-tree).
const KERNELS: [&Kernel; 2] = [&shaders::TRACE_TRACE_BVH, &shaders::TRACE_TRACE_KDTREE];

/// Traces batches of rays against BVHs and kd-trees.
pub struct Tracer {
    /// Per structure (BVH, kd-tree), the closest-hit and any-hit pipelines.
    pipelines: [[Arc<Pipeline>; 2]; 2],
    indirect: IndirectArgs,
}

impl Tracer {
    /// The tracing kernels for `ctx`'s device. The counting kernels of
    /// [`Self::record_counted`] are made on its first use.
    pub fn new(ctx: &Context) -> Result<Self> {
        let both = |kernel| -> Result<[Arc<Pipeline>; 2]> {
            Ok([
                ctx.pipeline(kernel, WORKGROUP_SIZE, &[0])?,
                ctx.pipeline(kernel, WORKGROUP_SIZE, &[1])?,
            ])
        };
        Ok(Self {
            pipelines: [both(KERNELS[0])?, both(KERNELS[1])?],
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
        self.record_trace(rec, structure.into(), query, rays, hits, None, count)
    }

    /// [`Self::record`] by the counting variant of the kernels, which also writes each ray's
    /// [`RayWork`] to `work` (nodes visited, primitives tested; see [`RayWork`] for what is
    /// counted). The hits are exactly those of [`Self::record`]; the counting costs a little
    /// time, so time the fast path and count with this one. Readers of `work` need a barrier,
    /// as readers of the hits do. The counting pipelines are made (once per device) on the
    /// first call.
    #[allow(clippy::too_many_arguments)]
    pub fn record_counted<'a>(
        &self,
        rec: &mut Recorder,
        structure: impl Into<Structure<'a>>,
        query: Query,
        rays: Slice<Ray>,
        hits: Slice<Hit>,
        work: Slice<RayWork>,
        count: Count,
    ) -> Result<()> {
        self.record_trace(rec, structure.into(), query, rays, hits, Some(work), count)
    }

    /// [`Self::record`], counting the work into `work` when there is one.
    #[allow(clippy::too_many_arguments)]
    fn record_trace(
        &self,
        rec: &mut Recorder,
        structure: Structure,
        query: Query,
        rays: Slice<Ray>,
        hits: Slice<Hit>,
        work: Option<Slice<RayWork>>,
        count: Count,
    ) -> Result<()> {
        check_count("trace", &count, u32::MAX)?;
        rays.check("trace rays", count.max() as u64, 16)?;
        hits.check("trace hits", count.max() as u64, 16)?;
        if let Some(work) = &work {
            work.check("trace work counts", count.max() as u64, 8)?;
        }
        let (count_address, host_count) = count.push();
        let any = (query == Query::Any) as usize;
        let work_address = work.map_or(0, |w| w.address());
        let structure_index = match structure {
            Structure::Bvh(_) => 0,
            Structure::KdTree {
                positions,
                triangles,
                ..
            } => {
                positions.check("kd-tree positions", 1, 4)?;
                triangles.check("kd-tree triangles", 1, 4)?;
                1
            }
        };
        let pipeline = match work {
            None => self.pipelines[structure_index][any].clone(),
            Some(_) => rec.context().pipeline(
                KERNELS[structure_index],
                WORKGROUP_SIZE,
                &[any as u32, 1],
            )?,
        };
        let groups = self
            .indirect
            .groups_for(rec, 0, &count, WORKGROUP_SIZE, 0)?;
        match structure {
            Structure::Bvh(bvh) => {
                let push = TracePush {
                    nodes_address: bvh.nodes.address(),
                    leaf_triangles_address: bvh.leaf_triangles.address(),
                    rays_address: rays.address(),
                    hits_address: hits.address(),
                    count_address,
                    host_count,
                    primitive_count: bvh.primitive_count(),
                    work_address,
                };
                rec.dispatch_groups(&pipeline, &push, &groups)?;
            }
            Structure::KdTree {
                tree,
                positions,
                triangles,
            } => {
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
                    work_address,
                };
                rec.dispatch_groups(&pipeline, &push, &groups)?;
            }
        }
        Ok(())
    }
}
