//! Every GPU primitive over a range of sizes (`canopy bench prims`, `cargo bench --bench
//! prims`), with the device-local copy bandwidth (a compute-shader copy) measured in the same
//! run as the yardstick, and the fixed cost of a dispatch + barrier in a recorded chain.

use super::Result;
use super::harness::{Timing, count_work, time_runs};
use crate::geom::aabb::Aabb;
use crate::prims::compact::Compact;
use crate::prims::multisplit::Multisplit;
use crate::prims::radix_sort::{KeyType, RadixSort, SortTuning};
use crate::prims::reduce::{Reduce, ReduceOp, ScalarType};
use crate::prims::scan::{Scan, ScanKind};
use crate::prims::segmented_reduce::SegmentedReduce;
use crate::rng::Rng;
use crate::shaders;
use crate::vk::{Buffer, Context, MemoryKind, Recorder, WorkCounts};
use crate::vk::{Count, Slice};

/// What is measured.
#[derive(Clone, Debug)]
pub struct PrimsConfig {
    /// Smallest size, as log2 of the element count.
    pub min_log2: u32,
    /// Largest size, as log2 of the element count.
    pub max_log2: u32,
    /// Step between sizes, in powers of two.
    pub step: u32,
    /// Timed runs per size after a warm-up; the median is reported.
    pub repeats: u32,
    /// Size of the scan measured against the copy bandwidth, as log2 (the target: 28); none:
    /// not measured.
    pub scan_target_log2: Option<u32>,
    /// Size of the key-value sort target, as log2 (the target: 25); none: not measured.
    pub sort_target_log2: Option<u32>,
    /// Also time the sort target with these keys per scatter invocation (a tuning sweep).
    pub sort_keys_per_invocation: Vec<u32>,
    /// Also time the sort target with digits of up to these many bits (a tuning sweep).
    pub sort_digit_bits: Vec<u32>,
    /// Only primitives whose name contains this.
    pub only: Option<String>,
}

impl Default for PrimsConfig {
    /// 2^10..2^26 in steps of 4x, 15 runs, the targets at 2^28 (scan) and 2^25 (sort).
    fn default() -> Self {
        Self {
            min_log2: 10,
            max_log2: 26,
            step: 2,
            repeats: 15,
            scan_target_log2: Some(28),
            sort_target_log2: Some(25),
            sort_keys_per_invocation: Vec::new(),
            sort_digit_bits: Vec::new(),
            only: None,
        }
    }
}

/// One primitive at one size.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PrimRow {
    /// The primitive, e.g. `radix sort 32-bit key+u32`.
    pub primitive: String,
    /// Elements (or key-value pairs).
    pub elements: u32,
    /// GPU time, with the primitive's own stages.
    pub time: Timing,
    /// Memory traffic counted for the bandwidth (0: not counted).
    pub bytes: f64,
    /// Dispatches and barriers of one run.
    pub work: WorkCounts,
    /// Whether this is a target size (its stages are worth printing).
    pub target: bool,
}

impl PrimRow {
    /// Elements per second.
    pub fn rate(&self) -> f64 {
        self.elements as f64 / (self.time.median_ms * 1e-3)
    }

    /// Bytes per second of the counted traffic, if counted.
    pub fn bandwidth(&self) -> Option<f64> {
        (self.bytes > 0.0).then(|| self.bytes / (self.time.median_ms * 1e-3))
    }
}

/// The yardsticks every primitive is compared with.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Yardsticks {
    /// Bytes of the copy.
    pub copy_bytes: u64,
    /// Device-local copy bandwidth with the compute copy, bytes read + written per second.
    pub compute_copy_bytes_per_s: f64,
    /// The same with `vkCmdCopyBuffer`.
    pub cmd_copy_bytes_per_s: f64,
    /// Chain length of the dispatch cost.
    pub chain: u32,
    /// An empty dispatch + compute->compute barrier in a chain, µs each.
    pub dispatch_us: f64,
    /// An indirect dispatch of zero groups + compute->indirect barrier in a chain, µs each.
    pub indirect_dispatch_us: f64,
}

