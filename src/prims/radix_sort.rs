//! Stable key-value LSD radix sort of u32 or u64 keys with u32 values, 8 bits per pass.
//!
//! Each pass is reduce-then-scan: `glsl/prims/radix_upsweep.comp` counts each tile's digits
//! into a digit-major table, [`Scan`] turns the table into output offsets, and
//! `glsl/prims/radix_scatter.comp` ranks each tile stably in shared memory (subgroup ballots)
//! and writes it out in digit order. Per pair and pass that is 12 bytes read (keys twice) and
//! 8 written. A single-pass (Onesweep-style, decoupled look-back per digit) scatter would save
//! the second key read, but its per-digit look-back produced wrong offsets intermittently on
//! lavapipe, so canopy keeps the variant in which workgroups never wait for each other.

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
    /// Padding.
    pub pad: u32,
}

/// Push constants of `radix_scatter.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ScatterPush {
    /// Keys read.
    pub keys_in_address: u64,
    /// Keys written.
    pub keys_out_address: u64,
    /// Values read.
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
    /// Padding.
    pub pad: u32,
}

const BINS: u64 = 256;
/// At most 2^31 keys.
pub const MAX_KEYS: u32 = 1 << 31;

/// A radix sorter for up to `capacity` pairs; owns the alternate key/value buffers and the
/// histogram and look-back scratch.
pub struct RadixSort {
    key_type: KeyType,
    capacity: u32,
    tile: u32,
    upsweep: Arc<Pipeline>,
    scatter: Arc<Pipeline>,
    scan: Scan,
    alt_keys: Buffer,
    alt_values: Buffer,
    table: Buffer,
    offsets: Buffer,
    indirect: IndirectArgs,
}

impl RadixSort {
    /// A sorter of `key_type` keys for up to `capacity` pairs.
    pub fn new(ctx: &Context, key_type: KeyType, capacity: u32) -> Result<Self> {
        Self::with_keys_per_invocation(ctx, key_type, capacity, None)
    }

    /// As [`RadixSort::new`], with the keys each scatter invocation handles (the tile size
    /// divided by the workgroup size) chosen instead of the largest that fits in shared memory
    /// (6 for u32 keys, 12 for u64 keys): a tuning knob for benchmarks.
    pub fn with_keys_per_invocation(
        ctx: &Context,
        key_type: KeyType,
        capacity: u32,
        keys_per_invocation: Option<u32>,
    ) -> Result<Self> {
        if capacity == 0 || capacity > MAX_KEYS {
            return Err(Error::InvalidInput(format!(
                "radix sort capacity {capacity} outside 1..={MAX_KEYS}"
            )));
        }
        let caps = ctx.caps();
        let sg = caps.subgroup_size;
        let workgroup = (16 * sg).min(256).min(caps.max_workgroup_size);
        // Shared memory: a 256-bin row per subgroup, two 256-entry tables, and the tile's keys
        // and values staged for the reorder.
        let fixed = (workgroup / sg) * 1024 + 2 * 1024 + 512;
        let staging_bytes_per_key = 4 * (key_type.words() + 1);
        let per_key_budget =
            caps.max_shared_memory.saturating_sub(fixed) / (staging_bytes_per_key * workgroup);
        // Defaults from the tile sweep of `canopy bench prims` on an H200 (BENCHMARKS.md): small
        // tiles keep more workgroups resident for u32 keys; u64 keys prefer larger ones.
        let default_keys_per_invocation = match key_type {
            KeyType::U32 => 6,
            KeyType::U64 => 12,
        };
        let keys_per_invocation =
            per_key_budget.min(keys_per_invocation.unwrap_or(default_keys_per_invocation));
        if keys_per_invocation == 0 {
            return Err(Error::MissingFeature {
                device: caps.name.clone(),
                what: format!("{fixed} bytes of shared memory for the radix sort"),
            });
        }
        let tile = workgroup * keys_per_invocation;
        let scatter = ctx.pipeline(
            &shaders::PRIMS_RADIX_SCATTER,
            workgroup,
            &[
                ("KEY_WORDS", key_type.words()),
                ("KEYS_PER_INVOCATION", keys_per_invocation),
            ],
        )?;
        let upsweep = ctx.pipeline(
            &shaders::PRIMS_RADIX_UPSWEEP,
            workgroup,
            &[
                ("KEY_WORDS", key_type.words()),
                ("KEYS_PER_INVOCATION", keys_per_invocation),
            ],
        )?;
        let tiles = capacity.div_ceil(tile);
        Ok(Self {
            key_type,
            capacity,
            tile,
            upsweep,
            scatter,
            alt_keys: ctx.create_buffer(
                "radix sort alternate keys",
                capacity as u64 * 4 * key_type.words() as u64,
                MemoryKind::Device,
            )?,
            alt_values: ctx.create_buffer(
                "radix sort alternate values",
                capacity as u64 * 4,
                MemoryKind::Device,
            )?,
            table: ctx.create_buffer(
                "radix sort digit table",
                tiles as u64 * BINS * 4,
                MemoryKind::Device,
            )?,
            offsets: ctx.create_buffer(
                "radix sort digit offsets",
                tiles as u64 * BINS * 4,
                MemoryKind::Device,
            )?,
            scan: Scan::new(ctx, ScanKind::Exclusive, tiles * BINS as u32)?,
            indirect: IndirectArgs::new(ctx, "radix sort", 1)?,
        })
    }

