//! The acceleration structure `canopy render` and `canopy bench render` rebuild every frame:
//! an LBVH or an SAH kd-tree, both built on the GPU from scratch.

use super::CliError;
use super::render::MortonArg;
use canopy::accel::bvh::Bvh;
use canopy::accel::kdtree::KdTreeGpu;
use canopy::accel::kdtree_build::{KdBuildParams, KdStatusReadback, KdTreeBuilder};
use canopy::accel::lbvh::{LbvhBuilder, LbvhParams, TriangleInput};
use canopy::prims::Slice;
use canopy::render::SceneGpu;
use canopy::trace::Structure;
use canopy::vk::{Context, Recorder};

/// The structure on the command line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum StructureArg {
    /// Linear BVH (Karras 2012).
    #[default]
    Lbvh,
    /// SAH kd-tree (Zhou et al. 2008).
    Kdtree,
}

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
    /// A structure of `kind` for scenes of `triangles` triangles with `slots` builds in flight.
    pub fn new(
        ctx: &Context,
        kind: StructureArg,
        morton_bits: MortonArg,
        triangles: u32,
        slots: usize,
    ) -> Result<Self, CliError> {
        Ok(match kind {
            StructureArg::Lbvh => FrameStructure::Lbvh {
                builder: Box::new(LbvhBuilder::new(
                    ctx,
                    LbvhParams {
                        morton_bits: morton_bits.into(),
                        ..LbvhParams::default()
                    },
                    triangles,
                )?),
                bvh: Bvh::new(ctx, triangles)?,
            },
            StructureArg::Kdtree => {
                let builder = KdTreeBuilder::new(ctx, KdBuildParams::default(), triangles)?;
                FrameStructure::KdTree {
                    tree: builder.allocate_tree(ctx)?,
                    status: (0..slots)
                        .map(|_| builder.status_readback(ctx))
                        .collect::<Result<_, _>>()?,
                    builder: Box::new(builder),
                }
            }
        })
    }

    /// Records the build over `scene`'s triangles for the frame in `slot`.
    pub fn record_build(
        &mut self,
        rec: &mut Recorder,
        scene: &SceneGpu,
        slot: usize,
    ) -> canopy::vk::Result<()> {
        let input = TriangleInput {
            positions: Slice::whole(&scene.positions),
            triangles: Slice::whole(&scene.triangles),
            count: scene.triangle_count,
        };
        match self {
            FrameStructure::Lbvh { builder, bvh } => builder.record(rec, &input, bvh)?,
            FrameStructure::KdTree {
                builder,
                tree,
                status,
            } => builder.record(rec, &input, tree, &status[slot])?,
        }
        Ok(())
    }

    /// The structure to trace `scene` through.
    pub fn structure<'a>(&'a self, scene: &'a SceneGpu) -> Structure<'a> {
        match self {
            FrameStructure::Lbvh { bvh, .. } => Structure::Bvh(bvh),
            FrameStructure::KdTree { tree, .. } => Structure::KdTree {
                tree,
                positions: Slice::whole(&scene.positions),
                triangles: Slice::whole(&scene.triangles),
            },
        }
    }

    /// After the frame in `slot` has completed: whether its build overflowed a list, in which
    /// case the lists have been grown and the frame must be rendered again.
    pub fn grow_if_overflowed(&mut self, ctx: &Context, slot: usize) -> Result<bool, CliError> {
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