/// A measured target.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Target {
    /// What, e.g. `scan 2^28 u32, fraction of the copy bandwidth`.
    pub what: String,
    /// The measured value.
    pub measured: f64,
    /// The target value.
    pub target: f64,
}

/// `canopy bench prims`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PrimsReport {
    /// The yardsticks.
    pub yardsticks: Yardsticks,
    /// Every primitive and size, in the order measured.
    pub rows: Vec<PrimRow>,
    /// The targets measured.
    pub targets: Vec<Target>,
}

/// The copy kernel's push constants (glsl/prims/copy.comp).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct CopyPush {
    src_address: u64,
    dst_address: u64,
    vector_count: u32,
    pad: u32,
}

/// Chain length of the dispatch cost.
const CHAIN: u32 = 1000;

/// The copy bandwidths over `bytes` and the cost of a dispatch + barrier.
fn yardsticks(ctx: &Context, bytes: u64, repeats: u32) -> Result<Yardsticks> {
    let src = ctx.create_buffer("bench copy source", bytes, MemoryKind::Device)?;
    let dst = ctx.create_buffer("bench copy destination", bytes, MemoryKind::Device)?;
    let vectors_per_invocation = 4;
    let pipeline = ctx.pipeline(
        &shaders::PRIMS_COPY,
        256,
        &[("VECTORS_PER_INVOCATION", vectors_per_invocation)],
    )?;
    let vectors = (bytes / 16) as u32;
    let push = CopyPush {
        src_address: src.address(),
        dst_address: dst.address(),
        vector_count: vectors,
        pad: 0,
    };
    let groups = vectors.div_ceil(256 * vectors_per_invocation);
    let untimed = |_: &mut Recorder| Ok(());
    let compute = time_runs(ctx, repeats, untimed, |rec| {
        rec.dispatch(&pipeline, &push, groups)?;
        Ok(())
    })?;
    let copy = time_runs(ctx, repeats, untimed, |rec| {
        rec.copy_buffer(&src, 0, &dst, 0, bytes);
        rec.barrier_transfer_to_compute();
        Ok(())
    })?;

    let empty = ctx.pipeline(&shaders::PRIMS_COPY, 256, &[("VECTORS_PER_INVOCATION", 1)])?;
    let buf = ctx.create_buffer("bench empty", 16, MemoryKind::Device)?;
    let push = CopyPush {
        src_address: buf.address(),
        dst_address: buf.address(),
        vector_count: 0,
        pad: 0,
    };
    let args = ctx.create_buffer_with("bench indirect zero", &[0u32, 1, 1, 0])?;
    let direct = time_runs(ctx, repeats, untimed, |rec| {
        for _ in 0..CHAIN {
            rec.dispatch(&empty, &push, 1)?;
            rec.barrier_compute_to_compute();
        }
        Ok(())
    })?;
    let indirect = time_runs(ctx, repeats, untimed, |rec| {
        for _ in 0..CHAIN {
            rec.dispatch_indirect(&empty, &push, &args, 0);
            rec.barrier_compute_to_indirect();
        }
        Ok(())
    })?;
    let per_second = |t: &Timing| 2.0 * bytes as f64 / (t.median_ms * 1e-3);
    Ok(Yardsticks {
        copy_bytes: bytes,
        compute_copy_bytes_per_s: per_second(&compute),
        cmd_copy_bytes_per_s: per_second(&copy),
        chain: CHAIN,
        dispatch_us: direct.median_ms * 1e3 / CHAIN as f64,
        indirect_dispatch_us: indirect.median_ms * 1e3 / CHAIN as f64,
    })
}

