//! What every structure offers the floors above it, in the spirit of Mesa's table of build
//! operations: one set of traits, implemented in each structure's own folder, so that the
//! frame sequence, the benchmarks, `canopy build` and the tests drive any structure through
//! the same calls; what differs between them is their entry in the table of facts
//! ([`super::STRUCTURES`], which [`StructureKind::create`] reads).
//!
//! - [`Structure`]: what every structure has: its kind, growing its lists after a build that
//!   outgrew them, its device bytes, and a description of the tree it built ([`TreeShape`],
//!   checked against the mesh on the host).
//! - [`RayStructure`]: built over triangles, rays are traced through it ([`Traversable`]).
//! - [`PointStructure`]: built over points (the octree, and the point kd-tree, whose neighbour
//!   queries are its own: `accel::pointkd::knn`).
//!
//! A structure keeps one build status per *slot*: the frames in flight of a
//! [`crate::sequence::FrameSequence`] each build into their own slot, and a structure that
//! reports its build outgrew its lists ([`Structure::grow_if_overflowed`]) is only checked
//! once that slot's submission has completed.

use super::StructureKind;
use super::bih::BihParams;
use super::bvh::lbvh::LbvhParams;
use super::grid::GridParams;
use super::kdtree::build::KdBuildParams;
use super::pointkd::PointKdParams;
use crate::geom::ray::{Hit, Query, Ray, RayWork};
use crate::geom::{PinholeView, PointInput, TriangleInput};
use crate::prims::{Groups, WORKGROUP_SIZE};
use crate::vk::{Buffer, Context, Count, Error, Kernel, Pipeline, Recorder, Result, Slice};
use std::sync::Arc;

/// The parameters of every builder; each structure reads its own.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuildParams {
    /// The LBVH's, whose Morton code width the octree shares.
    pub lbvh: LbvhParams,
    /// The kd-tree builder's.
    pub kdtree: KdBuildParams,
    /// The BIH builder's.
    pub bih: BihParams,
    /// The screen grid's (its LBVH takes `lbvh`).
    pub grid: GridParams,
    /// The point kd-tree's.
    pub pointkd: PointKdParams,
}

/// The shape of a tree, read back and checked.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct TreeShape {
    /// All nodes, leaves included (for the octree: its cells).
    pub nodes: u64,
    /// Leaves (for the octree: cells without children).
    pub leaves: u64,
    /// The most levels below the root of any leaf.
    pub depth: u32,
    /// Primitive references in the leaves: a kd-tree counts a triangle once per leaf it
    /// straddles into; the octree counts its distinct points.
    pub references: u64,
    /// The SAH cost of the tree (areas relative to the root's) under `sah_model`; none for
    /// the octree.
    pub sah_cost: Option<f64>,
    /// The cost model of `sah_cost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sah_model: Option<String>,
    /// Octree: nodes per level, root first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes_per_level: Vec<u64>,
    /// Screen grid: the triangles referenced at all (those in view that may cover a pixel's
    /// ray); `references` over it is the tiles per triangle (the paper: 1.2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_view: Option<u64>,
}

/// A mesh on the host, to check a tree built over its copy on the device against.
#[derive(Clone, Copy, Debug)]
pub struct HostMesh<'a> {
    /// Vertex positions.
    pub positions: &'a [[f32; 3]],
    /// Triangles.
    pub triangles: &'a [[u32; 3]],
}

/// What every structure has, whatever it is built over.
pub trait Structure {
    /// Which structure this is.
    fn kind(&self) -> StructureKind;

    /// After the submission holding the build in `slot` has completed: whether the build
    /// outgrew a list, in which case the lists have been grown and the build (and whatever
    /// read the tree) must be recorded again. Structures whose memory is sized exactly never
    /// grow.
    fn grow_if_overflowed(&mut self, _ctx: &Context, _slot: usize) -> Result<bool> {
        Ok(false)
    }

    /// Device bytes of the tree's own buffers (what a renderer keeps; the builder's scratch
    /// excluded).
    fn tree_bytes(&self) -> u64;

    /// Reads back the tree the build in `slot` wrote (after its submission completed),
    /// checks its invariants against `mesh` and describes it. The inner error names the
    /// first broken invariant.
    fn describe(
        &self,
        ctx: &Context,
        slot: usize,
        mesh: HostMesh,
    ) -> Result<std::result::Result<TreeShape, String>>;
}

/// A structure over triangles that rays are traced through.
pub trait RayStructure: Structure {
    /// Records the build over `input` into `slot`, with the barrier that makes the tree
    /// visible to later compute work.
    fn record_build(
        &mut self,
        rec: &mut Recorder,
        input: &TriangleInput,
        slot: usize,
    ) -> Result<()>;

