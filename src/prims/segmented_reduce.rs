//! Segmented reduction by atomics (`glsl/prims/segmented_reduce.comp`), after Chang 2013: every
//! element carries a u32 segment id, and `output[id]` is combined (add, min or max of u32, or of
//! f32) with all values of that id, in one dispatch.
//!
//! Why atomics and not a segmented scan: the ids need not be sorted (a sort would cost far more
//! than the reduction), and where equal ids come in runs (triangles grouped by kd-tree node)
//! each subgroup merges a run with shuffles first, so it costs one atomic per run rather than one
//! per element. The caller initialises the output with the identity ([`SegmentedReduce::record_init`]);
//! several recordings may then accumulate into the same output.
//!
//! f32 min and max run as unsigned integer atomics on an order-preserving encoding of the float
//! ([`encode_ordered`]), which every device supports: while reducing, the output holds encoded
//! values; [`SegmentedReduce::record_decode`] turns them into plain f32 in place (or decode on
//! the host with [`decode_ordered`]). f32 add runs as a compare-and-swap loop on the bits, so it
//! needs no float-atomic feature either; its sums are added in an unspecified order and may
//! differ by rounding from run to run. u32 sums wrap modulo 2^32.

use super::indirect::IndirectArgs;
use super::reduce::{ReduceOp, ScalarType};
use super::{WORKGROUP_SIZE, check_count};
use crate::shaders;
use crate::vk::{Buffer, Context, Error, Pipeline, Recorder, Result};
use crate::vk::{Count, Slice};
use std::sync::Arc;

/// Push constants of `segmented_reduce.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SegmentedReducePush {
    /// Input values (u32 or f32).
    pub values_address: u64,
    /// Input u32 segment ids.
    pub ids_address: u64,
    /// One value per segment, initialised by the caller.
    pub output_address: u64,
    /// Device count or 0.
    pub count_address: u64,
    /// Host count (when decoding: the number of segments).
    pub host_count: u32,
    /// Upper bound of the count (device counts are clamped to it).
    pub max_count: u32,
    /// Segments in the output; ids at or above it are ignored.
    pub segments: u32,
    /// Padding.
    pub pad: u32,
}

const ITEMS_PER_INVOCATION: u32 = 16;
/// Elements per workgroup.
pub const TILE: u32 = WORKGROUP_SIZE * ITEMS_PER_INVOCATION;

/// The order-preserving u32 encoding of an f32 that f32 min/max outputs hold while reducing:
/// unsigned order of the encodings is the order of the floats, with -0 below +0, NaNs with the
/// sign bit clear above +inf and NaNs with it set below -inf.
pub fn encode_ordered(value: f32) -> u32 {
    let bits = value.to_bits();
    if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// The f32 of an [`encode_ordered`] encoding (exact inverse).
pub fn decode_ordered(encoded: u32) -> f32 {
    f32::from_bits(if encoded & 0x8000_0000 != 0 {
        encoded & 0x7fff_ffff
    } else {
        !encoded
    })
}

fn overlap(a: (&Buffer, u64, u64), b: (&Buffer, u64, u64)) -> bool {
    a.0.raw() == b.0.raw() && a.1 < b.2 && b.1 < a.2
}

fn range<'a, T>(slice: &Slice<'a, T>, len: u64) -> (&'a Buffer, u64, u64) {
    (
        slice.buffer,
        slice.offset,
        slice.offset + std::mem::size_of::<T>() as u64 * len,
    )
}

fn check_element<T>(what: &str) -> Result<()> {
    if std::mem::size_of::<T>() != 4 {
        return Err(Error::InvalidInput(format!(
            "segmented reduce: {what} of {}-byte elements (u32 or f32 expected)",
            std::mem::size_of::<T>()
        )));
    }
    Ok(())
}

/// A segmented reduction kernel for one operator and type, for up to `capacity` elements.
pub struct SegmentedReduce {
    pipeline: Arc<Pipeline>,
    decode: Option<Arc<Pipeline>>,
    op: ReduceOp,
    ty: ScalarType,
    capacity: u32,
    indirect: IndirectArgs,
}

impl SegmentedReduce {
    /// Scratch bytes per element: none (the output is combined into directly).
    pub const SCRATCH_BYTES_PER_ELEMENT: f64 = 0.0;

    /// A segmented reduction of `ty` values with `op`, for up to `capacity` elements.
    pub fn new(ctx: &Context, op: ReduceOp, ty: ScalarType, capacity: u32) -> Result<Self> {
        let constants = |mode: u32| {
            [
                ("OP", op as u32),
                ("FLOAT", (ty == ScalarType::F32) as u32),
                ("ITEMS_PER_INVOCATION", ITEMS_PER_INVOCATION),
                ("MODE", mode),
            ]
        };
        let pipeline = ctx.pipeline(
            &shaders::PRIMS_SEGMENTED_REDUCE,
            WORKGROUP_SIZE,
            &constants(0),
        )?;
        let encoded = ty == ScalarType::F32 && op != ReduceOp::Add;
        let decode = if encoded {
            Some(ctx.pipeline(
                &shaders::PRIMS_SEGMENTED_REDUCE,
                WORKGROUP_SIZE,
                &constants(1),
            )?)
        } else {
            None
        };
        Ok(Self {
            pipeline,
            decode,
            op,
            ty,
            capacity,
            indirect: IndirectArgs::new(ctx, "segmented reduce", 1)?,
        })
    }