/// Measures rows and hands each to the caller as it is made.
struct Rows<'a, F: FnMut(&PrimRow)> {
    ctx: &'a Context,
    repeats: u32,
    on_row: F,
    rows: Vec<PrimRow>,
}

impl<F: FnMut(&PrimRow)> Rows<'_, F> {
    /// Times `work` after `setup` (untimed; it restores what `work` modifies) at `n`
    /// elements, counts the work of one more run of `work` alone, and adds the row.
    fn measure(
        &mut self,
        primitive: &str,
        n: u32,
        bytes_per_element: f64,
        target: bool,
        mut setup: impl FnMut(&mut Recorder) -> crate::vk::Result<()>,
        mut work: impl FnMut(&mut Recorder) -> crate::vk::Result<()>,
    ) -> Result<&PrimRow> {
        let time = time_runs(self.ctx, self.repeats, &mut setup, &mut work)?;
        let counts = count_work(self.ctx, work)?;
        let row = PrimRow {
            primitive: primitive.into(),
            elements: n,
            time,
            bytes: bytes_per_element * n as f64,
            work: counts,
            target,
        };
        (self.on_row)(&row);
        self.rows.push(row);
        Ok(self.rows.last().expect("just pushed"))
    }

    /// [`Self::measure`] at every size, with nothing to restore.
    fn sweep(
        &mut self,
        sizes: &[u32],
        primitive: &str,
        bytes_per_element: f64,
        mut work: impl FnMut(&mut Recorder, u32) -> crate::vk::Result<()>,
    ) -> Result<()> {
        for &n in sizes {
            self.measure(
                primitive,
                n,
                bytes_per_element,
                false,
                |_| Ok(()),
                |rec| work(rec, n),
            )?;
        }
        Ok(())
    }
}

fn random_words(n: usize, seed: u64) -> Vec<u32> {
    Rng::new(seed).u32s(n)
}

/// Runs the primitives' benchmark, calling `on_row` with each row as it is measured.
pub fn run(
    ctx: &Context,
    config: &PrimsConfig,
    on_row: impl FnMut(&PrimRow),
) -> Result<PrimsReport> {
    let caps = ctx.caps();
    let repeats = config.repeats.max(1);
    let wanted = |name: &str| {
        config
            .only
            .as_ref()
            .is_none_or(|o| name.contains(o.as_str()))
    };
    let max_n = 1u32 << config.max_log2;
    let copy_bytes = (4u64 << config.scan_target_log2.unwrap_or(0).max(config.max_log2))
        .min(caps.device_local_bytes / 4);
    let yardsticks = yardsticks(ctx, copy_bytes, repeats)?;
    let sizes: Vec<u32> = (config.min_log2..=config.max_log2)
        .step_by(config.step.max(1) as usize)
        .map(|l| 1u32 << l)
        .collect();
    let mut bench = PrimsBench {
        ctx,
        config,
        sizes,
        max_n,
        words: ctx.create_buffer_with("bench words", &random_words(max_n as usize, 1))?,
        out: ctx.create_buffer("bench output", 4 * max_n as u64, MemoryKind::Device)?,
        rows: Rows {
            ctx,
            repeats,
            on_row,
            rows: Vec::new(),
        },
        targets: Vec::new(),
    };
    if wanted("reduce") {
        bench.reduce()?;
    }
    if wanted("scan") {
        bench.scan(yardsticks.compute_copy_bytes_per_s)?;
    }
    if wanted("compact") {
        bench.compact()?;
    }
    if wanted("segmented") {
        bench.segmented_reduce()?;
    }
    if wanted("sort") {
        bench.radix_sort()?;
    }
    if wanted("multisplit") {
        bench.multisplit()?;
    }
    Ok(PrimsReport {
        yardsticks,
        rows: bench.rows.rows,
        targets: bench.targets,
    })
}

