//! `canopy selfcheck`: every GPU primitive on seeded random input at a few sizes, compared with
//! its CPU reference in `canopy::prims::cpu`. One line per check and size, with the GPU time from
//! timestamps and the wall time (upload, run, readback and the CPU reference together).
//!
//! Adding a primitive: write `fn my_prim(t: &mut Trial, n: u32) -> Result<Verdict>` (generate
//! input with `t.rng`, record through `t.gpu(|rec| ...)`, compare with [`compare`]) and add a
//! line to [`checks`].

use super::CliError;
use canopy::geom::aabb::Aabb;
use canopy::prims::compact::Compact;
use canopy::prims::cpu;
use canopy::prims::multisplit::Multisplit;
use canopy::prims::radix_sort::{KeyType, RadixSort};
use canopy::prims::reduce::{Reduce, ReduceOp, ScalarType};
use canopy::prims::scan::{Scan, ScanKind};
use canopy::rng::Rng;
use canopy::vk::{Context, MemoryKind, Profiler, Recorder, Result};
use canopy::vk::{Count, Slice};
use std::fmt::Debug;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

/// Element counts every check runs at.
pub const SIZES: &[u32] = &[1, 1000, 1_000_000];

/// A named check of one primitive, run once per size.
pub struct Check {
    /// Shown on its line.
    pub name: &'static str,
    /// Runs the check at `n` elements.
    pub run: fn(&mut Trial, u32) -> Result<Verdict>,
}

/// The outcome of a check that ran.
pub enum Verdict {
    /// GPU and CPU agree.
    Pass,
    /// They differ, and how.
    Fail(String),
}

/// Every check, in the order they run.
pub fn checks() -> Vec<Check> {
    let check = |name, run| Check { name, run };
    vec![
        check("reduce u32 add", |t, n| reduce_u32(t, n, ReduceOp::Add)),
        check("reduce u32 min", |t, n| reduce_u32(t, n, ReduceOp::Min)),
        check("reduce u32 max", |t, n| reduce_u32(t, n, ReduceOp::Max)),
        check("reduce f32 min", |t, n| reduce_f32(t, n, ReduceOp::Min)),
        check("reduce f32 max", |t, n| reduce_f32(t, n, ReduceOp::Max)),
        check("reduce aabb union", reduce_aabb),
        check("scan exclusive", |t, n| scan(t, n, ScanKind::Exclusive)),
        check("scan inclusive", |t, n| scan(t, n, ScanKind::Inclusive)),
        check("compact u32", compact),
        check("radix sort u32", |t, n| radix_sort(t, n, KeyType::U32)),
        check("radix sort u64", |t, n| radix_sort(t, n, KeyType::U64)),
        check("multisplit 4096 bins", multisplit),
    ]
}

/// What a check works with: the context, its input generator, and the GPU time of its work.
pub struct Trial<'a> {
    /// The device.
    pub ctx: &'a Context,
    /// Seeded per check and size.
    pub rng: Rng,
    profiler: Profiler,
    gpu_ms: f64,
}

impl Trial<'_> {
    /// Records `record` into a command buffer of its own, runs it to completion, and adds its
    /// GPU time to the check's.
    pub fn gpu(&mut self, record: impl FnOnce(&mut Recorder) -> Result<()>) -> Result<()> {
        self.ctx.submit_profiled(&mut self.profiler, |rec| {
            rec.begin_stage("check");
            record(rec)?;
            rec.end_stage();
            Ok(())
        })?;
        self.gpu_ms += self.profiler.stage_ms("check")?.unwrap_or(0.0);
        Ok(())
    }
}

/// Pass when `got == expected`, else a failure naming the first difference.
pub fn compare<T: PartialEq + Debug>(got: &[T], expected: &[T]) -> Verdict {
    if got.len() != expected.len() {
        return Verdict::Fail(format!(
            "{} results, expected {}",
            got.len(),
            expected.len()
        ));
    }
    match got.iter().zip(expected).position(|(a, b)| a != b) {
        None => Verdict::Pass,
        Some(i) => {
            let wrong = got.iter().zip(expected).filter(|(a, b)| a != b).count();
            Verdict::Fail(format!(
                "{wrong} of {} differ; first at {i}: got {:?}, expected {:?}",
                got.len(),
                got[i],
                expected[i]
            ))
        }
    }
}

fn reduce_bits(t: &mut Trial, n: u32, op: ReduceOp, ty: ScalarType, bits: &[u32]) -> Result<u32> {
    let reduce = Reduce::new(t.ctx, op, ty, n)?;
    let input = t.ctx.create_buffer_with("selfcheck input", bits)?;
    let output = t
        .ctx
        .create_buffer("selfcheck output", 4, MemoryKind::Device)?;
    t.gpu(|rec| {
        reduce.record(
            rec,
            Slice::<u32>::whole(&input),
            Slice::whole(&output),
            Count::Host(n),
        )
    })?;
    Ok(t.ctx.download::<u32>(&output, 0, 1)?[0])
}