    /// The tree, to trace the triangles of `input` (those it was built over) through with
    /// [`crate::trace::Tracer`].
    fn traversable<'a>(&'a self, input: &TriangleInput<'a>) -> Box<dyn Traversable + 'a>;

    /// Records a refit of the last built tree to the positions of `input` (the same
    /// triangles, moved) in place of a rebuild, with the barrier that makes it visible to
    /// later compute work, where the structure has one (the LBVH:
    /// [`crate::accel::bvh::refit`]); the others refuse.
    fn record_refit(&mut self, _rec: &mut Recorder, _input: &TriangleInput) -> Result<()> {
        Err(Error::InvalidInput(format!(
            "the {} has no refit: build it again",
            self.kind().name()
        )))
    }

    /// The pinhole view the next builds are for. Structures built in screen space (the
    /// screen grid) need one before their first build and size their bins for its image;
    /// the others ignore it. Resizing reallocates: no submission may still use the structure.
    fn set_view(&mut self, _ctx: &Context, _view: &PinholeView) -> Result<()> {
        Ok(())
    }
}

/// A structure over points.
pub trait PointStructure: Structure {
    /// Records the build over `input` into `slot`, with the barrier that makes the tree
    /// visible to later compute work.
    fn record_build(&mut self, rec: &mut Recorder, input: &PointInput, slot: usize) -> Result<()>;
}

/// A structure as [`StructureKind::create`] makes it: over triangles or over points.
pub enum AnyStructure {
    /// Rays are traced through it.
    Rays(Box<dyn RayStructure>),
    /// Built over points.
    Points(Box<dyn PointStructure>),
}

impl AnyStructure {
    fn structure(&self) -> &dyn Structure {
        match self {
            AnyStructure::Rays(s) => s.as_ref(),
            AnyStructure::Points(s) => s.as_ref(),
        }
    }

    /// Records the build over the triangles of `input` (or its vertices, for structures over
    /// points: the first `vertices` of `input.positions`) into `slot`.
    pub fn record_build(
        &mut self,
        rec: &mut Recorder,
        input: &TriangleInput,
        vertices: u32,
        slot: usize,
    ) -> Result<()> {
        match self {
            AnyStructure::Rays(s) => s.record_build(rec, input, slot),
            AnyStructure::Points(s) => {
                let points = PointInput {
                    positions: input.positions,
                    count: vertices,
                };
                s.record_build(rec, &points, slot)
            }
        }
    }

    /// The view the next builds are for ([`RayStructure::set_view`]); point structures
    /// ignore it.
    pub fn set_view(&mut self, ctx: &Context, view: &PinholeView) -> Result<()> {
        match self {
            AnyStructure::Rays(s) => s.set_view(ctx, view),
            AnyStructure::Points(_) => Ok(()),
        }
    }

    /// The structure rays are traced through; an error naming the structure for point
    /// structures.
    pub fn into_rays(self) -> Result<Box<dyn RayStructure>> {
        match self {
            AnyStructure::Rays(s) => Ok(s),
            AnyStructure::Points(s) => Err(Error::InvalidInput(format!(
                "rays cannot be traced through an {}: it is built over points",
                s.kind()
            ))),
        }
    }
}

impl Structure for AnyStructure {
    fn kind(&self) -> StructureKind {
        self.structure().kind()
    }

    fn grow_if_overflowed(&mut self, ctx: &Context, slot: usize) -> Result<bool> {
        match self {
            AnyStructure::Rays(s) => s.grow_if_overflowed(ctx, slot),
            AnyStructure::Points(s) => s.grow_if_overflowed(ctx, slot),
        }
    }

    fn tree_bytes(&self) -> u64 {
        self.structure().tree_bytes()
    }

    fn describe(
        &self,
        ctx: &Context,
        slot: usize,
        mesh: HostMesh,
    ) -> Result<std::result::Result<TreeShape, String>> {
        self.structure().describe(ctx, slot, mesh)
    }
}

/// Submits `record` (which records a build into slot 0, and whatever reads the tree) and
/// waits for it, again after growing the lists while the build outgrew them. Blocking: for
/// tests, benchmarks and one-off builds; a frame sequence checks its slots as frames finish.
pub fn submit_until_complete<S: Structure + ?Sized>(
    ctx: &Context,
    structure: &mut S,
    mut record: impl FnMut(&mut Recorder, &mut S) -> Result<()>,
) -> Result<()> {
    loop {
        ctx.submit_and_wait(|rec| record(rec, structure))?;
        if !structure.grow_if_overflowed(ctx, 0)? {
            return Ok(());
        }
    }
}

