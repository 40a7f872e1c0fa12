//! `canopy bench prims`: GPU-timestamp timings of every primitive over a range of sizes, with
//! the device-local copy bandwidth (a compute-shader copy) measured in the same run as the
//! yardstick, and the fixed cost of a dispatch + barrier in a recorded chain.
//!
//! Each measurement records one command buffer holding a warm-up run and `repeats` timed runs,
//! each run bracketed by timestamps; inputs that a run modifies are restored from a pristine
//! copy outside the timed brackets. The median run is reported.

use super::CliError;
use canopy::cpu::rng::Rng;
use canopy::prims::compact::Compact;
use canopy::prims::multisplit::Multisplit;
use canopy::prims::radix_sort::{KeyType, RadixSort};
use canopy::prims::reduce::{Aabb, Reduce, ReduceOp, ScalarType};
use canopy::prims::scan::{Scan, ScanKind};
use canopy::prims::segmented_reduce::SegmentedReduce;
use canopy::prims::{Count, Slice};
use canopy::shaders;
use canopy::vk::{Context, MemoryKind, Profiler, Recorder, Result};

/// Options of `canopy bench prims`.
#[derive(clap::Args, Clone, Debug)]
pub struct PrimsArgs {
    /// Smallest size, as log2 of the element count.
    #[arg(long, default_value_t = 10)]
    pub min_log2: u32,
    /// Largest size, as log2 of the element count.
    #[arg(long, default_value_t = 26)]
    pub max_log2: u32,
    /// Step between sizes, in powers of two.
    #[arg(long, default_value_t = 2)]
    pub step: u32,
    /// Timed runs per size (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 15)]
    pub repeats: u32,
    /// Size of the scan measured against the copy bandwidth, as log2 (the target: 28).
    #[arg(long, default_value_t = 28)]
    pub scan_target_log2: u32,
    /// Size of the key-value sort target, as log2 (the target: 25).
    #[arg(long, default_value_t = 25)]
    pub sort_target_log2: u32,
    /// Also time the sort target with these keys per scatter invocation (a tuning sweep).
    #[arg(long, value_delimiter = ',')]
    pub sort_keys_per_invocation: Vec<u32>,
    /// Only primitives whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
}

/// The median GPU time of a timed run and of each stage in it.
pub(super) struct Timing {
    /// Median run, in ms.
    pub(super) median_ms: f64,
    /// Per nested stage name: the median over runs of its summed time within a run.
    pub(super) stages: Vec<(String, f64)>,
}

impl Timing {
    pub(super) fn print_stages(&self) {
        for (name, ms) in &self.stages {
            println!("    {name:<30} {ms:>10.4} ms");
        }
    }
}

