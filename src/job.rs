//! The render job's bookkeeping, for `canopy render` and for applications that run frame
//! jobs of their own: which frames a run renders ([`FramePlan`]: a shard of a frame set, less
//! the frames written already, with what earlier killed runs left cleaned up), how a stop is
//! asked for ([`StopFlag`], set by a signal handler or by the application), and what each
//! finished frame cost ([`FrameRecord`], appended as JSON lines by [`StatsLog`]).

use crate::export::{FrameSet, OutputNaming, ShardMode, frame_ranges, shard};
use crate::render::BounceStats;
use crate::sequence::FinishedFrame;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Why a job cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Frames of the plan are written already, and the run neither skips nor overwrites them.
    #[error(
        "{} of the frames to render exist already (frames {}, first {})",
        count_of(.frames.len(), "file"),
        frame_ranges(.frames),
        .first.display()
    )]
    Existing {
        /// The frames found, ascending.
        frames: Vec<u32>,
        /// The first one's path.
        first: PathBuf,
    },
    /// The output folder or the stats file cannot be made, read or written.
    #[error("{0}")]
    Output(String),
    /// A GPU or Vulkan error.
    #[error(transparent)]
    Device(#[from] crate::vk::Error),
}

/// What a run does with frames whose files exist already.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ResumeMode {
    /// They are an error ([`JobError::Existing`]), naming them.
    #[default]
    Error,
    /// They are skipped: an interrupted or failed run resumes where it stopped.
    SkipExisting,
    /// They are written over.
    Overwrite,
}

/// The frames a run renders: its shard of a frame set, less the frames written already that
/// [`ResumeMode::SkipExisting`] skips. Neither is a list of every frame, so a plan of a
/// billion frames costs no more than one of ten.
#[derive(Clone, Debug)]
pub struct FramePlan {
    frames: FrameSet,
    /// Frames of `frames` not rendered, ascending.
    skipped: Vec<u32>,
}

impl FramePlan {
    /// The frames of `frames` in shard `(index, count)` (as `mode` deals them) that `resume`
    /// leaves to render, into `naming`'s folder when frames are written (`None`: not
    /// written). Makes the output folder and removes the temporary files an earlier run,
    /// killed while writing these frames, left there (not those of a writer still alive).
    /// The frames written already are found in the folder's listing, so the cost is the
    /// folder's, whatever the range.
    pub fn new(
        frames: &FrameSet,
        (shard_of, mode): ((u32, u32), ShardMode),
        naming: Option<&OutputNaming>,
        resume: ResumeMode,
    ) -> Result<Self, JobError> {
        let mut plan = FramePlan {
            frames: shard(frames, shard_of, mode),
            skipped: Vec::new(),
        };
        let Some(naming) = naming else {
            return Ok(plan);
        };
        create_output_folder(naming.folder())?;
        let listing = std::fs::read_dir(naming.folder()).map_err(|e| {
            JobError::Output(format!(
                "the output folder {} cannot be read: {e}",
                naming.folder().display()
            ))
        })?;
        let mut existing: Vec<u32> = listing
            .flatten()
            .filter_map(|entry| plan.frame_named(naming, entry.file_name().to_str()?))
            .collect();
        existing.sort_unstable();
        existing.dedup();
        if !existing.is_empty() {
            match resume {
                ResumeMode::SkipExisting => plan.skipped = existing,
                ResumeMode::Overwrite => {}
                ResumeMode::Error => {
                    return Err(JobError::Existing {
                        first: naming.path(existing[0]),
                        frames: existing,
                    });
                }
            }
        }
        let ours = |name: &str| plan.frame_named(naming, name).is_some();
        for path in crate::atomic_file::remove_abandoned_temporaries(naming.folder(), ours) {
            log::info!("removed {}, left by a render that stopped", path.display());
        }
        Ok(plan)
    }

    /// The frames rendered.
    pub fn len(&self) -> u64 {
        self.frames.len() - self.skipped.len() as u64
    }

    /// Whether no frame is left to render.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frames rendered, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + Send + '_ {
        self.frames
            .iter()
            .filter(|f| self.skipped.binary_search(f).is_err())
    }

    /// The frames of the shard skipped as written already, ascending.
    pub fn skipped(&self) -> &[u32] {
        &self.skipped
    }

    /// The frame of this plan's shard whose file is named `name` in the output folder, if any
    /// (with a single output file, the shard's one frame).
    fn frame_named(&self, naming: &OutputNaming, name: &str) -> Option<u32> {
        if naming.is_single_file() {
            let single = naming.path(0);
            return (single.file_name()? == name)
                .then(|| self.frames.iter().next())
                .flatten();
        }
        naming.frame_of(name).filter(|&f| self.frames.contains(f))
    }
}

