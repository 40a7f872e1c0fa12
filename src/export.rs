//! Frame sinks: image sequences that a pipeline can trust.
//!
//! [`PngSequence`] encodes frames on worker threads while the GPU renders the next ones. Every
//! frame is written under a temporary name in the output folder and renamed to
//! `frame_NNNN.png` only once complete, so a file with a frame's name is always a whole frame:
//! a full disk, a failed write or an interrupt leaves no partial file (the temporary one is
//! removed). The first failure is reported with the frame, the path and the operating
//! system's error, and the frames finished before it are kept.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};

/// A frame that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("frame {frame}: cannot write {}: {source}", path.display())]
pub struct FrameWriteError {
    /// The frame number.
    pub frame: u32,
    /// The file it was to be written to.
    pub path: PathBuf,
    /// The operating system's error.
    pub source: std::io::Error,
}

/// The file name of frame `frame`: `frame_0042.png`.
pub fn frame_file_name(frame: u32) -> String {
    format!("frame_{frame:04}.png")
}

/// Writes an RGBA8 image as a PNG at `path`, through a temporary file in the same folder that is
/// renamed over `path` once complete (and removed on any failure).
pub fn write_png_atomically(
    path: &Path,
    width: u32,
    height: u32,
    rgba: &[u8],
) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map_or("frame".into(), |n| n.to_string_lossy());
    let temporary = path.with_file_name(format!(".{name}.{}.partial", std::process::id()));
    let written =
        write_png(&temporary, width, height, rgba).and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

fn write_png(path: &Path, width: u32, height: u32, rgba: &[u8]) -> std::io::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut encoder = png::Encoder::new(&mut file, width, height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
    writer
        .write_image_data(rgba)
        .map_err(std::io::Error::other)?;
    writer.finish().map_err(std::io::Error::other)?;
    file.flush()?;
    // On disk before the rename makes it a frame.
    file.get_ref().sync_all()
}

type Job = (u32, Vec<u8>);

/// PNG frames of one size written into one folder by worker threads, fed through a bounded
/// queue.
pub struct PngSequence {
    folder: PathBuf,
    queue: Option<mpsc::SyncSender<Job>>,
    workers: Vec<std::thread::JoinHandle<()>>,
    outcomes: mpsc::Receiver<Result<u32, FrameWriteError>>,
    written: Vec<u32>,
    failure: Option<FrameWriteError>,
}

impl PngSequence {
    /// Writers of `width` x `height` frames into `folder` (which must exist), one thread per
    /// CPU core.
    pub fn new(folder: &Path, width: u32, height: u32) -> Self {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let (queue, jobs) = mpsc::sync_channel::<Job>(threads);
        let (report, outcomes) = mpsc::channel();
        let jobs = Arc::new(Mutex::new(jobs));
        let workers = (0..threads)
            .map(|_| {
                let (jobs, report, folder) = (jobs.clone(), report.clone(), folder.to_path_buf());
                std::thread::spawn(move || {
                    while let Ok((frame, pixels)) = jobs.lock().unwrap().recv() {
                        let path = folder.join(frame_file_name(frame));
                        let outcome = write_png_atomically(&path, width, height, &pixels)
                            .map(|()| frame)
                            .map_err(|source| FrameWriteError {
                                frame,
                                path,
                                source,
                            });
                        if report.send(outcome).is_err() {
                            return;
                        }
                    }
                })
            })
            .collect();
        Self {
            folder: folder.to_path_buf(),
            queue: Some(queue),
            workers,
            outcomes,
            written: Vec::new(),
            failure: None,
        }
    }

    /// The folder written to.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    fn collect(&mut self) {
        while let Ok(outcome) = self.outcomes.try_recv() {
            match outcome {
                Ok(frame) => self.written.push(frame),
                Err(e) => {
                    if self.failure.is_none() {
                        self.failure = Some(e);
                    }
                }
            }
        }
    }

    /// Whether a frame has failed to be written so far (the render should stop).
    pub fn failed(&mut self) -> bool {
        self.collect();
        self.failure.is_some()
    }

    /// Queues frame `frame` (RGBA8 pixels); waits while the queue is full.
    pub fn submit(&mut self, frame: u32, pixels: Vec<u8>) {
        let queue = self.queue.as_ref().expect("open until finish");
        // A send fails only when every worker has stopped, which they do only once the queue
        // is closed.
        let _ = queue.send((frame, pixels));
    }

    /// Waits until every queued frame is written or has failed. Returns the frames written,
    /// in order, and the first failure.
    pub fn finish(mut self) -> (Vec<u32>, Option<FrameWriteError>) {
        drop(self.queue.take());
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
        self.collect();
        self.written.sort_unstable();
        (self.written, self.failure)
    }
}

/// Frame numbers as ranges for a report: `0-3, 7, 9-10`.
pub fn frame_ranges(frames: &[u32]) -> String {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for &f in frames {
        match ranges.last_mut() {
            Some((_, last)) if *last + 1 == f => *last = f,
            _ => ranges.push((f, f)),
        }
    }
    let text: Vec<String> = ranges
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    if text.is_empty() {
        "none".into()
    } else {
        text.join(", ")
    }
}