    /// Whether the output holds [`encode_ordered`] encodings while reducing (f32 min and max).
    pub fn output_is_encoded(&self) -> bool {
        self.decode.is_some()
    }

    /// The bits every segment starts from: 0 for add (also 0.0), `u32::MAX` / 0 for u32 min /
    /// max, and the encodings of +inf / -inf for f32 min / max (so empty segments decode to
    /// +inf / -inf, as [`super::reduce::Reduce`] gives for empty input).
    pub fn identity_bits(&self) -> u32 {
        match (self.op, self.ty) {
            (ReduceOp::Add, _) => 0,
            (ReduceOp::Min, ScalarType::U32) => u32::MAX,
            (ReduceOp::Max, ScalarType::U32) => 0,
            (ReduceOp::Min, ScalarType::F32) => encode_ordered(f32::INFINITY),
            (ReduceOp::Max, ScalarType::F32) => encode_ordered(f32::NEG_INFINITY),
        }
    }

    /// Records filling the first `segments` elements of `output` with the identity
    /// ([`Self::identity_bits`]) and the barrier that orders the fill before later compute work.
    /// The caller orders earlier users of `output` before it.
    pub fn record_init<T: bytemuck::Pod>(
        &self,
        rec: &mut Recorder,
        output: Slice<T>,
        segments: u32,
    ) -> Result<()> {
        check_element::<T>("output")?;
        if segments == 0 {
            return Err(Error::InvalidInput(
                "segmented reduce: zero segments".into(),
            ));
        }
        output.check("segmented reduce output", segments as u64, 4)?;
        rec.fill(
            output.buffer,
            output.offset,
            4 * segments as u64,
            self.identity_bits(),
        );
        rec.barrier_transfer_to_compute();
        Ok(())
    }

    /// Records combining `count` elements into `output`: for each element `i` with
    /// `ids[i] < segments`, `output[ids[i]] = op(output[ids[i]], values[i])`; elements with
    /// larger ids are ignored. `T` is u32 or f32 as the reduction was created for; `output`
    /// holds `segments` elements, initialised by [`Self::record_init`] or earlier recordings,
    /// and must not overlap the inputs. All 4-byte aligned. A zero device count changes nothing.
    ///
    /// The caller orders earlier writes of the inputs and output before this, and this before
    /// readers of the output (or [`Self::record_decode`], which does so itself).
    pub fn record<T: bytemuck::Pod>(
        &self,
        rec: &mut Recorder,
        values: Slice<T>,
        ids: Slice<u32>,
        output: Slice<T>,
        segments: u32,
        count: Count,
    ) -> Result<()> {
        check_count("segmented reduce", &count, self.capacity)?;
        check_element::<T>("values")?;
        if segments == 0 {
            return Err(Error::InvalidInput(
                "segmented reduce: zero segments".into(),
            ));
        }
        let n = count.max() as u64;
        values.check("segmented reduce values", n, 4)?;
        ids.check("segmented reduce ids", n, 4)?;
        output.check("segmented reduce output", segments as u64, 4)?;
        let out = range(&output, segments as u64);
        if overlap(out, range(&values, n)) || overlap(out, range(&ids, n)) {
            return Err(Error::InvalidInput(format!(
                "segmented reduce: the output overlaps the input in '{}'",
                output.buffer.name()
            )));
        }
        let (count_address, host_count) = count.push();
        let push = SegmentedReducePush {
            values_address: values.address(),
            ids_address: ids.address(),
            output_address: output.address(),
            count_address,
            host_count,
            max_count: count.max(),
            segments,
            pad: 0,
        };
        let groups = self.indirect.groups_for(rec, 0, &count, TILE, 0)?;
        rec.dispatch_groups(&self.pipeline, &push, &groups)?;
        Ok(())
    }

    /// For f32 min and max, records turning the first `segments` encoded elements of `output`
    /// into plain f32 in place, after a barrier that orders the reductions recorded before it;
    /// for other reductions, whose output is never encoded, records nothing. Decode once, after
    /// the last [`Self::record`] into this output.
    pub fn record_decode<T: bytemuck::Pod>(
        &self,
        rec: &mut Recorder,
        output: Slice<T>,
        segments: u32,
    ) -> Result<()> {
        check_element::<T>("output")?;
        let Some(decode) = &self.decode else {
            return Ok(());
        };
        if segments == 0 {
            return Err(Error::InvalidInput(
                "segmented reduce: zero segments".into(),
            ));
        }
        output.check("segmented reduce output", segments as u64, 4)?;
        let push = SegmentedReducePush {
            values_address: 0,
            ids_address: 0,
            output_address: output.address(),
            count_address: 0,
            host_count: segments,
            max_count: segments,
            segments,
            pad: 0,
        };
        rec.barrier_compute_to_compute();
        rec.dispatch(decode, &push, segments.div_ceil(WORKGROUP_SIZE))?;
        Ok(())
    }
}
