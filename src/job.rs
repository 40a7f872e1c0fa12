//! The render job, for `canopy render` and for applications that run frame jobs of their own:
//! which frames a run renders ([`FramePlan`]: a shard of a frame set, less the frames written
//! already, with what earlier killed runs left cleaned up), how a stop is asked for
//! ([`StopFlag`], set by a signal handler or by the application), what each finished frame
//! cost ([`FrameRecord`], appended as JSON lines by [`StatsLog`]), and the job itself
//! ([`RenderJob`]: one or more devices rendering the plan's frames of a
//! [`FrameSource`], canopy's or the application's own, each frame handed to the image
//! writers, the video in frame order and the stats log, with events for progress).

use crate::export::{
    FrameImage, FrameSet, FrameWriteError, ImageFormat, ImageSequence, OutputNaming, Shard,
    VideoEncoder, VideoError, WriterOptions, WrittenFrame, frame_ranges,
};
use crate::render::{BounceStats, FrameSource};
use crate::sequence::{FinishedFrame, Flow, FrameCamera, FrameSequence, SequenceConfig};
use crate::vk::{Context, ContextOptions};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

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
    /// The video could not be fed a frame.
    #[error(transparent)]
    Video(VideoError),
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
    /// The frames of `frames` in `shard` that `resume`
    /// leaves to render, into `naming`'s folder when frames are written (`None`: not
    /// written). Makes the output folder and removes the temporary files an earlier run,
    /// killed while writing these frames, left there (not those of a writer still alive).
    /// The frames written already are found in the folder's listing, so the cost is the
    /// folder's, whatever the range.
    pub fn new(
        frames: &FrameSet,
        shard: Shard,
        naming: Option<&OutputNaming>,
        resume: ResumeMode,
    ) -> Result<Self, JobError> {
        let mut plan = FramePlan {
            frames: shard.of(frames),
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
    /// The camera it was seen through.
    pub camera: FrameCamera,
    /// Frames in flight on its device as it was handed on, itself included
    /// ([`FinishedFrame::in_flight`]).
    pub in_flight: usize,
    /// Bytes its device read back for it ([`crate::render::ImageReadback::bytes`]).
    pub readback_bytes: u64,
}

impl FrameRecord {
    /// The record of `finished`, rendered on `ctx` (read before its slot is reused).
    pub fn of(finished: &FinishedFrame, ctx: &crate::vk::Context) -> crate::vk::Result<Self> {
        Ok(Self {
            frame: finished.frame,
            stages: finished.profiler.results()?,
            bounces: finished.image.stats(),
            device_memory: ctx.device_memory().live,
            camera: finished.camera,
            in_flight: finished.in_flight,
            readback_bytes: finished.image.bytes(),
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
/// bounce, device memory, frames in flight, bytes read back, wall time, file, camera, the
/// source's instance names), appended and flushed as frames finish, so that a
/// killed job keeps the lines of its finished frames. Several jobs (shards) may append to one
/// log: each line is one write under an exclusive lock of the file.
pub struct StatsLog {
    file: std::fs::File,
    path: PathBuf,
    /// The name of each instance of the source, by id ([`FrameSource::instances`]).
    instances: Vec<Option<String>>,
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
            instances: Vec::new(),
        })
    }

    /// Appends `record`'s line: `wall_s` seconds into the job, its file `file` (none when
    /// frames are not written) and what writing it took (none when it was not written).
    pub fn write(
        &mut self,
        record: &FrameRecord,
        wall_s: f64,
        file: Option<&Path>,
        written: Option<&WrittenFrame>,
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
            "in_flight": record.in_flight,
            "readback_bytes": record.readback_bytes,
            "file": file.map(|p| p.display().to_string()),
            "bytes": written.map(|w| w.bytes),
            "encode_ms": written.map(|w| w.encode_s * 1e3),
            "camera": camera_json(&record.camera),
            "instances": self.instances,
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

/// A frame's camera as ground truth: the image size, the intrinsics K and world-to-camera
/// transform ([`FrameCamera`]'s conventions: pixels from the top left, camera x right, y down,
/// z forward), and the eye, target and vertical field of view.
fn camera_json(frame: &FrameCamera) -> serde_json::Value {
    let c = &frame.camera;
    serde_json::json!({
        "width": frame.width,
        "height": frame.height,
        "K": frame.intrinsics(),
        "world_to_camera": frame.world_to_camera(),
        "eye": c.position.to_array(),
        "target": c.target.to_array(),
        "fov_y_degrees": c.fov_y_degrees,
    })
}

/// Where a job's frames go.
#[derive(Default)]
pub struct JobOutputs {
    /// Image files, written by encoder threads.
    pub images: Option<ImageOutput>,
    /// A video, fed the frames in frame order (whichever device finishes them first).
    pub video: Option<VideoEncoder>,
    /// A JSON line per finished frame.
    pub stats: Option<StatsLog>,
}

/// A job's image files.
pub struct ImageOutput {
    /// Their folder, names and format.
    pub naming: OutputNaming,
    /// How they are encoded, and by how many threads.
    pub options: WriterOptions,
}

/// `(name, value)` text attributes of a file's header.
pub type Attributes = Vec<(String, String)>;

/// How each device of a job gets ready: its context, and on it the source of the frames it
/// renders: a [`FrameSource`] of type `S` ([`crate::render::presets::Subject`] for canopy's
/// own scenes, or an application's), made on each device's own thread.
pub struct JobSetup<'a, S, E> {
    /// Makes a device's context from its options.
    pub context: &'a (dyn Fn(&ContextOptions) -> Result<Context, E> + Sync),
    /// Makes the source on a device's context.
    pub source: &'a (dyn Fn(&Context) -> Result<S, E> + Sync),
    /// What the device renders of the source: size, structure, bounces, caustics, and the
    /// channels the image format needs ([`crate::export::output_channels`]).
    pub config: &'a (dyn Fn(&S) -> Result<SequenceConfig, E> + Sync),
    /// The text attributes of a frame's OpenEXR header (its camera, time, number).
    pub attributes: &'a (dyn Fn(u32, &S) -> Attributes + Sync),
    /// Called on each device's thread when its frames are done (e.g. to say what its
    /// caustics did).
    pub finished: &'a (dyn Fn(&Context, &FrameSequence) -> Result<(), E> + Sync),
}

impl<'a, S, E: From<crate::vk::Error>> JobSetup<'a, S, E> {
    /// Devices that make `source` and render it as `config` says, on contexts made by
    /// [`Context::new`], with no OpenEXR attributes and nothing to do when finished.
    pub fn new(
        source: &'a (dyn Fn(&Context) -> Result<S, E> + Sync),
        config: &'a (dyn Fn(&S) -> Result<SequenceConfig, E> + Sync),
    ) -> Self {
        Self {
            context: &new_context::<E>,
            source,
            config,
            attributes: &no_attributes::<S>,
            finished: &nothing_more::<E>,
        }
    }
}

fn new_context<E: From<crate::vk::Error>>(options: &ContextOptions) -> Result<Context, E> {
    Ok(Context::new(options)?)
}

fn no_attributes<S>(_: u32, _: &S) -> Attributes {
    Vec::new()
}

fn nothing_more<E>(_: &Context, _: &FrameSequence) -> Result<(), E> {
    Ok(())
}

/// A frame job: the frames of a plan rendered from a source of type `S` on one or more
/// devices at once (each pulling the next frame nobody has taken), every finished frame handed
/// to the outputs.
pub struct RenderJob<'a, S, E> {
    /// The frames.
    pub frames: &'a FramePlan,
    /// One entry per device (the same device twice runs two sequences on it).
    pub devices: &'a [ContextOptions],
    /// How each device gets ready.
    pub setup: JobSetup<'a, S, E>,
    /// Where the frames go.
    pub outputs: JobOutputs,
}

/// What a job tells its caller as it goes (on the caller's thread).
pub enum JobEvent<'a> {
    /// Every device is ready: their names, and the triangles of the source's scene. Frames
    /// start now.
    Started {
        /// The devices' names.
        devices: &'a [String],
        /// The source's triangles.
        triangles: u32,
    },
    /// A frame finished and was handed to its outputs.
    Frame {
        /// What it cost.
        record: &'a FrameRecord,
        /// Its file, when frames are written.
        file: Option<&'a Path>,
        /// Frames finished so far, this one included.
        done: u64,
        /// Frames written to files so far.
        written: usize,
        /// Frames queued for the encoders or being encoded.
        backlog: usize,
    },
}

/// What a job did.
pub struct JobReport<E> {
    /// How the rendering ended: the first error of a device, a frame's output or the video.
    pub outcome: Result<(), E>,
    /// A frame the writers could not write (it stopped the job).
    pub write_failure: Option<FrameWriteError>,
    /// The frames written to files, ascending.
    pub written: Vec<u32>,
    /// The video written and its frames, or why it failed (none without a video, or after a
    /// failed render, whose video is abandoned).
    pub video: Option<Result<(PathBuf, u32), VideoError>>,
    /// Each finished frame's GPU time, in the order they finished.
    pub gpu_ms: Vec<f64>,
    /// Rays that did not fit the renderer's lists, over every frame.
    pub dropped_rays: u64,
    /// The most frames one device had in flight at once ([`FrameRecord::in_flight`]).
    pub frames_in_flight: usize,
    /// Bytes read back per frame, the most of any frame ([`FrameRecord::readback_bytes`]).
    pub readback_bytes: u64,
    /// Seconds from the start of the frames to the last frame handed to the outputs.
    pub wall_s: f64,
}

/// A device ready to render: its name, the source's triangles and the frames' size.
struct Ready {
    name: String,
    triangles: u32,
    size: (u32, u32),
    /// The source's instance names ([`FrameSource::instances`]).
    instances: Vec<Option<String>>,
}

/// A finished frame on its way from a device to the outputs.
struct Finished {
    record: FrameRecord,
    image: Option<FrameImage>,
    video: Option<Vec<u8>>,
}

impl<S: FrameSource, E: From<JobError> + From<crate::vk::Error> + Send> RenderJob<'_, S, E> {
    /// Runs the job until every frame is done, `stop` is set, or something fails; `on_event`
    /// hears of the start and of every frame. One code path for one device and for several:
    /// each device renders on a thread of its own, and the outputs (writers, video order,
    /// stats) are fed on the caller's.
    pub fn run(self, stop: &StopFlag, mut on_event: impl FnMut(JobEvent)) -> JobReport<E> {
        let RenderJob {
            frames,
            devices,
            setup,
            outputs,
        } = self;
        let JobOutputs {
            images,
            video,
            stats,
        } = outputs;
        let image_format = images
            .as_ref()
            .map(|images| (images.naming.format(), images.options.png));
        let wants_video = video.is_some();
        let mut delivery = Delivery {
            naming: images.as_ref().map(|images| images.naming.clone()),
            writers: None,
            video,
            video_queue: BTreeMap::new(),
            video_order: (Box::new(frames.iter()) as Box<dyn Iterator<Item = u32> + Send>)
                .peekable(),
            stats,
            unlogged: BTreeMap::new(),
            gpu_ms: Vec::new(),
            dropped_rays: 0,
            frames_in_flight: 0,
            readback_bytes: 0,
        };
        let mut images = images;
        let mut started = Instant::now();
        let taken = Mutex::new(frames.iter());
        // Set by the caller's flag, a failed device or output, or writers that failed.
        let halt = AtomicBool::new(false);
        let outcome = std::thread::scope(|scope| {
            let (ready_out, ready_in) = mpsc::sync_channel::<Result<Ready, E>>(devices.len());
            // One finished frame waits per device: with the frame each device is finishing and
            // the one being handed to the outputs, what frames hold beyond the writers' bound.
            let (frames_out, frames_in) = mpsc::sync_channel::<Finished>(devices.len());
            let workers: Vec<_> = devices
                .iter()
                .map(|options| {
                    let (ready_out, frames_out) = (ready_out.clone(), frames_out.clone());
                    let (taken, halt, setup) = (&taken, &halt, &setup);
                    scope.spawn(move || -> Result<(), E> {
                        let prepared = (|| {
                            let ctx = (setup.context)(options)?;
                            let source = (setup.source)(&ctx)?;
                            let config = (setup.config)(&source)?;
                            Ok((ctx, source, config))
                        })();
                        // A device that cannot start stops every device; its error goes to
                        // the caller's thread.
                        let fail = |e: E| {
                            halt.store(true, Ordering::SeqCst);
                            let _ = ready_out.send(Err(e));
                            Ok(())
                        };
                        let (ctx, source, config) = match prepared {
                            Ok(prepared) => prepared,
                            Err(e) => return fail(e),
                        };
                        let size = (config.width, config.height);
                        let mut sequence = match FrameSequence::new(&ctx, &source, config) {
                            Ok(sequence) => sequence,
                            Err(e) => return fail(JobError::Device(e).into()),
                        };
                        log::debug!("{}: ready to render", ctx.caps().name);
                        let _ = ready_out.send(Ok(Ready {
                            name: ctx.caps().name.clone(),
                            triangles: source.scene().triangle_count,
                            size,
                            instances: source.instances().to_vec(),
                        }));
                        let pull = || match halt.load(Ordering::SeqCst) {
                            true => None,
                            false => taken.lock().ok()?.next(),
                        };
                        sequence.render_pulled(pull, |frame| {
                            let image = match image_format {
                                Some((format, png)) => {
                                    let attributes = match format {
                                        ImageFormat::Exr => {
                                            (setup.attributes)(frame.frame, &source)
                                        }
                                        _ => Vec::new(),
                                    };
                                    Some(
                                        FrameImage::of(frame.image, format, png, attributes)
                                            .ok_or(JobError::Output(
                                                "the frame lacks the channels its file holds"
                                                    .into(),
                                            ))?,
                                    )
                                }
                                None => None,
                            };
                            let finished = Finished {
                                record: FrameRecord::of(frame, &ctx).map_err(JobError::Device)?,
                                image,
                                video: wants_video.then(|| frame.image.rgba8().to_vec()),
                            };
                            match frames_out.send(finished) {
                                Ok(()) if !halt.load(Ordering::SeqCst) => Ok(Flow::Continue),
                                _ => Ok::<_, E>(Flow::Stop),
                            }
                        })?;
                        log::debug!("{}: no frame left to render", ctx.caps().name);
                        (setup.finished)(&ctx, &sequence)
                    })
                })
                .collect();
            drop((ready_out, frames_out));
            let mut names = Vec::new();
            let (mut triangles, mut size) = (0, (0, 0));
            let mut outcome: Result<(), E> = Ok(());
            for message in ready_in.iter().take(devices.len()) {
                match message {
                    Ok(ready) => {
                        names.push(ready.name);
                        (triangles, size) = (ready.triangles, ready.size);
                        if let Some(stats) = delivery.stats.as_mut() {
                            stats.instances = ready.instances;
                        }
                    }
                    Err(e) => outcome = outcome.and(Err(e)),
                }
            }
            if outcome.is_ok() {
                delivery.writers = images.take().map(|images| {
                    ImageSequence::named(images.naming, images.options, size.0, size.1)
                });
                on_event(JobEvent::Started {
                    devices: &names,
                    triangles,
                });
                started = Instant::now();
            }
            for finished in frames_in.iter() {
                if outcome.is_err() {
                    continue;
                }
                if let Err(e) = delivery.deliver(finished, started, &mut on_event) {
                    outcome = Err(e);
                }
                // A stop asked for, or a frame the writers could not write, stops the job.
                let failed = delivery.writers.as_mut().is_some_and(|w| w.failed());
                if outcome.is_err() || stop.is_stopped() || failed {
                    halt.store(true, Ordering::SeqCst);
                }
            }
            log::debug!("every device has handed over its last frame");
            for worker in workers {
                let joined = worker.join().unwrap_or_else(|_| {
                    Err(JobError::Output("a device's render thread panicked".into()).into())
                });
                if outcome.is_ok() {
                    outcome = joined;
                }
            }
            outcome
        });
        let wall_s = started.elapsed().as_secs_f64();
        // A failed render abandons the video (its temporary file is removed).
        let video = match delivery.video.take() {
            Some(video) if outcome.is_ok() => {
                let frames = video.frames();
                Some(video.finish().map(|path| (path, frames)))
            }
            _ => None,
        };
        let (written, write_failure) = match delivery.writers.take() {
            Some(writers) => writers.finish(),
            None => (Vec::new(), None),
        };
        let logged = delivery.log_the_rest(&written);
        let outcome = outcome.and(logged.map_err(E::from));
        JobReport {
            outcome,
            write_failure,
            written: written.iter().map(|w| w.frame).collect(),
            video,
            gpu_ms: delivery.gpu_ms,
            dropped_rays: delivery.dropped_rays,
            frames_in_flight: delivery.frames_in_flight,
            readback_bytes: delivery.readback_bytes,
            wall_s,
        }
    }
}