fn reduce_u32(t: &mut Trial, n: u32, op: ReduceOp) -> Result<Verdict> {
    let values = t.rng.u32s(n as usize);
    let got = reduce_bits(t, n, op, ScalarType::U32, &values)?;
    Ok(compare(&[got], &[cpu::reduce_u32(&values, op)]))
}

fn reduce_f32(t: &mut Trial, n: u32, op: ReduceOp) -> Result<Verdict> {
    let values: Vec<f32> = (0..n).map(|_| t.rng.f32_in(-1000.0, 1000.0)).collect();
    let bits: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
    let got = f32::from_bits(reduce_bits(t, n, op, ScalarType::F32, &bits)?);
    Ok(compare(&[got], &[cpu::reduce_f32(&values, op)]))
}

fn reduce_aabb(t: &mut Trial, n: u32) -> Result<Verdict> {
    let boxes: Vec<Aabb> = (0..n)
        .map(|_| {
            let lo: [f32; 3] = std::array::from_fn(|_| t.rng.f32_in(-100.0, 100.0));
            Aabb::new(lo, std::array::from_fn(|i| lo[i] + t.rng.f32_in(0.0, 5.0)))
        })
        .collect();
    let reduce = Reduce::aabb_union(t.ctx, n)?;
    let input = t.ctx.create_buffer_with("selfcheck boxes", &boxes)?;
    let output = t
        .ctx
        .create_buffer("selfcheck union", 32, MemoryKind::Device)?;
    t.gpu(|rec| {
        reduce.record(
            rec,
            Slice::<Aabb>::whole(&input),
            Slice::whole(&output),
            Count::Host(n),
        )
    })?;
    let got = t.ctx.download::<Aabb>(&output, 0, 1)?[0];
    Ok(compare(&[got], &[cpu::aabb_union(&boxes)]))
}

fn scan(t: &mut Trial, n: u32, kind: ScanKind) -> Result<Verdict> {
    let values = t.rng.u32s(n as usize);
    let scan = Scan::new(t.ctx, kind, n)?;
    let input = t.ctx.create_buffer_with("selfcheck input", &values)?;
    let output = t
        .ctx
        .create_buffer("selfcheck output", 4 * n as u64, MemoryKind::Device)?;
    t.gpu(|rec| {
        scan.record(
            rec,
            Slice::whole(&input),
            Slice::whole(&output),
            Count::Host(n),
        )
    })?;
    let got = t.ctx.download::<u32>(&output, 0, n as usize)?;
    let expected = cpu::scan_u32(&values, kind == ScanKind::Inclusive);
    Ok(compare(&got, &expected))
}

fn compact(t: &mut Trial, n: u32) -> Result<Verdict> {
    let values = t.rng.u32s(n as usize);
    let flags: Vec<u32> = t.rng.u32s(n as usize).iter().map(|f| f & 1).collect();
    let compact = Compact::new(t.ctx, n)?;
    let input = t.ctx.create_buffer_with("selfcheck values", &values)?;
    let flags_buf = t.ctx.create_buffer_with("selfcheck flags", &flags)?;
    let output = t
        .ctx
        .create_buffer("selfcheck kept", 4 * n as u64, MemoryKind::Device)?;
    let kept = t
        .ctx
        .create_buffer("selfcheck kept count", 4, MemoryKind::Device)?;
    t.gpu(|rec| {
        compact.record(
            rec,
            Some(Slice::whole(&input)),
            Slice::whole(&flags_buf),
            Slice::whole(&output),
            Slice::whole(&kept),
            Count::Host(n),
        )
    })?;
    let expected = cpu::compact_u32(Some(&values), &flags);
    let kept = t.ctx.download::<u32>(&kept, 0, 1)?[0] as usize;
    let got = t.ctx.download::<u32>(&output, 0, kept.min(n as usize))?;
    Ok(compare(&got, &expected))
}

fn radix_sort(t: &mut Trial, n: u32, key_type: KeyType) -> Result<Verdict> {
    let words = if key_type == KeyType::U32 { 1 } else { 2 };
    let key_words = t.rng.u32s((n * words) as usize);
    let values: Vec<u32> = (0..n).collect();
    let sort = RadixSort::new(t.ctx, key_type, 32 * words, n)?;
    let keys = t.ctx.create_buffer_with("selfcheck keys", &key_words)?;
    let values_buf = t.ctx.create_buffer_with("selfcheck values", &values)?;
    t.gpu(|rec| {
        sort.record(
            rec,
            Slice::whole(&keys),
            Slice::whole(&values_buf),
            Count::Host(n),
        )
    })?;
    let got_values = t.ctx.download::<u32>(&values_buf, 0, n as usize)?;
    let got_keys = t.ctx.download::<u32>(&keys, 0, (n * words) as usize)?;
    if key_type == KeyType::U32 {
        let (keys, values) = cpu::sort_pairs(&key_words, &values);
        Ok(compare(
            &[got_keys, got_values].concat(),
            &[keys, values].concat(),
        ))
    } else {
        let wide: Vec<u64> = bytemuck::pod_collect_to_vec(&key_words);
        let (keys, values) = cpu::sort_pairs(&wide, &values);
        let keys: Vec<u32> = bytemuck::cast_slice(&keys).to_vec();
        Ok(compare(
            &[got_keys, got_values].concat(),
            &[keys, values].concat(),
        ))
    }
}

