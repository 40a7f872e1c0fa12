//! Multi-split (Patidar 2008, seed 001 §3): reorders elements so that those of each bin are
//! contiguous, keeping their order within a bin, and reports where each bin starts.
//!
//! Bin sizes come from per-workgroup shared-memory histograms (`glsl/prims/bin_histogram.comp`,
//! global atomics when the bins exceed shared memory) and an exclusive [`Scan`]. The reordering
//! splits in levels of up to 8 bits of the bin id, each level a stable split done by the radix
//! sort's ranking and scatter (its passes); `ceil(log2(bins) / 8)` levels give any bin count up
//! to 2^32 (the 128x128 tiles x 16 slabs of Patidar's grid, 18 bits, take 3 levels of 6 bits).

use super::radix_sort::{KeyType, RadixSort};
use super::scan::{Scan, ScanKind};
use super::{WORKGROUP_SIZE, check_count};
use crate::shaders;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use crate::vk::{Count, Slice};
use std::sync::Arc;

/// Push constants of `bin_histogram.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BinHistogramPush {
    /// Bin id per element.
    pub bin_ids_address: u64,
    /// bins + 1 counts.
    pub counts_address: u64,
    /// Device count or 0.
    pub count_address: u64,
    /// Host count.
    pub host_count: u32,
    /// Number of bins.
    pub bins: u32,
}

const ITEMS_PER_INVOCATION: u32 = 16;

/// A multi-split into `bins` bins of up to `capacity` elements.
pub struct Multisplit {
    bins: u32,
    capacity: u32,
    histogram: Arc<Pipeline>,
    counts: Buffer,
    scan: Scan,
    sort: RadixSort,
}

impl Multisplit {
    /// A split into `bins` bins (at least 1) of up to `capacity` elements.
    pub fn new(ctx: &Context, bins: u32, capacity: u32) -> Result<Self> {
        if bins == 0 || bins == u32::MAX {
            return Err(Error::InvalidInput(format!("multisplit into {bins} bins")));
        }
        let fits_shared = (bins as u64 + 1) * 4 <= ctx.caps().max_shared_memory as u64 / 2;
        let shared_bins = if fits_shared { bins + 1 } else { 0 };
        let bits = 32 - (bins - 1).leading_zeros();
        Ok(Self {
            bins,
            capacity,
            histogram: ctx.pipeline(
                &shaders::PRIMS_BIN_HISTOGRAM,
                WORKGROUP_SIZE,
                &[
                    ("SHARED_BINS", shared_bins),
                    ("ITEMS_PER_INVOCATION", ITEMS_PER_INVOCATION),
                ],
            )?,
            counts: ctx.create_buffer(
                "multisplit bin counts",
                (bins as u64 + 2).next_multiple_of(4) * 4,
                MemoryKind::Device,
            )?,
            scan: Scan::new(ctx, ScanKind::Exclusive, bins + 1)?,
            sort: RadixSort::new(ctx, KeyType::U32, bits.max(1), capacity)?,
        })
    }

    /// Split levels (the radix sort's passes, of up to 8 bits of the bin id each).
    pub fn levels(&self) -> u32 {
        self.sort.passes()
    }

    /// Scratch bytes per element (the radix sort's), plus 4 bytes per bin.
    pub fn scratch_bytes_per_element(&self) -> f64 {
        self.sort.scratch_bytes_per_element()
    }

    /// Records the split of `count` elements: `bin_ids` and `values` are reordered in place so
    /// bins are contiguous and stable; `bin_starts` (bins + 1 entries) receives where each bin
    /// starts, its last entry the number of elements with a valid id. Every id must be below
    /// `bins`: invalid ids are left out of the bin sizes, so a last entry below the count
    /// reveals them (their elements' placement is then unspecified).
    pub fn record(
        &self,
        rec: &mut Recorder,
        bin_ids: Slice<u32>,
        values: Slice<u32>,
        bin_starts: Slice<u32>,
        count: Count,
    ) -> Result<()> {
        check_count("multisplit", &count, self.capacity)?;
        bin_starts.check("multisplit bin starts", self.bins as u64 + 1, 16)?;
        bin_ids.check("multisplit bin ids", count.max() as u64, 4)?;
        let (count_address, host_count) = count.push();
        rec.begin_stage("multisplit: bin sizes");
        rec.barrier_compute_to_transfer();
        rec.fill(&self.counts, 0, self.counts.size(), 0);
        rec.barrier_transfer_to_compute();
        let push = BinHistogramPush {
            bin_ids_address: bin_ids.address(),
            counts_address: self.counts.address(),
            count_address,
            host_count,
            bins: self.bins,
        };
        let tile = WORKGROUP_SIZE * ITEMS_PER_INVOCATION;
        let groups = match count {
            Count::Host(n) => n.div_ceil(tile),
            // Over-launch for device counts: groups past the count return at once.
            Count::Device { max, .. } => max.div_ceil(tile),
        };
        rec.dispatch(&self.histogram, &push, groups)?;
        rec.barrier_compute_to_compute();
        let counts = Slice::<u32>::new(&self.counts, 0, self.bins as u64 + 1);
        self.scan
            .record(rec, counts, bin_starts, Count::Host(self.bins + 1))?;
        rec.end_stage();
        rec.begin_stage("multisplit: reorder");
        self.sort.record(rec, bin_ids, values, count)?;
        rec.end_stage();
        Ok(())
    }
}