/// The outputs' side of a job, on the caller's thread.
struct Delivery<'a> {
    naming: Option<OutputNaming>,
    writers: Option<ImageSequence>,
    video: Option<VideoEncoder>,
    /// Frames for the video waiting for those before them.
    video_queue: BTreeMap<u32, Vec<u8>>,
    /// The frames in the video's order.
    video_order: std::iter::Peekable<Box<dyn Iterator<Item = u32> + Send + 'a>>,
    stats: Option<StatsLog>,
    /// Frames handed to the writers whose stats lines wait for their files: each frame's
    /// record and the seconds into the job it was handed over.
    unlogged: BTreeMap<u32, (FrameRecord, f64)>,
    gpu_ms: Vec<f64>,
    dropped_rays: u64,
    frames_in_flight: usize,
    readback_bytes: u64,
}

impl Delivery<'_> {
    /// Hands `finished` to the stats log, the video (in frame order) and the writers, and
    /// tells `on_event`.
    fn deliver<E: From<JobError>>(
        &mut self,
        finished: Finished,
        started: Instant,
        on_event: &mut impl FnMut(JobEvent),
    ) -> Result<(), E> {
        let record = &finished.record;
        let file = self.naming.as_ref().map(|n| n.path(record.frame));
        let wall_s = started.elapsed().as_secs_f64();
        if let (Some(stats), None) = (self.stats.as_mut(), &self.writers) {
            stats.write(record, wall_s, None, None)?;
        }
        if let (Some(video), Some(rgba)) = (self.video.as_mut(), finished.video) {
            self.video_queue.insert(record.frame, rgba);
            while let Some(rgba) =
                (self.video_order.peek()).and_then(|f| self.video_queue.remove(f))
            {
                video.submit(&rgba).map_err(JobError::Video)?;
                self.video_order.next();
            }
        }
        if let (Some(writers), Some(image)) = (self.writers.as_mut(), finished.image) {
            writers.submit_image(record.frame, image);
        }
        self.gpu_ms.push(record.gpu_ms());
        self.dropped_rays += record.dropped_rays();
        self.frames_in_flight = self.frames_in_flight.max(record.in_flight);
        self.readback_bytes = self.readback_bytes.max(record.readback_bytes);
        let (written, backlog) = self.writers.as_mut().map_or((0, 0), |w| w.progress());
        on_event(JobEvent::Frame {
            record,
            file: file.as_deref(),
            done: self.gpu_ms.len() as u64,
            written,
            backlog,
        });
        if let (Some(_), Some(writers)) = (&self.stats, self.writers.as_mut()) {
            self.unlogged
                .insert(record.frame, (finished.record, wall_s));
            let written = writers.take_written();
            self.log_written(&written)?;
        }
        Ok(())
    }

    /// Writes the stats lines of the frames in `written` (those that wait for them).
    fn log_written(&mut self, written: &[WrittenFrame]) -> Result<(), JobError> {
        let (Some(stats), Some(naming)) = (self.stats.as_mut(), &self.naming) else {
            return Ok(());
        };
        for done in written {
            if let Some((record, wall_s)) = self.unlogged.remove(&done.frame) {
                let file = naming.path(done.frame);
                stats.write(&record, wall_s, Some(&file), Some(done))?;
            }
        }
        Ok(())
    }

    /// Writes the stats lines still waiting: of the frames in `written` (all the writers
    /// wrote), then of those never written (no file).
    fn log_the_rest(&mut self, written: &[WrittenFrame]) -> Result<(), JobError> {
        self.log_written(written)?;
        let Some(stats) = self.stats.as_mut() else {
            return Ok(());
        };
        for (record, wall_s) in std::mem::take(&mut self.unlogged).into_values() {
            stats.write(&record, wall_s, None, None)?;
        }
        Ok(())
    }
}