/// A batch of rays as a structure's traversal kernel receives it, checked and sized by
/// [`crate::trace::Tracer`].
#[derive(Clone, Copy, Debug)]
pub struct TraversalBatch<'a> {
    /// Closest hit or any hit.
    pub query: Query,
    /// The rays.
    pub rays: Slice<'a, Ray>,
    /// One hit written per ray.
    pub hits: Slice<'a, Hit>,
    /// Each ray's work written, by the counting variant of the kernel.
    pub work: Option<Slice<'a, RayWork>>,
    /// How many rays.
    pub count: Count<'a>,
    /// The scene's appearance buffer where some materials cut out
    /// ([`crate::render::SceneGpu::cutouts`]): hits on cut-away parts are passed through. None:
    /// every triangle is solid.
    pub cutouts: Option<&'a Buffer>,
}

/// A tree rays are traced through, by one kernel whose specialization constants include
/// `ANY_HIT` (id 2), `COUNT_WORK` (id 3) and `CUTOUTS` (id 4).
pub trait Traversable {
    /// Records the traversal kernel over `groups` workgroups of [`WORKGROUP_SIZE`] rays.
    fn record_traversal(
        &self,
        rec: &mut Recorder,
        batch: &TraversalBatch,
        groups: &Groups,
    ) -> Result<()>;

    /// The device bytes one node visit and one primitive test read, as the work counters
    /// count them ([`crate::geom::ray::RayWork`]), where a traversal reads a fixed size per
    /// node: for bytes fetched per ray.
    fn fetch_bytes(&self) -> Option<FetchBytes> {
        None
    }

    /// The structure's own caster of a pinhole view's camera rays (the screen grid's), when it
    /// has one: the renderer casts a frame's camera rays through it and traces every other
    /// ray with [`Traversable::record_traversal`].
    fn camera_caster(&self) -> Option<&dyn CameraCaster> {
        None
    }
}

/// The camera rays of one pinhole view: one per pixel, row-major from the top left, as the
/// renderer's first path list holds them.
#[derive(Clone, Copy, Debug)]
pub struct CameraBatch<'a> {
    /// The view the rays were made for (the one the structure was built for).
    pub view: PinholeView,
    /// The rays.
    pub rays: Slice<'a, Ray>,
    /// One closest hit written per ray.
    pub hits: Slice<'a, Hit>,
    /// Each ray's work written, by the counting variant of the kernel.
    pub work: Option<Slice<'a, RayWork>>,
    /// Cut-outs passed through, as [`TraversalBatch::cutouts`].
    pub cutouts: Option<&'a Buffer>,
}

/// A structure that casts the camera rays of the view it was built for itself.
pub trait CameraCaster {
    /// Records the closest hits of `batch`'s rays; an error when the structure was built for
    /// another view. Ends without a barrier: the caller orders the hits' readers.
    fn record_cast(&self, rec: &mut Recorder, batch: &CameraBatch) -> Result<()>;
}

impl<T: Traversable + ?Sized> Traversable for &T {
    fn record_traversal(
        &self,
        rec: &mut Recorder,
        batch: &TraversalBatch,
        groups: &Groups,
    ) -> Result<()> {
        (**self).record_traversal(rec, batch, groups)
    }

    fn fetch_bytes(&self) -> Option<FetchBytes> {
        (**self).fetch_bytes()
    }

    fn camera_caster(&self) -> Option<&dyn CameraCaster> {
        (**self).camera_caster()
    }
}

/// What one step of a traversal reads from device memory ([`Traversable::fetch_bytes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FetchBytes {
    /// Bytes per node visited.
    pub node: u32,
    /// Bytes per primitive tested.
    pub primitive: u32,
}

impl TraversalBatch<'_> {
    /// The pipeline of traversal `kernel` for this batch: its specialization constants
    /// `ANY_HIT` (id 2), `COUNT_WORK` (id 3) and `CUTOUTS` (id 4), which every traversal
    /// kernel declares.
    pub(crate) fn pipeline(&self, ctx: &Context, kernel: &Kernel) -> Result<Arc<Pipeline>> {
        let any_hit = self.query == Query::Any;
        let count_work = self.work.is_some();
        ctx.pipeline(
            kernel,
            WORKGROUP_SIZE,
            &[
                ("ANY_HIT", any_hit as u32),
                ("COUNT_WORK", count_work as u32),
                ("CUTOUTS", self.cutouts.is_some() as u32),
            ],
        )
    }

    /// The address each ray's work is written to, 0 for the fast kernel.
    pub(crate) fn work_address(&self) -> u64 {
        self.work.as_ref().map_or(0, |w| w.address())
    }

    /// The address of the cut-outs' appearance buffer, 0 for none.
    pub(crate) fn cutouts_address(&self) -> u64 {
        self.cutouts.map_or(0, |b| b.address())
    }
}
