//! Ray casting through any structure rays can be traced through ([`Traversable`]: a
//! [`crate::accel::bvh::Bvh`], a kd-tree over its triangles): "trace these rays through this
//! tree", for the renderer and for embedding apps alike. Each structure's kernel (in its own
//! `glsl/<structure>/trace.comp`) runs one invocation per ray with a per-ray stack and the
//! watertight ray/triangle test; closest-hit queries return the nearest hit, any-hit
//! (occlusion) queries stop at the first.
//!
//! [`Tracer::record_counted`] runs the same traversal and also writes each ray's
//! [`RayWork`]: nodes visited and primitives tested, counts that need no GPU to be compared
//! (the CPU references [`crate::accel::bvh::traverse::trace_bvh`] and
//! [`crate::accel::kdtree::cpu::trace_kdtree`] count the same way) and that
//! [`crate::geom::ray::TraversalWork`] summarises per batch. It is a specialization of the same
//! kernels (`COUNT_WORK`): the fast path that [`Tracer::record`] runs does no counting.

use crate::accel::{Traversable, TraversalBatch};
use crate::geom::ray::{Hit, Query, Ray, RayWork};
use crate::prims::indirect::IndirectArgs;
use crate::prims::{WORKGROUP_SIZE, check_count};
use crate::vk::{Context, Recorder, Result};
use crate::vk::{Count, Slice};

/// Traces batches of rays through any [`Traversable`] tree; sizes the dispatch on the GPU
/// when the ray count lives there.
pub struct Tracer {
    indirect: IndirectArgs,
}

impl Tracer {
    /// A tracer for `ctx`'s device. Each structure's tracing pipelines are made on their
    /// first use and cached by the context.
    pub fn new(ctx: &Context) -> Result<Self> {
        Ok(Self {
            indirect: IndirectArgs::new(ctx, "trace", 1)?,
        })
    }

    /// Records `query` for `count` rays of `rays` through `tree` (a `&Bvh`, or
    /// `kd_tree.over(&input)`), writing one [`Hit`] per ray to `hits`. The tree's build must be
    /// recorded before (with its barrier) or have run, and the rays written before a barrier;
    /// no barrier is recorded after the trace: readers of the hits need one.
    pub fn record(
        &self,
        rec: &mut Recorder,
        tree: &dyn Traversable,
        query: Query,
        rays: Slice<Ray>,
        hits: Slice<Hit>,
        count: Count,
    ) -> Result<()> {
        let batch = TraversalBatch {
            query,
            rays,
            hits,
            work: None,
            count,
            cutouts: None,
        };
        self.record_batch(rec, tree, &batch)
    }

    /// [`Self::record`] by the counting variant of the kernels, which also writes each ray's
    /// [`RayWork`] to `work` (nodes visited, primitives tested; see [`RayWork`] for what is
    /// counted). The hits are exactly those of [`Self::record`]; the counting costs a little
    /// time, so time the fast path and count with this one. Readers of `work` need a barrier,
    /// as readers of the hits do.
    #[allow(clippy::too_many_arguments)]
    pub fn record_counted(
        &self,
        rec: &mut Recorder,
        tree: &dyn Traversable,
        query: Query,
        rays: Slice<Ray>,
        hits: Slice<Hit>,
        work: Slice<RayWork>,
        count: Count,
    ) -> Result<()> {
        let batch = TraversalBatch {
            query,
            rays,
            hits,
            work: Some(work),
            count,
            cutouts: None,
        };
        self.record_batch(rec, tree, &batch)
    }

    /// Checks `batch`, sizes its dispatch and records `tree`'s traversal of it: as
    /// [`Self::record`] or [`Self::record_counted`] with the batch's every field, its cut-outs
    /// included.
    pub fn record_batch(
        &self,
        rec: &mut Recorder,
        tree: &dyn Traversable,
        batch: &TraversalBatch,
    ) -> Result<()> {
        let count = &batch.count;
        check_count("trace", count, u32::MAX)?;
        batch.rays.check("trace rays", count.max() as u64, 16)?;
        batch.hits.check("trace hits", count.max() as u64, 16)?;
        if let Some(work) = &batch.work {
            work.check("trace work counts", count.max() as u64, 8)?;
        }
        let groups = self.indirect.groups_for(rec, 0, count, WORKGROUP_SIZE, 0)?;
        tree.record_traversal(rec, batch, &groups)
    }
}