/// One run of the primitives' benchmark: the sizes swept, the random words and the output
/// every primitive shares, and the rows and targets measured so far. Each method measures
/// one primitive.
struct PrimsBench<'a, F: FnMut(&PrimRow)> {
    ctx: &'a Context,
    config: &'a PrimsConfig,
    sizes: Vec<u32>,
    max_n: u32,
    words: Buffer,
    out: Buffer,
    rows: Rows<'a, F>,
    targets: Vec<Target>,
}

impl<F: FnMut(&PrimRow)> PrimsBench<'_, F> {
    /// Reductions: u32 add, f32 min and the union of boxes.
    fn reduce(&mut self) -> Result<()> {
        let (ctx, max_n) = (self.ctx, self.max_n);
        let (whole, out_slice) = (Slice::<u32>::whole(&self.words), Slice::whole(&self.out));
        for (label, op, ty) in [
            ("reduce u32 add", ReduceOp::Add, ScalarType::U32),
            ("reduce f32 min", ReduceOp::Min, ScalarType::F32),
        ] {
            let reduce = Reduce::new(ctx, op, ty, max_n)?;
            self.rows.sweep(&self.sizes, label, 4.0, |rec, n| {
                reduce.record(rec, whole, out_slice, Count::Host(n))
            })?;
        }
        let boxes = ctx.create_buffer("bench boxes", 32 * max_n as u64, MemoryKind::Device)?;
        let reduce = Reduce::aabb_union(ctx, max_n)?;
        self.rows
            .sweep(&self.sizes, "reduce aabb union", 32.0, |rec, n| {
                reduce.record(
                    rec,
                    Slice::<Aabb>::whole(&boxes),
                    Slice::<Aabb>::whole(&self.out),
                    Count::Host(n),
                )
            })
    }

    /// The exclusive scan at every size, and at the target size (`--scan-target`) against
    /// the copy bandwidth `copy_bytes_per_s`.
    fn scan(&mut self, copy_bytes_per_s: f64) -> Result<()> {
        let (ctx, max_n) = (self.ctx, self.max_n);
        let (whole, out_slice) = (Slice::<u32>::whole(&self.words), Slice::whole(&self.out));
        let scan = Scan::new(ctx, ScanKind::Exclusive, max_n)?;
        self.rows
            .sweep(&self.sizes, "scan exclusive u32", 8.0, |rec, n| {
                scan.record(rec, whole, out_slice, Count::Host(n))
            })?;
        let target_log2 = self.config.scan_target_log2;
        let n = target_log2.map_or(0, |log2| 1u32 << log2);
        let bytes = 4 * n as u64;
        let Some(target_log2) = target_log2 else {
            return Ok(());
        };
        if bytes * 2 >= ctx.caps().device_local_bytes {
            return Ok(());
        }
        let input = ctx.create_buffer("bench scan target input", bytes, MemoryKind::Device)?;
        let output = ctx.create_buffer("bench scan target output", bytes, MemoryKind::Device)?;
        ctx.submit_and_wait(|rec| {
            rec.fill(&input, 0, bytes, 1);
            Ok(())
        })?;
        let scan = Scan::new(ctx, ScanKind::Exclusive, n)?;
        let row = self.rows.measure(
            "scan exclusive u32 (target)",
            n,
            8.0,
            true,
            |_| Ok(()),
            |rec| {
                scan.record(
                    rec,
                    Slice::whole(&input),
                    Slice::whole(&output),
                    Count::Host(n),
                )
            },
        )?;
        let achieved = 2.0 * bytes as f64 / (row.time.median_ms * 1e-3);
        self.targets.push(Target {
            what: format!("scan 2^{target_log2} u32, fraction of the copy bandwidth"),
            measured: achieved / copy_bytes_per_s,
            target: 0.6,
        });
        Ok(())
    }

    /// Stream compaction of u32 words, half of them kept.
    fn compact(&mut self) -> Result<()> {
        let (ctx, max_n) = (self.ctx, self.max_n);
        let (whole, out_slice) = (Slice::<u32>::whole(&self.words), Slice::whole(&self.out));
        let flags: Vec<u32> = random_words(max_n as usize, 2)
            .iter()
            .map(|w| w & 1)
            .collect();
        let flags = ctx.create_buffer_with("bench flags", &flags)?;
        let counter = ctx.create_buffer("bench kept", 16, MemoryKind::Device)?;
        let compact = Compact::new(ctx, max_n)?;
        self.rows
            .sweep(&self.sizes, "compact u32 (half kept)", 10.0, |rec, n| {
                compact.record(
                    rec,
                    Some(whole),
                    Slice::whole(&flags),
                    out_slice,
                    Slice::whole(&counter),
                    Count::Host(n),
                )
            })
    }

    /// The segmented reduction of u32 words into 4096 segments.
    fn segmented_reduce(&mut self) -> Result<()> {
        let (ctx, max_n) = (self.ctx, self.max_n);
        let (whole, out_slice) = (Slice::<u32>::whole(&self.words), Slice::whole(&self.out));
        let segments = 1u32 << 12;
        let ids: Vec<u32> = (0..max_n)
            .map(|i| (i as u64 * segments as u64 / max_n as u64) as u32)
            .collect();
        let ids = ctx.create_buffer_with("bench segment ids", &ids)?;
        let segmented = SegmentedReduce::new(ctx, ReduceOp::Add, ScalarType::U32, max_n)?;
        self.rows
            .sweep(&self.sizes, "segmented reduce u32 add", 8.0, |rec, n| {
                segmented.record(
                    rec,
                    whole,
                    Slice::whole(&ids),
                    out_slice,
                    segments,
                    Count::Host(n),
                )
            })
    }

    /// The radix sort of key-value pairs: full u32 and u64 keys, and the 30- and 63-bit
    /// Morton codes of the LBVH and octree, at every size and the target size
    /// (`--sort-target`).
    fn radix_sort(&mut self) -> Result<()> {
        let target_n = self.config.sort_target_log2.map(|log2| 1u32 << log2);
        let mut sizes = self.sizes.clone();
        if let Some(n) = target_n
            && !sizes.contains(&n)
        {
            sizes.push(n);
        }
        for (key_type, bits) in [
            (KeyType::U32, 32),
            (KeyType::U32, 30),
            (KeyType::U64, 64),
            (KeyType::U64, 63),
        ] {
            self.radix_sort_keys(key_type, bits, &sizes, target_n)?;
        }
        Ok(())
    }

    /// The radix sort of one key type at `sizes`; at `target_n`, its target and the tunings
    /// of [`Self::radix_sort_tunings`].
    fn radix_sort_keys(
        &mut self,
        key_type: KeyType,
        bits: u32,
        sizes: &[u32],
        target_n: Option<u32>,
    ) -> Result<()> {
        let ctx = self.ctx;
        let sort_max = self.max_n.max(target_n.unwrap_or(0));
        let words_per_key = if key_type == KeyType::U32 { 1 } else { 2 };
        let pristine = ctx.create_buffer_with(
            "bench sort pristine keys",
            &random_words(sort_max as usize * words_per_key, 3),
        )?;
        let keys = ctx.create_buffer("bench sort keys", pristine.size(), MemoryKind::Device)?;
        let values =
            ctx.create_buffer("bench sort values", 4 * sort_max as u64, MemoryKind::Device)?;
        let sort = RadixSort::new(ctx, key_type, bits, sort_max)?;
        for &n in sizes {
            let key_bytes = 4 * words_per_key as u64 * n as u64;
            let target = Some(n) == target_n;
            // Each run sorts the same random keys: restore them outside the timestamps.
            let restore = |rec: &mut Recorder| {
                rec.barrier_compute_to_transfer();
                rec.copy_buffer(&pristine, 0, &keys, 0, key_bytes);
                rec.barrier_transfer_to_compute();
                Ok(())
            };
            let label = format!(
                "radix sort {bits}-bit key+u32 ({}x{} bits)",
                sort.passes(),
                sort.digit_bits()
            );
            let row = self.rows.measure(&label, n, 0.0, target, restore, |rec| {
                record_sort(&sort, rec, &keys, &values, n)
            })?;
            if target && bits == 32 {
                let measured = row.rate() * 1e-9;
                self.targets.push(Target {
                    what: format!("sort 2^{} u32 pairs, G pairs/s", n.ilog2()),
                    measured,
                    target: 10.0,
                });
            }
            if target {
                self.radix_sort_tunings(key_type, bits, n, restore, &keys, &values)?;
            }
        }
        Ok(())
    }

    /// The radix sort of `n` keys under each tuning asked for (`--sort-keys-per-invocation`,
    /// `--sort-digit-bits`), `restore` restoring the keys before every run.
    fn radix_sort_tunings(
        &mut self,
        key_type: KeyType,
        bits: u32,
        n: u32,
        mut restore: impl FnMut(&mut Recorder) -> crate::vk::Result<()>,
        keys: &Buffer,
        values: &Buffer,
    ) -> Result<()> {
        let config = self.config;
        let tile_sweep = config
            .sort_keys_per_invocation
            .iter()
            .map(|&keys| SortTuning {
                keys_per_invocation: Some(keys),
                ..Default::default()
            });
        let digit_sweep = config
            .sort_digit_bits
            .iter()
            .map(|&max_digit_bits| SortTuning {
                max_digit_bits,
                ..Default::default()
            });
        for tuning in tile_sweep.chain(digit_sweep) {
            let tuned = RadixSort::tuned(self.ctx, key_type, bits, n, tuning)?;
            let label = format!(
                "  {}x{} bits, tile {}",
                tuned.passes(),
                tuned.digit_bits(),
                tuned.tile_size()
            );
            self.rows
                .measure(&label, n, 0.0, true, &mut restore, |rec| {
                    record_sort(&tuned, rec, keys, values, n)
                })?;
        }
        Ok(())
    }

    /// The multisplit of u32 bin ids into 262144 bins.
    fn multisplit(&mut self) -> Result<()> {
        let (ctx, max_n) = (self.ctx, self.max_n);
        let out_slice = Slice::<u32>::whole(&self.out);
        let bins = 128 * 128 * 16;
        let ids: Vec<u32> = random_words(max_n as usize, 4)
            .iter()
            .map(|w| w % bins)
            .collect();
        let pristine = ctx.create_buffer_with("bench multisplit pristine ids", &ids)?;
        let ids = ctx.create_buffer("bench multisplit ids", pristine.size(), MemoryKind::Device)?;
        let starts = ctx.create_buffer(
            "bench multisplit starts",
            4 * (bins as u64 + 4),
            MemoryKind::Device,
        )?;
        let split = Multisplit::new(ctx, bins, max_n)?;
        for &n in &self.sizes {
            let restore = |rec: &mut Recorder| {
                rec.barrier_compute_to_transfer();
                rec.copy_buffer(&pristine, 0, &ids, 0, 4 * n as u64);
                rec.barrier_transfer_to_compute();
                Ok(())
            };
            self.rows
                .measure("multisplit 262144 bins", n, 0.0, false, restore, |rec| {
                    split.record(
                        rec,
                        Slice::whole(&ids),
                        out_slice,
                        Slice::whole(&starts),
                        Count::Host(n),
                    )
                })?;
        }
        Ok(())
    }
}

/// Records `sort` over the first `n` of `keys` and `values`.
fn record_sort(
    sort: &RadixSort,
    rec: &mut Recorder,
    keys: &Buffer,
    values: &Buffer,
    n: u32,
) -> crate::vk::Result<()> {
    sort.record(
        rec,
        Slice::whole(keys),
        Slice::whole(values),
        Count::Host(n),
    )
}
