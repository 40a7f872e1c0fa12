//! Stable key-value LSD radix sort of u32 or u64 keys with u32 values.
//!
//! A sorter is made for keys of a given number of significant bits, which it sorts in as few
//! passes of digits of at most [`SortTuning::max_digit_bits`] bits as cover them, the digit as
//! narrow as that allows: by default (8 bits) 32-bit keys and 30-bit Morton codes in four
//! passes, 18-bit bin ids in three passes of 6 bits. Wider digits (up to 10 bits: 30-bit codes
//! in three passes) are a tuning knob: on an H100 a 10-bit pass of this kernel costs more than
//! twice an 8-bit one, so three of them lose to four (BENCHMARKS.md).
//!
//! Each pass is reduce-then-scan: `glsl/prims/radix_upsweep.comp` counts each tile's digits
//! into a digit-major table, [`Scan`] turns the table into output offsets, and
//! `glsl/prims/radix_scatter.comp` ranks each tile stably in shared memory (subgroup ballots)
//! and writes it out in digit order: three dispatches and no fill per pass. Per pair and pass
//! that is 12 bytes read (keys twice) and 8 written, plus the table (16 bytes per digit and
//! tile: written, scanned and read). A single-pass (Onesweep-style, decoupled look-back per
//! digit) scatter would save the second key read, but its per-digit look-back produced wrong
//! offsets intermittently on lavapipe, so canopy keeps the variant in which workgroups never
//! wait for each other.
//!
//! [`RadixSort::record`] sorts pairs in place; with an odd number of passes the result is
//! copied back at the end. [`RadixSort::record_indexed`] saves that copy and the values' first
//! read: the caller writes the keys where [`RadixSort::unsorted_keys`] says, and each key's
//! value is its index.

use super::check_count;
use super::indirect::IndirectArgs;
use super::scan::{Scan, ScanKind};
use crate::shaders;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use crate::vk::{Count, Slice};
use std::sync::Arc;

/// Key width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyType {
    /// 32-bit keys (4 passes for full keys).
    U32,
    /// 64-bit keys (8 passes for full keys), stored little-endian.
    U64,
}

impl KeyType {
    fn words(self) -> u32 {
        match self {
            KeyType::U32 => 1,
            KeyType::U64 => 2,
        }
    }
    fn bits(self) -> u32 {
        self.words() * 32
    }
}

/// Push constants of `radix_upsweep.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UpsweepPush {
    /// Keys.
    pub keys_address: u64,
    /// Digit-major per-tile counts.
    pub table_address: u64,
    /// Device count or 0.
    pub count_address: u64,
    /// Host count.
    pub host_count: u32,
    /// Bit position of the digit.
    pub shift: u32,
    /// Tiles per digit row of the table.
    pub tile_stride: u32,
    /// Bits of the digit (the last pass's may be fewer than the others').
    pub bits: u32,
}

/// Push constants of `radix_scatter.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ScatterPush {
    /// Keys read.
    pub keys_in_address: u64,
    /// Keys written.
    pub keys_out_address: u64,
    /// Values read (unused by the indexed first pass).
    pub values_in_address: u64,
    /// Values written.
    pub values_out_address: u64,
    /// Scanned digit-major table.
    pub table_address: u64,
    /// Device count or 0.
    pub count_address: u64,
    /// Host count.
    pub host_count: u32,
    /// Bit position of the digit.
    pub shift: u32,
    /// Tiles per digit row of the table.
    pub tile_stride: u32,
    /// Bits of the digit (the last pass's may be fewer than the others').
    pub bits: u32,
}

/// The widest digit a sort may be tuned to: 1024 bins (30-bit Morton codes in three passes).
pub const MAX_DIGIT_BITS: u32 = 10;

/// Tuning knobs of a [`RadixSort`], for benchmarks; the defaults are the fastest measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortTuning {
    /// Keys per scatter invocation (the tile size divided by the workgroup size), capped by
    /// the shared memory; default (`None`): 6 for u32 keys and 15 for u64 keys with 8-bit
    /// digits, 16 and 12 with wider ones.
    pub keys_per_invocation: Option<u32>,
    /// The widest digit of a pass, 1 to [`MAX_DIGIT_BITS`] (default 8).
    pub max_digit_bits: u32,
}