fn multisplit(t: &mut Trial, n: u32) -> Result<Verdict> {
    let bins = 4096;
    let ids: Vec<u32> = t.rng.u32s(n as usize).iter().map(|v| v % bins).collect();
    let values: Vec<u32> = (0..n).collect();
    let split = Multisplit::new(t.ctx, bins, n)?;
    let ids_buf = t.ctx.create_buffer_with("selfcheck bin ids", &ids)?;
    let values_buf = t.ctx.create_buffer_with("selfcheck values", &values)?;
    let starts = t.ctx.create_buffer(
        "selfcheck bin starts",
        4 * (bins as u64 + 4),
        MemoryKind::Device,
    )?;
    t.gpu(|rec| {
        split.record(
            rec,
            Slice::whole(&ids_buf),
            Slice::whole(&values_buf),
            Slice::whole(&starts),
            Count::Host(n),
        )
    })?;
    let (eids, evalues, estarts) = cpu::multisplit(&ids, &values, bins);
    let got = [
        t.ctx.download::<u32>(&ids_buf, 0, n as usize)?,
        t.ctx.download::<u32>(&values_buf, 0, n as usize)?,
        t.ctx.download::<u32>(&starts, 0, bins as usize + 1)?,
    ]
    .concat();
    Ok(compare(&got, &[eids, evalues, estarts].concat()))
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// Runs `check` at `n` elements: its verdict (panics, errors and validation errors are
/// failures), GPU milliseconds, and wall milliseconds.
fn run_one(ctx: &Context, index: usize, check: &Check, n: u32) -> Result<(Verdict, f64, f64)> {
    let mut trial = Trial {
        ctx,
        rng: Rng::new(0x5eed_0000_0000 ^ ((index as u64) << 32) ^ n as u64),
        profiler: Profiler::new(ctx, 64)?,
        gpu_ms: 0.0,
    };
    let start = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| (check.run)(&mut trial, n)));
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let verdict = match outcome {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => Verdict::Fail(format!("error: {e}")),
        Err(payload) => Verdict::Fail(format!("panic: {}", panic_message(&*payload))),
    };
    // A validation error during the check fails it even when the results agree.
    let verdict = match (verdict, ctx.check_validation()) {
        (Verdict::Pass, Err(e)) => Verdict::Fail(e.to_string()),
        (v, _) => v,
    };
    Ok((verdict, trial.gpu_ms, wall_ms))
}

/// Runs every check at every size, one line each; `Err` when any failed.
///
/// Each check first runs once unprinted at the smallest size, so that the times printed do
/// not include the driver compiling the kernels (lavapipe compiles at first dispatch).
pub fn run(ctx: &Context) -> Result<(), CliError> {
    let checks = checks();
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    println!(
        "selfcheck on {} ({} checks x sizes {SIZES:?}; validation {}):",
        ctx.caps().name,
        checks.len(),
        if ctx.validation_enabled() {
            "on"
        } else {
            "off"
        }
    );
    let mut failed = Vec::new();
    let mut total = 0;
    let mut report = |name: &str,
                      n: u32,
                      (verdict, gpu_ms, wall_ms): (Verdict, f64, f64),
                      label: &str| {
        total += 1;
        let (status, detail) = match &verdict {
            Verdict::Pass => ("PASS", String::new()),
            Verdict::Fail(why) => {
                failed.push(format!("{name} n={n}{label}"));
                ("FAIL", format!("  {why}"))
            }
        };
        println!(
            "{status}  {name:<width$}  n={n:<9} gpu {gpu_ms:>9.3} ms  wall {wall_ms:>9.1} ms{detail}{label}"
        );
    };
    for (index, check) in checks.iter().enumerate() {
        let warm_up = run_one(ctx, index, check, SIZES[0])?;
        if let Verdict::Fail(_) = warm_up.0 {
            report(check.name, SIZES[0], warm_up, " (warm-up)");
        }
        for &n in SIZES {
            report(check.name, n, run_one(ctx, index, check, n)?, "");
        }
    }
    if failed.is_empty() {
        println!("selfcheck: all {total} passed");
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "selfcheck: {} of {total} failed: {}",
            failed.len(),
            failed.join(", ")
        )))
    }
}
