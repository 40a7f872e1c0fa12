//! Boxes as primitives: a binary BVH over axis-aligned boxes ([`BoxTreeBuilder`]), for
//! primitives only the application knows how to intersect (spheres, curves, voxels, instances).
//!
//! Each box is handed to the LBVH builder as the triangle (min, max, max) of its two corners,
//! whose bounds are the box: the tree is an ordinary [`Bvh`] whose leaf k holds box
//! `leaf_triangles[k].a.w` (its index) with the box's corners in `a.xyz` and `b.xyz`. Rays go
//! through it from the application's own shaders: `include/canopy_trace.glsl` (with
//! `CANOPY_BOX_PRIMITIVES` defined) walks it with `canopy_trace_boxes_closest`, `_any` and
//! `_all`, handing each box the ray reaches to the application's `canopy_intersect_box`. The
//! two-level tree's top tree is one, over the instances' world boxes
//! ([`super::instances::TwoLevelBvh`]).

use super::Bvh;
use super::lbvh::{LbvhBuilder, LbvhParams};
use crate::geom::TriangleInput;
use crate::vk::{Buffer, Context, Error, Recorder, Result, Slice};

/// Builds BVHs over up to a fixed number of boxes; reusable every frame.
pub struct BoxTreeBuilder {
    builder: LbvhBuilder,
    /// The triangle (2i, 2i + 1, 2i + 1) of box i's corners, written once.
    corner_triangles: Buffer,
    capacity: u32,
}

impl BoxTreeBuilder {
    /// A builder for up to `capacity` boxes (the fast LBVH's; 12 bytes a box besides its
    /// scratch).
    pub fn new(ctx: &Context, capacity: u32) -> Result<Self> {
        let corner_triangles: Vec<[u32; 3]> = (0..capacity)
            .map(|i| [2 * i, 2 * i + 1, 2 * i + 1])
            .collect();
        Ok(Self {
            builder: LbvhBuilder::new(ctx, LbvhParams::default(), capacity)?,
            corner_triangles: ctx.create_buffer_with("box corner triangles", &corner_triangles)?,
            capacity,
        })
    }

    /// The most boxes a build can take.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Records the build of `tree` over the first `count` boxes of `boxes`, each its two
    /// corners (24 bytes: the smallest, then the largest; corners given the other way round
    /// make the same box). A box's index is what the leaf that holds it reports. Synchronised
    /// as [`LbvhBuilder::record`]: the boxes written before, with their barrier; a compute →
    /// compute barrier after.
    pub fn record(
        &self,
        rec: &mut Recorder,
        boxes: Slice<[[f32; 3]; 2]>,
        count: u32,
        tree: &mut Bvh,
    ) -> Result<()> {
        if count > self.capacity {
            return Err(Error::InvalidInput(format!(
                "a box tree build of {count} boxes with a builder for {}",
                self.capacity
            )));
        }
        boxes.check("box tree boxes", count as u64, 4)?;
        let input = TriangleInput {
            positions: Slice::new(boxes.buffer, boxes.offset, 2 * boxes.len),
            triangles: Slice::whole(&self.corner_triangles),
            count,
        };
        self.builder.record(rec, &input, tree)
    }
}