impl Default for SortTuning {
    fn default() -> Self {
        Self {
            keys_per_invocation: None,
            max_digit_bits: 8,
        }
    }
}
/// At most 2^31 keys.
pub const MAX_KEYS: u32 = 1 << 31;

/// A radix sorter of keys of up to `key_bits` significant bits for up to `capacity` pairs; owns
/// the alternate key/value buffers and the digit table and its scan.
pub struct RadixSort {
    key_type: KeyType,
    key_bits: u32,
    digit_bits: u32,
    passes: u32,
    capacity: u32,
    tile: u32,
    upsweep: Arc<Pipeline>,
    scatter: Arc<Pipeline>,
    /// The scatter of a first pass that takes each key's index as its value.
    scatter_indexed: Arc<Pipeline>,
    scan: Scan,
    alt_keys: Buffer,
    alt_values: Buffer,
    table: Buffer,
    offsets: Buffer,
    indirect: IndirectArgs,
}

impl RadixSort {
    /// A sorter of `key_type` keys by their low `key_bits` bits (those above are ignored),
    /// for up to `capacity` pairs.
    pub fn new(ctx: &Context, key_type: KeyType, key_bits: u32, capacity: u32) -> Result<Self> {
        Self::tuned(ctx, key_type, key_bits, capacity, SortTuning::default())
    }

    /// As [`RadixSort::new`], tuned otherwise than by default.
    pub fn tuned(
        ctx: &Context,
        key_type: KeyType,
        key_bits: u32,
        capacity: u32,
        tuning: SortTuning,
    ) -> Result<Self> {
        if capacity == 0 || capacity > MAX_KEYS {
            return Err(Error::InvalidInput(format!(
                "radix sort capacity {capacity} outside 1..={MAX_KEYS}"
            )));
        }
        if key_bits == 0 || key_bits > key_type.bits() {
            return Err(Error::InvalidInput(format!(
                "radix sort of {key_bits}-bit keys with {}-bit keys",
                key_type.bits()
            )));
        }
        if !(1..=MAX_DIGIT_BITS).contains(&tuning.max_digit_bits) {
            return Err(Error::InvalidInput(format!(
                "radix sort digits of {} bits: 1 to {MAX_DIGIT_BITS}",
                tuning.max_digit_bits
            )));
        }
        let passes = key_bits.div_ceil(tuning.max_digit_bits);
        let digit_bits = key_bits.div_ceil(passes);
        let bins = 1u32 << digit_bits;
        let words = key_type.words();
        let caps = ctx.caps();
        let sg = caps.subgroup_size;
        // Shared memory: a histogram row per subgroup, whose words then stage the tile's keys
        // and values for the reorder, plus two per-digit tables and the workgroup scan's words.
        let tables = 2 * bins * 4 + 512;
        let row = bins * 4;
        let mut subgroups = ((16 * sg).min(256).min(caps.max_workgroup_size) / sg).max(1);
        while subgroups > 1 && subgroups * row + tables > caps.max_shared_memory {
            subgroups /= 2;
        }
        let shortfall = |needed: u32| Error::MissingFeature {
            device: caps.name.clone(),
            what: format!("{needed} bytes of shared memory for the radix sort"),
        };
        if subgroups * row + tables > caps.max_shared_memory {
            return Err(shortfall(subgroups * row + tables));
        }
        let workgroup = subgroups * sg;
        let staging_budget = caps.max_shared_memory.saturating_sub(tables) / 4;
        let per_key_budget = staging_budget / ((words + 1) * workgroup);
        // Defaults from the tile sweeps of `canopy bench prims` (BENCHMARKS.md): small tiles
        // keep more workgroups resident for u32 keys of 8-bit digits; u64 keys and wider digits
        // (a 4x larger table per tile) prefer larger ones.
        let default_keys_per_invocation = match (key_type, digit_bits > 8) {
            (KeyType::U32, false) => 6,
            (KeyType::U32, true) => 16,
            (KeyType::U64, false) => 15,
            (KeyType::U64, true) => 12,
        };
        let keys_per_invocation = per_key_budget.min(
            tuning
                .keys_per_invocation
                .unwrap_or(default_keys_per_invocation),
        );
        if keys_per_invocation == 0 {
            return Err(shortfall(tables + (words + 1) * workgroup * 4));
        }
        let tile = workgroup * keys_per_invocation;
        let shared_words = (subgroups * bins).max(tile * (words + 1));
        let constants = [
            ("KEY_WORDS", words),
            ("KEYS_PER_INVOCATION", keys_per_invocation),
            ("DIGIT_BITS", digit_bits),
        ];
        let scatter_pipeline = |indexed: bool| {
            let scatter_constants = [
                ("SHARED_WORDS", shared_words),
                ("INDEXED_VALUES", indexed as u32),
            ];
            ctx.pipeline(
                &shaders::PRIMS_RADIX_SCATTER,
                workgroup,
                &[constants.as_slice(), &scatter_constants].concat(),
            )
        };
        let upsweep = ctx.pipeline(&shaders::PRIMS_RADIX_UPSWEEP, workgroup, &constants)?;
        let table_len = capacity.div_ceil(tile) as u64 * bins as u64;
        Ok(Self {
            key_type,
            key_bits,
            digit_bits,
            passes,
            capacity,
            tile,
            upsweep,
            scatter: scatter_pipeline(false)?,
            scatter_indexed: scatter_pipeline(true)?,
            alt_keys: ctx.create_buffer(
                "radix sort alternate keys",
                capacity as u64 * 4 * words as u64,
                MemoryKind::Device,
            )?,
            alt_values: ctx.create_buffer(
                "radix sort alternate values",
                capacity as u64 * 4,
                MemoryKind::Device,
            )?,
            table: ctx.create_buffer(
                "radix sort digit table",
                table_len * 4,
                MemoryKind::Device,
            )?,
            offsets: ctx.create_buffer(
                "radix sort digit offsets",
                table_len * 4,
                MemoryKind::Device,
            )?,
            scan: Scan::new(ctx, ScanKind::Exclusive, table_len as u32)?,
            indirect: IndirectArgs::new(ctx, "radix sort", 1)?,
        })
    }

