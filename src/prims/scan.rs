//! Prefix sums of u32 (`glsl/prims/scan.comp`): single pass with decoupled look-back.
//!
//! Why single pass: a scan is bound by memory traffic. Reduce-then-scan reads the input twice
//! and writes once (3n words); decoupled look-back reads once and writes once (2n), so it can
//! approach the copy bandwidth. Its look-back spins only on tiles that have already started
//! (tiles are numbered by an atomic ticket in arrival order), so it cannot deadlock on
//! schedulers without forward-progress guarantees between workgroups, lavapipe included. Its
//! last tile leaves the look-back scratch zero for the next use: recording a scan adds one
//! dispatch and no fill.

use super::indirect::IndirectArgs;
use super::{WORKGROUP_SIZE, check_count, lookback_scratch};
use crate::shaders;
use crate::vk::{Buffer, Context, Error, Pipeline, Recorder, Result};
use crate::vk::{Count, Slice};
use std::sync::Arc;

/// Exclusive or inclusive prefix sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanKind {
    /// `out[i] = in[0] + ... + in[i-1]`
    Exclusive,
    /// `out[i] = in[0] + ... + in[i]`
    Inclusive,
}

/// Push constants of `scan.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ScanPush {
    /// Input u32 values.
    pub input_address: u64,
    /// Output u32 sums (may equal the input: in-place).
    pub output_address: u64,
    /// Device count or 0.
    pub count_address: u64,
    /// Look-back scratch: ticket, tiles finished and tile descriptors.
    pub scratch_address: u64,
    /// Host count.
    pub host_count: u32,
    /// Padding.
    pub pad: u32,
}

const VECTORS_PER_INVOCATION: u32 = 4;
/// Elements per workgroup tile.
pub const TILE: u32 = WORKGROUP_SIZE * 4 * VECTORS_PER_INVOCATION;

/// A prefix-sum kernel with scratch for up to `capacity` elements.
pub struct Scan {
    pipeline: Arc<Pipeline>,
    capacity: u32,
    scratch: Buffer,
    indirect: IndirectArgs,
}

impl Scan {
    /// Scratch bytes per element: one 8-byte descriptor per tile.
    pub const SCRATCH_BYTES_PER_ELEMENT: f64 = 8.0 / TILE as f64;

    /// A scan of up to `capacity` elements.
    pub fn new(ctx: &Context, kind: ScanKind, capacity: u32) -> Result<Self> {
        let pipeline = ctx.pipeline(
            &shaders::PRIMS_SCAN,
            WORKGROUP_SIZE,
            &[
                ("VECTORS_PER_INVOCATION", VECTORS_PER_INVOCATION),
                ("INCLUSIVE", (kind == ScanKind::Inclusive) as u32),
            ],
        )?;
        Ok(Self {
            pipeline,
            capacity,
            scratch: lookback_scratch(ctx, "scan scratch", capacity.div_ceil(TILE))?,
            indirect: IndirectArgs::new(ctx, "scan", 1)?,
        })
    }

    /// Records the scan of `count` elements of `input` into `output` (both 16-byte aligned, not
    /// overlapping: a tile whose predecessor is slow re-reads that predecessor's input). Begins
    /// with a compute → compute barrier (a previous use of its scratch must have ended), which
    /// also orders compute work recorded before it, such as the writes of `input`.
    pub fn record(
        &self,
        rec: &mut Recorder,
        input: Slice<u32>,
        output: Slice<u32>,
        count: Count,
    ) -> Result<()> {
        check_count("scan", &count, self.capacity)?;
        let bytes = count.max() as u64 * 4;
        if input.buffer.raw() == output.buffer.raw()
            && input.offset < output.offset + bytes
            && output.offset < input.offset + bytes
        {
            return Err(Error::InvalidInput(
                "scan: input and output overlap (in-place scans are not supported)".into(),
            ));
        }
        input.check("scan input", count.max() as u64, 16)?;
        output.check("scan output", count.max() as u64, 16)?;
        // A previous use of this scratch (maybe in the same command buffer) must have ended.
        rec.barrier_compute_to_compute();
        let (count_address, host_count) = count.push();
        let push = ScanPush {
            input_address: input.address(),
            output_address: output.address(),
            count_address,
            scratch_address: self.scratch.address(),
            host_count,
            pad: 0,
        };
        let groups = self.indirect.groups_for(rec, 0, &count, TILE, 0)?;
        rec.dispatch_groups(&self.pipeline, &push, &groups)?;
        Ok(())
    }
}