/// Makes the output folder, or says why it cannot be made.
fn create_output_folder(out: &Path) -> Result<(), JobError> {
    if out.exists() && !out.is_dir() {
        return Err(JobError::Output(format!(
            "the output folder {} cannot be created: a file of that name exists",
            out.display()
        )));
    }
    std::fs::create_dir_all(out).map_err(|e| {
        JobError::Output(format!(
            "the output folder {} cannot be created: {e}",
            out.display()
        ))
    })
}

/// `n` of `noun`, in words: "1 file", "3 files".
pub fn count_of(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Asks a running job to stop after the frames already being written: shared by clones, set
/// from any thread (a signal handler, an application's cancel button).
#[derive(Clone, Debug, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// A flag not set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the job to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// What a finished frame cost: its GPU stage times, what each bounce traced, and the device
/// memory alive when it finished.
#[derive(Clone, Debug)]
pub struct FrameRecord {
    /// The frame's number.
    pub frame: u32,
    /// `(stage, ms)` in the order they ran (`frame` first: the whole frame).
    pub stages: Vec<(String, f64)>,
    /// What each bounce traced and dropped.
    pub bounces: Vec<BounceStats>,
    /// Device memory alive when the frame finished, in bytes.
    pub device_memory: u64,
}

impl FrameRecord {
    /// The record of `finished`, rendered on `ctx` (read before its slot is reused).
    pub fn of(finished: &FinishedFrame, ctx: &crate::vk::Context) -> crate::vk::Result<Self> {
        Ok(Self {
            frame: finished.frame,
            stages: finished.profiler.results()?,
            bounces: finished.image.stats(),
            device_memory: ctx.device_memory().live,
        })
    }

    /// The frame's GPU time, in ms.
    pub fn gpu_ms(&self) -> f64 {
        self.stages
            .iter()
            .find(|(name, _)| name == "frame")
            .map_or(0.0, |s| s.1)
    }

    /// Rays that did not fit the renderer's lists and were not traced.
    pub fn dropped_rays(&self) -> u64 {
        let dropped = |b: &BounceStats| b.dropped_rays as u64 + b.dropped_shadow_rays as u64;
        self.bounces.iter().map(dropped).sum()
    }
}

/// A file of JSON lines, one per finished frame (frame, GPU ms, each stage's ms, rays per
/// bounce, device memory, wall time, file), appended and flushed as frames finish, so that a
/// killed job keeps the lines of its finished frames. Several jobs (shards) may append to one
/// log: each line is one write under an exclusive lock of the file.
pub struct StatsLog {
    file: std::fs::File,
    path: PathBuf,
}

impl StatsLog {
    /// Opens `path` for appending, creating it if needed.
    pub fn append(path: &Path) -> Result<Self, JobError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| JobError::Output(format!("{}: {e}", path.display())))?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Appends `record`'s line: `wall_s` seconds into the job, written to `written` (none when
    /// frames are not written).
    pub fn write(
        &mut self,
        record: &FrameRecord,
        wall_s: f64,
        written: Option<&Path>,
    ) -> Result<(), JobError> {
        let mut summed: Vec<(String, f64)> = Vec::new();
        for (name, ms) in &record.stages {
            match summed.iter_mut().find(|(n, _)| n == name) {
                Some(entry) => entry.1 += ms,
                None => summed.push((name.clone(), *ms)),
            }
        }
        let bounces: Vec<serde_json::Value> = record
            .bounces
            .iter()
            .map(|b| {
                serde_json::json!({
                    "rays": b.rays,
                    "shadow_rays": b.shadow_rays,
                    "dropped_rays": b.dropped_rays,
                    "dropped_shadow_rays": b.dropped_shadow_rays,
                })
            })
            .collect();
        let line = serde_json::json!({
            "frame": record.frame,
            "gpu_ms": record.gpu_ms(),
            "wall_s": wall_s,
            "stages_ms": summed
                .into_iter()
                .map(|(name, ms)| (name, serde_json::Value::from(ms)))
                .collect::<serde_json::Map<_, _>>(),
            "bounces": bounces,
            "device_memory_bytes": record.device_memory,
            "file": written.map(|p| p.display().to_string()),
        });
        // One write of the whole line under an exclusive lock: O_APPEND alone keeps lines of
        // several writers whole only on local file systems (not on NFS, where the lock does).
        let line = format!("{line}\n");
        let locked = self.file.lock();
        let result = self
            .file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush());
        if locked.is_ok() {
            let _ = self.file.unlock();
        }
        result.map_err(|e| JobError::Output(format!("{}: {e}", self.path.display())))
    }
}