    /// Scratch bytes per pair: the alternate keys and values, plus one 4-byte count and one
    /// 4-byte offset per digit per tile (and the scan's descriptors of that table).
    pub fn scratch_bytes_per_element(&self) -> f64 {
        let table = 2.0 * self.bins() as f64 * 4.0 / self.tile as f64;
        (4 * self.key_type.words() + 4) as f64
            + table * (1.0 + Scan::SCRATCH_BYTES_PER_ELEMENT / 4.0)
    }

    /// Bytes a sort moves in device memory per pair, counted from the kernels' access
    /// pattern: each pass reads the keys twice (upsweep and scatter) and the values once,
    /// and writes both; the first pass of [`Self::record_indexed`] reads no values. The digit
    /// table is written, scanned (read and written) and read: 16 bytes per digit per tile.
    pub fn bytes_per_pair(&self, indexed: bool) -> f64 {
        let key = 4.0 * self.key_type.words() as f64;
        let table = 16.0 * self.bins() as f64 / self.tile as f64;
        let pass = 3.0 * key + 8.0 + table;
        self.passes as f64 * pass - if indexed { 4.0 } else { 0.0 }
    }

    /// Keys per scatter workgroup on this device.
    pub fn tile_size(&self) -> u32 {
        self.tile
    }

    /// Passes of a sort.
    pub fn passes(&self) -> u32 {
        self.passes
    }

    /// Bits of the digit of each pass.
    pub fn digit_bits(&self) -> u32 {
        self.digit_bits
    }

    /// Significant key bits this sorter orders by.
    pub fn key_bits(&self) -> u32 {
        self.key_bits
    }

    fn bins(&self) -> u32 {
        1 << self.digit_bits
    }

    /// Records a stable sort of `count` pairs by their keys' low [`RadixSort::key_bits`] bits.
    /// `keys` holds u32 or u64 keys as this sorter was created for, viewed as u32 words. The
    /// sorted pairs end in `keys` and `values` (after an odd number of passes, by a copy).
    /// Recorded work ends with a barrier: compute work recorded after it reads the sorted pairs.
    pub fn record(
        &self,
        rec: &mut Recorder,
        keys: Slice<u32>,
        values: Slice<u32>,
        count: Count,
    ) -> Result<()> {
        self.record_chain(rec, keys, values, false, count)
    }

