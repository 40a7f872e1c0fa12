//! Ray casting against a [`Bvh`] or a kd-tree: "trace these rays against this structure", for
//! the renderer and for embedding apps alike. `glsl/trace/trace_bvh.comp` and
//! `glsl/trace/trace_kdtree.comp` run one invocation per ray with a per-ray stack and the
//! watertight ray/triangle test; closest-hit queries return the nearest hit, any-hit
//! (occlusion) queries stop at the first.
//!
//! [`Tracer::record_counted`] runs the same traversal and also writes each ray's
//! [`RayWork`]: nodes visited and primitives tested, counts that need no GPU to be compared
//! (the CPU references [`crate::cpu::raycast::trace_bvh`] and
//! [`crate::cpu::kdtree::trace_kdtree`] count the same way) and that [`TraversalWork`]
//! summarises per batch. It is a specialization of the same kernels (`COUNT_WORK`): the fast
//! path that [`Tracer::record`] runs does no counting.

use crate::accel::bvh::Bvh;
use crate::accel::kdtree::KdTreeGpu;
use crate::prims::indirect::IndirectArgs;
use crate::prims::{Count, Slice, WORKGROUP_SIZE, check_count};
use crate::shaders;
use crate::vk::{Context, Kernel, Pipeline, Recorder, Result};
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

/// The work of one ray's traversal, as the counting kernels write it (`RayWork` in
/// `glsl/common/ray.glsl`). 8 bytes.
///
/// - Through a BVH, `nodes_visited` counts the internal nodes whose two child boxes were
///   tested: the root (always, when the tree has primitives) and each inner child entered
///   from its parent or popped from the stack; `primitives_tested` counts the leaves whose box
///   was entered, one ray/triangle test each.
/// - Through a kd-tree, `nodes_visited` counts the nodes the traversal reads, internal and
///   leaf (0 for a ray that misses the scene box); `primitives_tested` counts the
///   ray/triangle tests run in the leaves reached, a triangle in two of them counted twice.
///
/// An any-hit query walks as a closest-hit one until its first hit and stops there, so it
/// counts no more than the closest-hit query, and the same for a ray that hits nothing.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RayWork {
    /// Nodes visited.
    pub nodes_visited: u32,
    /// Ray/triangle tests run.
    pub primitives_tested: u32,
}

/// The work of a batch of rays: the mean and largest [`RayWork`] counts per ray, stable
/// across devices, so a change to a builder or to traversal can be judged without timing it.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct TraversalWork {
    /// Rays counted.
    pub rays: usize,
    /// Mean nodes visited per ray (0 without rays).
    pub mean_nodes: f64,
    /// Most nodes visited by one ray.
    pub max_nodes: u32,
    /// Mean ray/triangle tests per ray (0 without rays).
    pub mean_primitives: f64,
    /// Most ray/triangle tests of one ray.
    pub max_primitives: u32,
}

impl TraversalWork {
    /// The summary of per-ray counts, as [`Tracer::record_counted`] writes them.
    pub fn from_counts(counts: &[RayWork]) -> Self {
        let (mut nodes, mut primitives) = (0u64, 0u64);
        let mut work = Self {
            rays: counts.len(),
            ..Self::default()
        };
        for c in counts {
            nodes += u64::from(c.nodes_visited);
            primitives += u64::from(c.primitives_tested);
            work.max_nodes = work.max_nodes.max(c.nodes_visited);
            work.max_primitives = work.max_primitives.max(c.primitives_tested);
        }
        if !counts.is_empty() {
            work.mean_nodes = nodes as f64 / counts.len() as f64;
            work.mean_primitives = primitives as f64 / counts.len() as f64;
        }
        work
    }
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
