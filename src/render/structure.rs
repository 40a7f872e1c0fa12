//! The acceleration structure a renderer rebuilds every frame, with its builder: an LBVH or an
//! SAH kd-tree, both built on the GPU from scratch (`canopy render`, `canopy bench render`).

use crate::accel::StructureKind;
use crate::accel::bvh::Bvh;
use crate::accel::bvh::lbvh::{LbvhBuilder, LbvhParams};
use crate::accel::kdtree::KdTreeGpu;
use crate::accel::kdtree::build::{KdBuildParams, KdStatusReadback, KdTreeBuilder};
use crate::geom::TriangleInput;
use crate::trace::Structure;
use crate::vk::{Context, Error, Recorder, Result};

/// A structure rebuilt every frame, with its builder. Builds of frames in flight each have a
/// slot for their status.
pub enum FrameStructure {
    /// An LBVH.
    Lbvh {
        /// The builder (boxed, as the kd-tree's).
        builder: Box<LbvhBuilder>,
        /// The tree.
        bvh: Bvh,
    },
    /// A kd-tree.
    KdTree {
        /// The builder (boxed: the variants differ much in size).
        builder: Box<KdTreeBuilder>,
        /// The tree.
        tree: KdTreeGpu,
        /// Each slot's build status.
        status: Vec<KdStatusReadback>,
    },
}

impl FrameStructure {
    /// A structure of `kind` for scenes of `triangles` triangles with `slots` builds in flight,
    /// an LBVH's built with `lbvh`, a kd-tree with `kdtree`. Only structures rays can be traced
    /// through are accepted.
    pub fn new(
        ctx: &Context,
        kind: StructureKind,
        (lbvh, kdtree): (LbvhParams, KdBuildParams),
        triangles: u32,
        slots: usize,
    ) -> Result<Self> {
        Ok(match kind {
            StructureKind::Lbvh => FrameStructure::Lbvh {
                builder: Box::new(LbvhBuilder::new(ctx, lbvh, triangles)?),
                bvh: Bvh::new(ctx, triangles)?,
            },
            StructureKind::KdTree => {
                let builder = KdTreeBuilder::new(ctx, kdtree, triangles)?;
                FrameStructure::KdTree {
                    tree: builder.allocate_tree(ctx)?,
                    status: (0..slots)
                        .map(|_| builder.status_readback(ctx))
                        .collect::<Result<_>>()?,
                    builder: Box::new(builder),
                }
            }
            StructureKind::Octree => {
                return Err(Error::InvalidInput(format!(
                    "rays cannot be traced through an {kind}: render with an lbvh or a kdtree"
                )));
            }
        })
    }

    /// Records the build over `input` for the frame in `slot`.
    pub fn record_build(
        &mut self,
        rec: &mut Recorder,
        input: &TriangleInput,
        slot: usize,
    ) -> Result<()> {
        match self {
            FrameStructure::Lbvh { builder, bvh } => builder.record(rec, input, bvh)?,
            FrameStructure::KdTree {
                builder,
                tree,
                status,
            } => builder.record(rec, input, tree, &status[slot])?,
        }
        Ok(())
    }

    /// The structure to trace the triangles of `input` (those it was built over) through.
    pub fn structure<'a>(&'a self, input: &TriangleInput<'a>) -> Structure<'a> {
        match self {
            FrameStructure::Lbvh { bvh, .. } => Structure::Bvh(bvh),
            FrameStructure::KdTree { tree, .. } => Structure::KdTree {
                tree,
                positions: input.positions,
                triangles: input.triangles,
            },
        }
    }

    /// Device bytes of the tree's own buffers (the builder's excluded).
    pub fn tree_bytes(&self) -> u64 {
        match self {
            FrameStructure::Lbvh { bvh, .. } => bvh.bytes(),
            FrameStructure::KdTree { tree, .. } => tree.bytes(),
        }
    }

    /// After the frame in `slot` has completed: whether its build overflowed a list, in which
    /// case the lists have been grown and the frame must be rendered again.
    pub fn grow_if_overflowed(&mut self, ctx: &Context, slot: usize) -> Result<bool> {
        let FrameStructure::KdTree {
            builder,
            tree,
            status,
        } = self
        else {
            return Ok(false);
        };
        let Some(overflow) = status[slot].overflow() else {
            return Ok(false);
        };
        builder.grow(ctx, overflow)?;
        *tree = builder.allocate_tree(ctx)?;
        Ok(true)
    }
}