    /// Where the keys of [`RadixSort::record_indexed`] are to be written: `keys` after an even
    /// number of passes, the sorter's own alternate buffer after an odd one, so that the last
    /// pass writes `keys`.
    pub fn unsorted_keys<'a>(&'a self, keys: Slice<'a, u32>) -> Slice<'a, u32> {
        if self.passes % 2 == 1 {
            Slice::new(&self.alt_keys, 0, self.alt_keys.size() / 4)
        } else {
            keys
        }
    }

    /// Records a stable sort of the `count` keys written to [`RadixSort::unsorted_keys`]`(keys)`,
    /// each paired with its index: the sorted keys end in `keys` and their indices in `values`,
    /// with no copy and no values read. Ends with a compute → compute barrier.
    pub fn record_indexed(
        &self,
        rec: &mut Recorder,
        keys: Slice<u32>,
        values: Slice<u32>,
        count: Count,
    ) -> Result<()> {
        self.record_chain(rec, keys, values, true, count)
    }

    /// The passes: keys start in the user's `keys` or (`indexed` with an odd number of passes)
    /// in the alternate buffer, and each pass writes to the other buffer.
    fn record_chain(
        &self,
        rec: &mut Recorder,
        keys: Slice<u32>,
        values: Slice<u32>,
        indexed: bool,
        count: Count,
    ) -> Result<()> {
        check_count("radix sort", &count, self.capacity)?;
        let words = self.key_type.words();
        let max = count.max() as u64;
        keys.check("radix sort keys", max * words as u64, 4 * words as u64)?;
        values.check("radix sort values", max, 4)?;
        let (count_address, host_count) = count.push();
        // The table has a column per tile of the largest count; the upsweep covers all of them
        // (zero columns past a device count), so the scan over the whole table needs no fill.
        let tile_stride = count.max().div_ceil(self.tile);
        let table_len = tile_stride * self.bins();
        let scatter_groups = self.indirect.groups_for(rec, 0, &count, self.tile, 0)?;
        let table = Slice::<u32>::new(&self.table, 0, table_len as u64);
        let offsets = Slice::<u32>::new(&self.offsets, 0, table_len as u64);
        let user = (keys.address(), values.address());
        let alt = (self.alt_keys.address(), self.alt_values.address());
        let mut in_alt = indexed && self.passes % 2 == 1;
        for p in 0..self.passes {
            let shift = p * self.digit_bits;
            let bits = self.digit_bits.min(self.key_bits - shift);
            let (src, dst) = if in_alt { (alt, user) } else { (user, alt) };
            in_alt = !in_alt;
            let (scatter_pipeline, values_in) = if indexed && p == 0 {
                (&self.scatter_indexed, 0)
            } else {
                (&self.scatter, src.1)
            };
            let upsweep = UpsweepPush {
                keys_address: src.0,
                table_address: self.table.address(),
                count_address,
                host_count,
                shift,
                tile_stride,
                bits,
            };
            rec.begin_stage("radix sort: upsweep");
            rec.dispatch(&self.upsweep, &upsweep, tile_stride)?;
            rec.end_stage();
            // The scan's own first barrier orders the upsweep's table before it.
            rec.begin_stage("radix sort: scan");
            self.scan
                .record(rec, table, offsets, Count::Host(table_len))?;
            rec.barrier_compute_to_compute();
            rec.end_stage();
            let scatter = ScatterPush {
                keys_in_address: src.0,
                keys_out_address: dst.0,
                values_in_address: values_in,
                values_out_address: dst.1,
                table_address: self.offsets.address(),
                count_address,
                host_count,
                shift,
                tile_stride,
                bits,
            };
            rec.begin_stage("radix sort: scatter");
            rec.dispatch_groups(scatter_pipeline, &scatter, &scatter_groups)?;
            rec.barrier_compute_to_compute();
            rec.end_stage();
        }
        if in_alt {
            rec.barrier_compute_to_transfer();
            rec.copy_buffer(
                &self.alt_keys,
                0,
                keys.buffer,
                keys.offset,
                max * 4 * words as u64,
            );
            rec.copy_buffer(&self.alt_values, 0, values.buffer, values.offset, max * 4);
            rec.barrier_transfer_to_compute();
        }
        Ok(())
    }
}
