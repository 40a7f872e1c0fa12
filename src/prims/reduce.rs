//! Reductions to one value: sum, minimum or maximum of u32 or f32, and the union of boxes.
//! One dispatch each (`glsl/prims/reduce.comp`, `glsl/prims/reduce_aabb.comp`): workgroups
//! reduce tiles, and the last workgroup to finish reduces the tiles' partials.

use super::indirect::IndirectArgs;
use super::{WORKGROUP_SIZE, check_count};
use crate::shaders;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use crate::vk::{Count, Slice};
use std::sync::Arc;

/// The reduction operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (u32 wraps modulo 2^32).
    Add = 0,
    /// Minimum.
    Min = 1,
    /// Maximum.
    Max = 2,
}

/// The element type reduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// 32-bit unsigned integer.
    U32,
    /// 32-bit float.
    F32,
}

/// Push constants of `reduce.comp` and `reduce_aabb.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ReducePush {
    /// Input elements.
    pub input_address: u64,
    /// Where the one result goes.
    pub output_address: u64,
    /// Device count or 0.
    pub count_address: u64,
    /// Done-counter and partials.
    pub scratch_address: u64,
    /// Host count.
    pub host_count: u32,
    /// Padding.
    pub pad: u32,
}

const ITEMS_PER_INVOCATION: u32 = 16;
const AABB_ITEMS_PER_INVOCATION: u32 = 8;

enum Kind {
    Scalar,
    Aabb,
}

/// A reduction kernel for one operator and type, with scratch for up to `capacity` elements.
pub struct Reduce {
    pipeline: Arc<Pipeline>,
    kind: Kind,
    tile: u32,
    capacity: u32,
    scratch: Buffer,
    indirect: IndirectArgs,
}

impl Reduce {
    /// Scratch bytes per input element (one partial per tile) for scalars; a few bytes fixed.
    pub const SCRATCH_BYTES_PER_ELEMENT: f64 = 4.0 / (WORKGROUP_SIZE * ITEMS_PER_INVOCATION) as f64;

    /// A scalar reduction of `ty` values with `op`.
    pub fn new(ctx: &Context, op: ReduceOp, ty: ScalarType, capacity: u32) -> Result<Self> {
        let pipeline = ctx.pipeline(
            &shaders::PRIMS_REDUCE,
            WORKGROUP_SIZE,
            &[
                ("OP", op as u32),
                ("FLOAT", (ty == ScalarType::F32) as u32),
                ("ITEMS_PER_INVOCATION", ITEMS_PER_INVOCATION),
            ],
        )?;
        Self::with(
            ctx,
            pipeline,
            Kind::Scalar,
            WORKGROUP_SIZE * ITEMS_PER_INVOCATION,
            4,
            capacity,
        )
    }

    /// The union of [`Aabb`](crate::geom::Aabb)s.
    pub fn aabb_union(ctx: &Context, capacity: u32) -> Result<Self> {
        let pipeline = ctx.pipeline(
            &shaders::PRIMS_REDUCE_AABB,
            WORKGROUP_SIZE,
            &[("ITEMS_PER_INVOCATION", AABB_ITEMS_PER_INVOCATION)],
        )?;
        let tile = WORKGROUP_SIZE * AABB_ITEMS_PER_INVOCATION;
        Self::with(ctx, pipeline, Kind::Aabb, tile, 32, capacity)
    }

    fn with(
        ctx: &Context,
        pipeline: Arc<Pipeline>,
        kind: Kind,
        tile: u32,
        partial_bytes: u64,
        capacity: u32,
    ) -> Result<Self> {
        let tiles = capacity.div_ceil(tile).max(1) as u64;
        // The counter occupies the first partial slot's space (slots start at index 1).
        let scratch = ctx.create_buffer(
            "reduce scratch",
            partial_bytes * (tiles + 1),
            MemoryKind::Device,
        )?;
        ctx.submit_and_wait(|rec| {
            rec.fill(&scratch, 0, 4, 0);
            Ok(())
        })?;
        Ok(Self {
            pipeline,
            kind,
            tile,
            capacity,
            scratch,
            indirect: IndirectArgs::new(ctx, "reduce", 1)?,
        })
    }

    /// Records the reduction of `count` elements of `input` into the first element of `output`
    /// (`T` is u32 or f32 for scalar reductions, [`crate::geom::Aabb`] for unions). Zero device counts give
    /// the identity.
    pub fn record<T: bytemuck::Pod>(
        &self,
        rec: &mut Recorder,
        input: Slice<T>,
        output: Slice<T>,
        count: Count,
    ) -> Result<()> {
        check_count("reduce", &count, self.capacity)?;
        let element = match self.kind {
            Kind::Scalar => 4,
            Kind::Aabb => 32,
        };
        if std::mem::size_of::<T>() != element {
            return Err(Error::InvalidInput(format!(
                "reduce: elements of {} bytes given to a reduction of {element}-byte values",
                std::mem::size_of::<T>()
            )));
        }
        let align = element.min(16) as u64;
        input.check("reduce input", count.max() as u64, align)?;
        output.check("reduce output", 1, align)?;
        let (count_address, host_count) = count.push();
        let push = ReducePush {
            input_address: input.address(),
            output_address: output.address(),
            count_address,
            scratch_address: self.scratch.address(),
            host_count,
            pad: 0,
        };
        let groups = self.indirect.groups_for(rec, 0, &count, self.tile, 1)?;
        rec.dispatch_groups(&self.pipeline, &push, &groups)?;
        Ok(())
    }
}