/// Records `setup` (untimed) then `work` (timed) `repeats + 1` times; returns the median of the
/// timed runs after the first.
pub(super) fn time_runs(
    ctx: &Context,
    repeats: u32,
    mut setup: impl FnMut(&mut Recorder) -> Result<()>,
    mut work: impl FnMut(&mut Recorder) -> Result<()>,
) -> Result<Timing> {
    // Room for the primitives' own nested stages too.
    let mut profiler = Profiler::new(ctx, (repeats + 1) * 64)?;
    ctx.submit_profiled(&mut profiler, |rec| {
        for _ in 0..=repeats {
            setup(rec)?;
            rec.begin_stage("run");
            work(rec)?;
            rec.end_stage();
            rec.barrier_compute_to_compute();
        }
        Ok(())
    })?;
    let results = profiler.results()?;
    // Split the stage list into runs at each "run" stage; skip the warm-up run.
    let mut runs: Vec<(f64, Vec<(String, f64)>)> = Vec::new();
    for (name, ms) in results {
        if name == "run" {
            runs.push((ms, Vec::new()));
        } else if let Some(run) = runs.last_mut() {
            match run.1.iter_mut().find(|s| s.0 == name) {
                Some(s) => s.1 += ms,
                None => run.1.push((name, ms)),
            }
        }
    }
    let runs = &runs[1.min(runs.len())..];
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let stages = runs
        .first()
        .map(|r| r.1.iter().map(|s| s.0.clone()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|name| {
            let per_run = runs
                .iter()
                .map(|r| r.1.iter().find(|s| s.0 == name).map_or(0.0, |s| s.1))
                .collect();
            (name, median(per_run))
        })
        .collect();
    Ok(Timing {
        median_ms: median(runs.iter().map(|r| r.0).collect()),
        stages,
    })
}

fn row(name: &str, n: u64, t: &Timing, bytes: f64, unit: &str) {
    let per_s = n as f64 / (t.median_ms * 1e-3);
    let bandwidth = if bytes > 0.0 {
        format!("{:>9.1} GB/s", bytes / (t.median_ms * 1e-3) * 1e-9)
    } else {
        String::new()
    };
    println!(
        "{name:<28} {:>6} {n:>11} {:>10.4} ms {:>9.3} G{unit}/s {bandwidth}",
        format!("2^{}", n.ilog2()),
        t.median_ms,
        per_s * 1e-9,
    );
}

/// Times `work` at every size, one row each; `bytes_per_element` is the memory traffic the
/// GB/s column counts.
fn sweep(
    ctx: &Context,
    repeats: u32,
    sizes: &[u32],
    label: &str,
    bytes_per_element: f64,
    work: impl Fn(&mut Recorder, u32) -> Result<()>,
) -> Result<()> {
    for &n in sizes {
        let t = time_runs(ctx, repeats, |_| Ok(()), |rec| work(rec, n))?;
        row(label, n as u64, &t, bytes_per_element * n as f64, "elem");
    }
    Ok(())
}

fn random_words(n: usize, seed: u64) -> Vec<u32> {
    Rng::new(seed).u32s(n)
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

/// Device-local copy bandwidth (bytes read + written per second) with the compute copy.
fn copy_bandwidth(ctx: &Context, bytes: u64, repeats: u32) -> Result<f64> {
    let src = ctx.create_buffer("bench copy source", bytes, MemoryKind::Device)?;
    let dst = ctx.create_buffer("bench copy destination", bytes, MemoryKind::Device)?;
    let vectors_per_invocation = 4;
    let pipeline = ctx.pipeline(&shaders::PRIMS_COPY, 256, &[vectors_per_invocation])?;
    let vectors = (bytes / 16) as u32;
    let push = CopyPush {
        src_address: src.address(),
        dst_address: dst.address(),
        vector_count: vectors,
        pad: 0,
    };
    let groups = vectors.div_ceil(256 * vectors_per_invocation);
    let t = time_runs(
        ctx,
        repeats,
        |_| Ok(()),
        |rec| {
            rec.dispatch(&pipeline, &push, groups)?;
            Ok(())
        },
    )?;
    let compute = 2.0 * bytes as f64 / (t.median_ms * 1e-3);
    let t_copy = time_runs(
        ctx,
        repeats,
        |_| Ok(()),
        |rec| {
            rec.copy_buffer(&src, 0, &dst, 0, bytes);
            rec.barrier_transfer_to_compute();
            Ok(())
        },
    )?;
    println!(
        "device-local copy, {} MiB: compute copy {:.1} GB/s (read+write), vkCmdCopyBuffer {:.1} GB/s",
        bytes >> 20,
        compute * 1e-9,
        2.0 * bytes as f64 / (t_copy.median_ms * 1e-3) * 1e-9
    );
    Ok(compute)
}

/// The fixed cost of one dispatch + compute->compute barrier in a recorded chain.
fn dispatch_overhead(ctx: &Context, repeats: u32) -> Result<()> {
    let pipeline = ctx.pipeline(&shaders::PRIMS_COPY, 256, &[1])?;
    let buf = ctx.create_buffer("bench empty", 16, MemoryKind::Device)?;
    let push = CopyPush {
        src_address: buf.address(),
        dst_address: buf.address(),
        vector_count: 0,
        pad: 0,
    };
    let args = ctx.create_buffer_with("bench indirect zero", &[0u32, 1, 1, 0])?;
    const CHAIN: u32 = 1000;
    let direct = time_runs(
        ctx,
        repeats,
        |_| Ok(()),
        |rec| {
            for _ in 0..CHAIN {
                rec.dispatch(&pipeline, &push, 1)?;
                rec.barrier_compute_to_compute();
            }
            Ok(())
        },
    )?;
    let indirect = time_runs(
        ctx,
        repeats,
        |_| Ok(()),
        |rec| {
            for _ in 0..CHAIN {
                rec.dispatch_indirect(&pipeline, &push, &args, 0);
                rec.barrier_compute_to_indirect();
            }
            Ok(())
        },
    )?;
    println!(
        "empty dispatch + barrier in a chain of {CHAIN}: direct {:.2} us, indirect with zero groups {:.2} us",
        direct.median_ms * 1e3 / CHAIN as f64,
        indirect.median_ms * 1e3 / CHAIN as f64
    );
    Ok(())
}

fn wanted(args: &PrimsArgs, name: &str) -> bool {
    args.only.as_ref().is_none_or(|o| name.contains(o.as_str()))
}

/// Runs the benchmark and prints one line per primitive and size.
pub fn run(ctx: &Context, args: &PrimsArgs) -> std::result::Result<(), CliError> {
    let caps = ctx.caps();
    println!(
        "canopy bench prims on {} ({}), subgroup size {}",
        caps.name, caps.driver, caps.subgroup_size
    );
    let repeats = args.repeats.max(1);
    let max_n = 1u32 << args.max_log2;
    let copy_bytes =
        (4u64 << args.scan_target_log2.max(args.max_log2)).min(caps.device_local_bytes / 4);
    let bandwidth = copy_bandwidth(ctx, copy_bytes, repeats)?;
    dispatch_overhead(ctx, repeats)?;
    let sizes: Vec<u32> = (args.min_log2..=args.max_log2)
        .step_by(args.step.max(1) as usize)
        .map(|l| 1u32 << l)
        .collect();

    let words = ctx.create_buffer_with("bench words", &random_words(max_n as usize, 1))?;
    let out = ctx.create_buffer("bench output", 4 * max_n as u64, MemoryKind::Device)?;
    let whole = Slice::<u32>::whole(&words);
    let out_slice = Slice::<u32>::whole(&out);

    if wanted(args, "reduce") {
        for (label, op, ty) in [
            ("reduce u32 add", ReduceOp::Add, ScalarType::U32),
            ("reduce f32 min", ReduceOp::Min, ScalarType::F32),
        ] {
            let reduce = Reduce::new(ctx, op, ty, max_n)?;
            sweep(ctx, repeats, &sizes, label, 4.0, |rec, n| {
                reduce.record(rec, whole, out_slice, Count::Host(n))
            })?;
        }
        let boxes = ctx.create_buffer("bench boxes", 32 * max_n as u64, MemoryKind::Device)?;
        let reduce = Reduce::aabb_union(ctx, max_n)?;
        sweep(ctx, repeats, &sizes, "reduce aabb union", 32.0, |rec, n| {
            reduce.record(
                rec,
                Slice::<Aabb>::whole(&boxes),
                Slice::<Aabb>::whole(&out),
                Count::Host(n),
            )
        })?;
    }

    if wanted(args, "scan") {
        let scan = Scan::new(ctx, ScanKind::Exclusive, max_n)?;
        sweep(ctx, repeats, &sizes, "scan exclusive u32", 8.0, |rec, n| {
            scan.record(rec, whole, out_slice, Count::Host(n))
        })?;
        let n = 1u32 << args.scan_target_log2;
        let bytes = 4 * n as u64;
        if bytes * 2 < caps.device_local_bytes {
            let input = ctx.create_buffer("bench scan target input", bytes, MemoryKind::Device)?;
            let output =
                ctx.create_buffer("bench scan target output", bytes, MemoryKind::Device)?;
            ctx.submit_and_wait(|rec| {
                rec.fill(&input, 0, bytes, 1);
                Ok(())
            })?;
            let scan = Scan::new(ctx, ScanKind::Exclusive, n)?;
            let t = time_runs(
                ctx,
                repeats,
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
            row(
                "scan exclusive u32 (target)",
                n as u64,
                &t,
                8.0 * n as f64,
                "elem",
            );
            let achieved = 2.0 * bytes as f64 / (t.median_ms * 1e-3);
            println!(
                "scan 2^{} at {:.1}% of the copy bandwidth (target 60%)",
                args.scan_target_log2,
                100.0 * achieved / bandwidth
            );
        }
    }

    if wanted(args, "compact") {
        let flags = ctx.create_buffer_with(
            "bench flags",
            &random_words(max_n as usize, 2)
                .iter()
                .map(|w| w & 1)
                .collect::<Vec<_>>(),
        )?;
        let counter = ctx.create_buffer("bench kept", 16, MemoryKind::Device)?;
        let compact = Compact::new(ctx, max_n)?;
        sweep(
            ctx,
            repeats,
            &sizes,
            "compact u32 (half kept)",
            10.0,
            |rec, n| {
                compact.record(
                    rec,
                    Some(whole),
                    Slice::whole(&flags),
                    out_slice,
                    Slice::whole(&counter),
                    Count::Host(n),
                )
            },
        )?;
    }

    if wanted(args, "segmented") {
        let segments = 1u32 << 12;
        let ids: Vec<u32> = (0..max_n)
            .map(|i| (i as u64 * segments as u64 / max_n as u64) as u32)
            .collect();
        let ids = ctx.create_buffer_with("bench segment ids", &ids)?;
        let segmented = SegmentedReduce::new(ctx, ReduceOp::Add, ScalarType::U32, max_n)?;
        sweep(
            ctx,
            repeats,
            &sizes,
            "segmented reduce u32 add",
            8.0,
            |rec, n| {
                segmented.record(
                    rec,
                    whole,
                    Slice::whole(&ids),
                    out_slice,
                    segments,
                    Count::Host(n),
                )
            },
        )?;
    }

    if wanted(args, "sort") {
        let sort_max = max_n.max(1 << args.sort_target_log2);
        let mut sort_sizes = sizes.clone();
        if !sort_sizes.contains(&(1 << args.sort_target_log2)) {
            sort_sizes.push(1 << args.sort_target_log2);
        }
        for key_type in [KeyType::U32, KeyType::U64] {
            let words_per_key = if key_type == KeyType::U32 { 1 } else { 2 };
            let pristine = ctx.create_buffer_with(
                "bench sort pristine keys",
                &random_words(sort_max as usize * words_per_key, 3),
            )?;
            let keys = ctx.create_buffer("bench sort keys", pristine.size(), MemoryKind::Device)?;
            let values =
                ctx.create_buffer("bench sort values", 4 * sort_max as u64, MemoryKind::Device)?;
            let sort = RadixSort::new(ctx, key_type, sort_max)?;
            let bits = 32 * words_per_key as u32;
            for &n in &sort_sizes {
                let key_bytes = 4 * words_per_key as u64 * n as u64;
                // Each run sorts the same random keys: restore them outside the timestamps.
                let time_sort = |sort: &RadixSort| {
                    time_runs(
                        ctx,
                        repeats,
                        |rec| {
                            rec.barrier_compute_to_transfer();
                            rec.copy_buffer(&pristine, 0, &keys, 0, key_bytes);
                            rec.barrier_transfer_to_compute();
                            Ok(())
                        },
                        |rec| {
                            let (keys, values) = (Slice::whole(&keys), Slice::whole(&values));
                            sort.record(rec, keys, values, Count::Host(n), bits)
                        },
                    )
                };
                let t = time_sort(&sort)?;
                let label = format!("radix sort {bits}-bit key+u32");
                row(&label, n as u64, &t, 0.0, "pair");
                if n == 1 << args.sort_target_log2 {
                    t.print_stages();
                    for &kpi in &args.sort_keys_per_invocation {
                        let tuned =
                            RadixSort::with_keys_per_invocation(ctx, key_type, n, Some(kpi))?;
                        let tuned_time = time_sort(&tuned)?;
                        let label = format!("  tile {}", tuned.tile_size());
                        row(&label, n as u64, &tuned_time, 0.0, "pair");
                        tuned_time.print_stages();
                    }
                }
                if n == 1 << args.sort_target_log2 && key_type == KeyType::U32 {
                    let rate = n as f64 / (t.median_ms * 1e-3) * 1e-9;
                    println!(
                        "sort 2^{} u32 pairs: {rate:.2} G pairs/s (target 10, ratio {:.2})",
                        args.sort_target_log2,
                        rate / 10.0
                    );
                }
            }
        }
    }

    if wanted(args, "multisplit") {
        let bins = 128 * 128 * 16;
        let pristine_ids: Vec<u32> = random_words(max_n as usize, 4)
            .iter()
            .map(|w| w % bins)
            .collect();
        let pristine = ctx.create_buffer_with("bench multisplit pristine ids", &pristine_ids)?;
        let ids = ctx.create_buffer("bench multisplit ids", pristine.size(), MemoryKind::Device)?;
        let starts = ctx.create_buffer(
            "bench multisplit starts",
            4 * (bins as u64 + 4),
            MemoryKind::Device,
        )?;
        let split = Multisplit::new(ctx, bins, max_n)?;
        for &n in &sizes {
            let t = time_runs(
                ctx,
                repeats,
                |rec| {
                    rec.barrier_compute_to_transfer();
                    rec.copy_buffer(&pristine, 0, &ids, 0, 4 * n as u64);
                    rec.barrier_transfer_to_compute();
                    Ok(())
                },
                |rec| {
                    split.record(
                        rec,
                        Slice::whole(&ids),
                        out_slice,
                        Slice::whole(&starts),
                        Count::Host(n),
                    )
                },
            )?;
            row("multisplit 262144 bins", n as u64, &t, 0.0, "elem");
        }
    }
    Ok(())
}