    /// Scratch bytes per pair: the alternate keys and values, plus one 4-byte count and one
    /// 4-byte offset per digit per tile (and the scan's descriptors of that table).
    pub fn scratch_bytes_per_element(&self) -> f64 {
        let table = 2.0 * BINS as f64 * 4.0 / self.tile as f64;
        (4 * self.key_type.words() + 4) as f64
            + table * (1.0 + Scan::SCRATCH_BYTES_PER_ELEMENT / 4.0)
    }

    /// Keys per scatter workgroup on this device.
    pub fn tile_size(&self) -> u32 {
        self.tile
    }

    /// Records a stable sort of `count` pairs by the low `key_bits` bits of the keys (rounded
    /// up to a multiple of 8; higher bits must be zero, or they are ignored). `keys` holds u32
    /// or u64 keys as this sorter was created for, viewed as u32 words. The sorted pairs end in
    /// `keys` and `values`.
    pub fn record(
        &self,
        rec: &mut Recorder,
        keys: Slice<u32>,
        values: Slice<u32>,
        count: Count,
        key_bits: u32,
    ) -> Result<()> {
        let passes = key_bits.div_ceil(8);
        if passes == 0 || key_bits > self.key_type.bits() {
            return Err(Error::InvalidInput(format!(
                "radix sort of {key_bits}-bit keys with {}-bit keys",
                self.key_type.bits()
            )));
        }
        self.record_passes(rec, keys, values, count, 0, passes)
    }

    /// Records `passes` stable 8-bit passes starting at digit `first_pass`: the multi-level
    /// split of [`super::multisplit`] and partial sorts.
    pub(crate) fn record_passes(
        &self,
        rec: &mut Recorder,
        keys: Slice<u32>,
        values: Slice<u32>,
        count: Count,
        first_pass: u32,
        passes: u32,
    ) -> Result<()> {
        check_count("radix sort", &count, self.capacity)?;
        let words = self.key_type.words();
        let max = count.max() as u64;
        keys.check("radix sort keys", max * words as u64, 4 * words as u64)?;
        values.check("radix sort values", max, 4)?;
        assert!(first_pass + passes <= self.key_type.bits() / 8);
        let (count_address, host_count) = count.push();
        // Host counts size the table exactly; device counts use the capacity's tiles, and
        // tiles beyond the count keep the zeros of a fill so the scan skips over them.
        let tile_stride = count.max().div_ceil(self.tile);
        let table_len = tile_stride * BINS as u32;
        let groups = self.indirect.groups_for(rec, 0, &count, self.tile, 0)?;
        let table = Slice::<u32>::new(&self.table, 0, table_len as u64);
        let offsets = Slice::<u32>::new(&self.offsets, 0, table_len as u64);
        let user = (keys.address(), values.address());
        let alt = (self.alt_keys.address(), self.alt_values.address());
        for p in 0..passes {
            let shift = (first_pass + p) * 8;
            let (src, dst) = if p % 2 == 0 { (user, alt) } else { (alt, user) };
            if let Count::Device { .. } = count {
                rec.barrier_compute_to_transfer();
                rec.fill(&self.table, 0, table_len as u64 * 4, 0);
                rec.barrier_transfer_to_compute();
            }
            let upsweep = UpsweepPush {
                keys_address: src.0,
                table_address: self.table.address(),
                count_address,
                host_count,
                shift,
                tile_stride,
                pad: 0,
            };
            rec.begin_stage("radix sort: upsweep");
            rec.dispatch_groups(&self.upsweep, &upsweep, &groups)?;
            rec.barrier_compute_to_compute();
            rec.end_stage();
            rec.begin_stage("radix sort: scan");
            self.scan
                .record(rec, table, offsets, Count::Host(table_len))?;
            rec.barrier_compute_to_compute();
            rec.end_stage();
            let scatter = ScatterPush {
                keys_in_address: src.0,
                keys_out_address: dst.0,
                values_in_address: src.1,
                values_out_address: dst.1,
                table_address: self.offsets.address(),
                count_address,
                host_count,
                shift,
                tile_stride,
                pad: 0,
            };
            rec.begin_stage("radix sort: scatter");
            rec.dispatch_groups(&self.scatter, &scatter, &groups)?;
            rec.barrier_compute_to_compute();
            rec.end_stage();
        }
        if passes % 2 == 1 {
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
