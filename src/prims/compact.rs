//! Stable stream compaction of u32 (`glsl/prims/compact.comp`): keeps the elements whose flag is
//! nonzero, in order, and writes how many were kept to device memory, in one dispatch.
//!
//! Why one pass: the output position of a kept element is the exclusive prefix sum of the flags,
//! so compaction is a scan whose result is used as an address. Doing it with the decoupled
//! look-back of [`super::scan`] reads the flags and values once and writes the kept elements
//! once, with no intermediate array of offsets; per-subgroup counts come from ballots. The count
//! written is a u32 that later GPU work can take as a [`Count::Device`], so work lists built by
//! compaction stay on the GPU. Without values, the kept *indices* are written (a work list).
//!
//! The look-back waits a bounded number of polls for a predecessor tile, then counts that tile's
//! flags itself (`glsl/common/lookback_fallback.glsl`): lavapipe caps the loop iterations of a
//! shader and silently leaves loops past the cap, so an unbounded wait for a workgroup whose
//! thread the OS preempted gave wrong counts there now and then.

use super::indirect::IndirectArgs;
use super::{WORKGROUP_SIZE, check_count, lookback_scratch};
use crate::shaders;
use crate::vk::{Buffer, Context, Error, Pipeline, Recorder, Result};
use crate::vk::{Count, Slice};
use std::sync::Arc;

/// Push constants of `compact.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CompactPush {
    /// Input u32 values, or 0 to write the kept indices.
    pub values_address: u64,
    /// u32 flags, nonzero = keep.
    pub flags_address: u64,
    /// Where the kept values (or indices) go.
    pub output_address: u64,
    /// Receives the number kept (u32).
    pub kept_count_address: u64,
    /// Device count or 0.
    pub count_address: u64,
    /// Ticket and tile descriptors.
    pub scratch_address: u64,
    /// Host count.
    pub host_count: u32,
    /// Upper bound of the count (device counts are clamped to it).
    pub max_count: u32,
}

const ITEMS_PER_INVOCATION: u32 = 16;
/// Look-back polls before a tile counts a stalled predecessor's flags itself
/// (`glsl/common/lookback_fallback.glsl`).
const SPIN_LIMIT: u32 = 1024;
/// Elements per workgroup tile.
pub const TILE: u32 = WORKGROUP_SIZE * ITEMS_PER_INVOCATION;

/// A stream-compaction kernel with scratch for up to `capacity` elements.
pub struct Compact {
    pipeline: Arc<Pipeline>,
    capacity: u32,
    scratch: Buffer,
    indirect: IndirectArgs,
}

/// Byte range `[start, end)` of `len` u32 elements of a slice, with its buffer.
fn range<'a>(slice: &Slice<'a, u32>, len: u64) -> (&'a Buffer, u64, u64) {
    (slice.buffer, slice.offset, slice.offset + 4 * len)
}

fn overlap(a: (&Buffer, u64, u64), b: (&Buffer, u64, u64)) -> bool {
    a.0.raw() == b.0.raw() && a.1 < b.2 && b.1 < a.2
}

impl Compact {
    /// Scratch bytes per element: one 8-byte descriptor per tile (plus 8 bytes fixed).
    pub const SCRATCH_BYTES_PER_ELEMENT: f64 = 8.0 / TILE as f64;

    /// A compaction of up to `capacity` elements.
    pub fn new(ctx: &Context, capacity: u32) -> Result<Self> {
        Self::with_spin_limit(ctx, capacity, SPIN_LIMIT)
    }

    /// As [`Compact::new`], polling a window of look-back predecessors at most `spin_limit`
    /// times (at least 1) before counting their flags itself; tests pass 1 to exercise that
    /// fallback, which otherwise runs only when a predecessor is slow to publish its count.
    #[doc(hidden)]
    pub fn with_spin_limit(ctx: &Context, capacity: u32, spin_limit: u32) -> Result<Self> {
        let pipeline = ctx.pipeline(
            &shaders::PRIMS_COMPACT,
            WORKGROUP_SIZE,
            &[
                ("ITEMS_PER_INVOCATION", ITEMS_PER_INVOCATION),
                ("SPIN_LIMIT", spin_limit.max(1)),
            ],
        )?;
        Ok(Self {
            pipeline,
            capacity,
            scratch: lookback_scratch(ctx, "compact scratch", capacity.div_ceil(TILE))?,
            indirect: IndirectArgs::new(ctx, "compact", 1)?,
        })
    }

    /// Records the compaction of the first `count` elements: `output` receives, in their
    /// original order, the elements of `values` whose `flags` entry is nonzero (or, when
    /// `values` is `None`, their indices), and `kept_count[0]` the number kept (0 for a zero
    /// device count). `output` must hold `count.max()` elements (all may be kept) and must not
    /// overlap the inputs; `kept_count` must not overlap the inputs, the output or the device
    /// count (it may be the count of a later compaction). Everything is 4-byte aligned.
    ///
    /// The caller orders earlier writes of the inputs before this (e.g.
    /// [`Recorder::barrier_compute_to_compute`]) and this before readers of the output. The
    /// scratch is left zero by each use and a barrier orders each use after the previous one,
    /// so one `Compact` may be recorded many times into one command buffer.
    pub fn record(
        &self,
        rec: &mut Recorder,
        values: Option<Slice<u32>>,
        flags: Slice<u32>,
        output: Slice<u32>,
        kept_count: Slice<u32>,
        count: Count,
    ) -> Result<()> {
        check_count("compact", &count, self.capacity)?;
        let n = count.max() as u64;
        if let Some(values) = &values {
            values.check("compact values", n, 4)?;
        }
        flags.check("compact flags", n, 4)?;
        output.check("compact output", n, 4)?;
        kept_count.check("compact kept count", 1, 4)?;
        let out = range(&output, n);
        let kept = range(&kept_count, 1);
        let mut inputs = vec![("flags", range(&flags, n))];
        if let Some(values) = &values {
            inputs.push(("values", range(values, n)));
        }
        for (what, input) in &inputs {
            if overlap(out, *input) || overlap(kept, *input) {
                return Err(Error::InvalidInput(format!(
                    "compact: the output or kept count overlaps the {what} in '{}'",
                    input.0.name()
                )));
            }
        }
        if overlap(out, kept) {
            return Err(Error::InvalidInput(
                "compact: the kept count overlaps the output".into(),
            ));
        }
        if let Count::Device { buffer, offset, .. } = count
            && overlap(kept, (buffer, offset, offset + 4))
        {
            return Err(Error::InvalidInput(
                "compact: the kept count is the element count being read".into(),
            ));
        }

        // A previous use of this scratch (maybe in the same command buffer) must have ended.
        rec.barrier_compute_to_compute();
        let (count_address, host_count) = count.push();
        let push = CompactPush {
            values_address: values.map_or(0, |v| v.address()),
            flags_address: flags.address(),
            output_address: output.address(),
            kept_count_address: kept_count.address(),
            count_address,
            scratch_address: self.scratch.address(),
            host_count,
            max_count: count.max(),
        };
        // One group even for a zero device count: it writes the kept count of 0.
        let groups = self.indirect.groups_for(rec, 0, &count, TILE, 1)?;
        rec.dispatch_groups(&self.pipeline, &push, &groups)?;
        Ok(())
    }
}
