//! The timing harness: GPU timestamps around repeated runs in one command buffer, and one
//! untimed run under a [`WorkCensus`] for the work counters.
//!
//! [`time_runs`] records a warm-up run and `repeats` timed runs, each bracketed by
//! timestamps; inputs that a run modifies are restored by `setup`, outside the brackets. The
//! median run is reported, with the median of each nested stage's time per run. The census
//! copies indirect arguments to the host, which would change the times, so [`count_work`]
//! runs the work once more on its own.

use crate::vk::{Context, Instruments, Profiler, Recorder, Result, WorkCensus, WorkCounts};

/// Indirect dispatches a census of one run can save (a kd-tree build records about 200).
const CENSUS_SLOTS: u32 = 4096;

/// How long the work runs untimed before the timed runs: a GPU raises its clock only after it
/// has been busy a while. An H200 idles at 345 MHz (1,980 at work) and could keep that clock
/// through a whole command buffer of ten 1080p frames (30 ms of work), which then measured
/// 4.5x slower in every stage. A CPU device (lavapipe) has no such clock and is not warmed.
const WARM_UP: std::time::Duration = std::time::Duration::from_millis(250);

/// The GPU time of one nested stage of a run (a profiler stage such as `lbvh: sort`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StageTime {
    /// The stage's name.
    pub name: String,
    /// The median over runs of its summed time within a run, in ms.
    pub ms: f64,
}

/// The median GPU time of a timed run and of each stage in it.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Timing {
    /// Timed runs the median is taken over.
    pub runs: u32,
    /// Median run, in ms.
    pub median_ms: f64,
    /// The stages of a run, in the order they began.
    pub stages: Vec<StageTime>,
}

impl Timing {
    /// The median ms of the stage called `name` (0 when the runs had none).
    pub fn stage_ms(&self, name: &str) -> f64 {
        self.stages
            .iter()
            .find(|s| s.name == name)
            .map_or(0.0, |s| s.ms)
    }
}

/// On a GPU, submits `setup` and `work` untimed for 250 ms (the clock's warm-up); then
/// records `setup` (untimed) and `work` (timed) `repeats + 1` times in one command buffer;
/// returns the median of the timed runs after the first (a warm-up). `repeats` is at least 1.
pub fn time_runs(
    ctx: &Context,
    repeats: u32,
    mut setup: impl FnMut(&mut Recorder) -> Result<()>,
    mut work: impl FnMut(&mut Recorder) -> Result<()>,
) -> Result<Timing> {
    let repeats = repeats.max(1);
    let warming = std::time::Instant::now();
    while ctx.caps().device_type != ash::vk::PhysicalDeviceType::CPU && warming.elapsed() < WARM_UP
    {
        ctx.submit_and_wait(|rec| {
            setup(rec)?;
            work(rec)
        })?;
    }
    // Room for the work's own nested stages too.
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
    // Split the stage list into runs at each "run" stage; skip the warm-up run.
    let mut runs: Vec<(f64, Vec<StageTime>)> = Vec::new();
    for (name, ms) in profiler.results()? {
        if name == "run" {
            runs.push((ms, Vec::new()));
        } else if let Some(run) = runs.last_mut() {
            match run.1.iter_mut().find(|s| s.name == name) {
                Some(s) => s.ms += ms,
                None => run.1.push(StageTime { name, ms }),
            }
        }
    }
    let runs = &runs[1.min(runs.len())..];
    let names: Vec<String> = runs
        .first()
        .map(|r| r.1.iter().map(|s| s.name.clone()).collect())
        .unwrap_or_default();
    let stages = names
        .into_iter()
        .map(|name| {
            let per_run = runs
                .iter()
                .map(|r| r.1.iter().find(|s| s.name == name).map_or(0.0, |s| s.ms))
                .collect();
            StageTime {
                name,
                ms: median(per_run),
            }
        })
        .collect();
    Ok(Timing {
        runs: runs.len() as u32,
        median_ms: median(runs.iter().map(|r| r.0).collect()),
        stages,
    })
}

/// The median of `values` (the upper one of an even count; 0 for none).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Records `work` once under a [`WorkCensus`], submits it and waits: the dispatches recorded,
/// those that did work and the barriers of one run.
pub fn count_work(
    ctx: &Context,
    work: impl FnOnce(&mut Recorder) -> Result<()>,
) -> Result<WorkCounts> {
    let mut census = WorkCensus::new(ctx, CENSUS_SLOTS)?;
    let instruments = Instruments {
        census: Some(&mut census),
        ..Default::default()
    };
    ctx.submit_instrumented(instruments, work)?.wait()?;
    Ok(census.counts())
}
