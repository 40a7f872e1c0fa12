//! Vertex-animation sequences: one OBJ or PLY file per frame, all of one topology (a cloth or
//! fluid simulation's output), named by a printf pattern (`cloth/frame_%04d.obj`) or found as
//! the numbered files of a folder.
//!
//! [`FrameFiles`] finds and checks the files; [`FileStream`] feeds them to the GPU: a reader
//! thread parses the next files while the GPU renders the current frame, and each frame's
//! positions go through a ring of host-visible staging buffers (one per frame in flight) and
//! a transfer into the builders' input, so reading files does not stall the GPU.

use crate::scene::{Mesh, SceneError};
use crate::vk::{Buffer, Context, Error, MemoryKind, Recorder, Result};
use glam::{Mat4, Vec3};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};

/// The numbered files of a sequence, frame 0 first.
#[derive(Clone, Debug)]
pub struct FrameFiles {
    paths: Vec<PathBuf>,
    first_number: u64,
}

/// A pattern's fixed text around its number: (prefix, zero-padded width or 0, suffix).
type Pattern = (String, usize, String);

/// The `%d`, `%Nd` or `%0Nd` of a printf pattern, if the file name has one.
fn parse_pattern(name: &str) -> Option<Pattern> {
    let start = name.find('%')?;
    let rest = &name[start + 1..];
    let digits = rest.find('d')?;
    let spec = &rest[..digits];
    if !spec.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let width = spec.trim_start_matches('0').parse::<usize>().unwrap_or(0);
    Some((
        name[..start].to_string(),
        width,
        rest[digits + 1..].to_string(),
    ))
}

/// The number in `name` between `prefix` and `suffix`, if it is one.
fn number_in(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    let middle = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    if middle.is_empty() || !middle.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    middle.parse().ok()
}

impl FrameFiles {
    /// The sequence `spec` names: a printf pattern (`%d`, `%4d`, `%04d` in the file name), or
    /// a folder holding one run of numbered `.obj` or `.ply` files (`frame_0000.obj`, ...).
    /// The numbers must run without gaps; a missing one is an error naming its file, as are
    /// two files of one number (`frame_1.obj` and `frame_01.obj`).
    pub fn open(spec: &Path) -> std::result::Result<Self, SceneError> {
        let sequence_error = |message: String| SceneError::Sequence {
            path: spec.to_path_buf(),
            message,
        };
        let (folder, prefix, suffix) = if spec.is_dir() {
            let (prefix, suffix) = folder_run(spec)?;
            (spec.to_path_buf(), prefix, suffix)
        } else {
            let name = spec
                .file_name()
                .and_then(|n| n.to_str())
                .ok_or_else(|| sequence_error("not a file pattern or folder".into()))?;
            let (prefix, _, suffix) = parse_pattern(name).ok_or_else(|| {
                sequence_error(
                    "neither a folder nor a file pattern with a frame number (%d, %04d)".into(),
                )
            })?;
            let folder = spec.parent().filter(|p| !p.as_os_str().is_empty());
            (
                folder.unwrap_or(Path::new(".")).to_path_buf(),
                prefix,
                suffix,
            )
        };
        let entries = std::fs::read_dir(&folder).map_err(|e| SceneError::io(&folder, e))?;
        let mut numbered: Vec<(u64, PathBuf)> = entries
            .filter_map(|entry| {
                let path = entry.ok()?.path();
                let number = number_in(path.file_name()?.to_str()?, &prefix, &suffix)?;
                Some((number, path))
            })
            .collect();
        numbered.sort();
        let (Some(first), Some(last)) = (numbered.first(), numbered.last()) else {
            return Err(sequence_error(format!(
                "no files {prefix}<number>{suffix} in {}",
                folder.display()
            )));
        };
        let (first, last) = (first.0, last.0);
        if let Some(twice) = numbered.windows(2).find(|w| w[1].0 == w[0].0) {
            return Err(SceneError::Sequence {
                path: twice[1].1.clone(),
                message: format!(
                    "frame {} has two files: this and {}",
                    twice[0].0,
                    twice[0].1.display()
                ),
            });
        }
        if let Some(gap) = numbered
            .windows(2)
            .find(|w| Some(w[1].0) != w[0].0.checked_add(1))
        {
            let number = gap[0].0 + 1;
            // The missing file, named as its neighbour is (same width of digits).
            let neighbour = gap[0].1.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let width = neighbour.len() - prefix.len() - suffix.len();
            let name = format!("{prefix}{number:0width$}{suffix}");
            return Err(SceneError::MissingFrame {
                path: folder.join(name),
                number,
                first,
                last,
            });
        }
        Ok(Self {
            paths: numbered.into_iter().map(|(_, path)| path).collect(),
            first_number: first,
        })
    }

    /// Frames (files) in the sequence.
    pub fn len(&self) -> usize {
        self.paths.len()
    }

    /// Whether the sequence has no files (never, once opened).
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// The number of frame 0's file.
    pub fn first_number(&self) -> u64 {
        self.first_number
    }

    /// The file of frame `n` (0-based, from the lowest number).
    pub fn path(&self, n: usize) -> &Path {
        &self.paths[n]
    }

    /// The file index shown at frame `frame`: the frame's own file, or past the last one the
    /// last (`looping` false) or the sequence from its start again.
    pub fn file_of_frame(&self, frame: u32, looping: bool) -> usize {
        let n = frame as usize;
        if looping {
            n % self.paths.len()
        } else {
            n.min(self.paths.len() - 1)
        }
    }

    /// Reads file `n`, checked to have `topology`'s triangles and vertex count (the first
    /// file's; none to read the first).
    pub fn load(&self, n: usize, topology: Option<&Mesh>) -> std::result::Result<Mesh, SceneError> {
        let path = &self.paths[n];
        let mesh = Mesh::load(path)?;
        if let Some(first) = topology
            && (mesh.positions.len() != first.positions.len() || mesh.triangles != first.triangles)
        {
            let what = if mesh.positions.len() != first.positions.len() {
                format!(
                    "{} vertices, {} in the first frame",
                    mesh.positions.len(),
                    first.positions.len()
                )
            } else if mesh.triangles.len() != first.triangles.len() {
                format!(
                    "{} triangles, {} in the first frame",
                    mesh.triangles.len(),
                    first.triangles.len()
                )
            } else {
                let t = mesh
                    .triangles
                    .iter()
                    .zip(&first.triangles)
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                format!("triangle {t} joins other vertices than in the first frame")
            };
            return Err(SceneError::Sequence {
                path: path.clone(),
                message: format!(
                    "the topology differs from the first frame's ({}): {what}",
                    self.paths[0].display()
                ),
            });
        }
        Ok(mesh)
    }
}

/// The prefix and suffix of the one run of numbered `.obj`/`.ply` files in `folder`.
fn folder_run(folder: &Path) -> std::result::Result<(String, String), SceneError> {
    let entries = std::fs::read_dir(folder).map_err(|e| SceneError::io(folder, e))?;
    let mut runs: Vec<(String, String)> = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| SceneError::io(folder, e))?.path();
        let (Some(stem), Some(extension)) = (
            path.file_stem().and_then(|s| s.to_str()),
            path.extension().and_then(|e| e.to_str()),
        ) else {
            continue;
        };
        if !["obj", "ply"].contains(&extension.to_ascii_lowercase().as_str()) {
            continue;
        }
        let prefix = stem.trim_end_matches(|c: char| c.is_ascii_digit());
        if prefix.len() == stem.len() {
            continue;
        }
        let run = (prefix.to_string(), format!(".{extension}"));
        if !runs.contains(&run) {
            runs.push(run);
        }
    }
    match runs.len() {
        1 => Ok(runs.remove(0)),
        0 => Err(SceneError::Sequence {
            path: folder.to_path_buf(),
            message: "the folder holds no numbered .obj or .ply files".into(),
        }),
        _ => Err(SceneError::Sequence {
            path: folder.to_path_buf(),
            message: format!(
                "the folder holds more than one sequence ({}); name one with a pattern such as {}%04d{}",
                runs.iter()
                    .map(|(p, s)| format!("{p}<n>{s}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                runs[0].0,
                runs[0].1
            ),
        }),
    }
}

/// A file's positions, placed, or why it could not be read.
type Read = std::result::Result<Vec<[f32; 3]>, SceneError>;

/// A file read by a reader thread: the reading's generation (see [`Claims`]), the file and
/// what was read.
type Delivery = (u64, usize, Read);

/// Which file the reader threads read next. A seek starts a new generation: files read for
/// an older one are dropped by the consumer.
struct Claims {
    generation: u64,
    next: Option<usize>,
    /// Files claimed since the last seek, and how many may be: the consumer allows one more
    /// for each it takes, so the readers keep a fixed number of files ahead of it.
    claimed: u64,
    allowed: u64,
    /// Set when the stream is dropped: the threads end.
    closed: bool,
}

/// The reader threads' shared state.
struct Readers {
    claims: Mutex<Claims>,
    wake: Condvar,
    /// Files read, and the nanoseconds spent reading them, by all threads.
    files_read: AtomicU64,
    reading_ns: AtomicU64,
}

/// The consumer's side of the reader threads.
struct Prefetch {
    readers: Arc<Readers>,
    delivered: Receiver<Delivery>,
    /// Files read ahead of the one being asked for, and the last ones handed out (a frame
    /// rendered again, or held, reads no file), by file; or why they could not be read.
    read: HashMap<usize, std::result::Result<Vec<[f32; 3]>, String>>,
    /// The file the readers go on with after the last one handed out, if they are reading.
    expected: Option<usize>,
    /// Time spent waiting for the readers.
    waited: std::time::Duration,
}

/// Most reader threads: parsing a file is the slow part, and a few of them keep up with a GPU
/// that renders a small mesh in a millisecond.
const MAX_READERS: usize = 4;

/// Streams a sequence's frames to the GPU (see the module docs).
pub struct FileStream {
    files: FrameFiles,
    threads: usize,
    looping: bool,
    vertex_count: u32,
    prefetch: Mutex<Prefetch>,
    staging: Vec<Mutex<Buffer>>,
}

impl FileStream {
    /// A stream of `files`, every position placed by `root`, from the first again after the
    /// last when `looping`, with `slots` staging buffers (one per frame in flight); `first` is
    /// frame 0's mesh (its topology is every file's).
    pub fn new(
        ctx: &Context,
        files: FrameFiles,
        first: &Mesh,
        root: Mat4,
        looping: bool,
        slots: usize,
    ) -> Result<Self> {
        let vertex_count = first.positions.len() as u32;
        let bytes = 12 * vertex_count.max(1) as u64;
        let staging = (0..slots.max(1))
            .map(|k| {
                ctx.create_buffer(&format!("sequence staging {k}"), bytes, MemoryKind::Upload)
                    .map(Mutex::new)
            })
            .collect::<Result<_>>()?;
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get() / 2)
            .clamp(1, MAX_READERS);
        let readers = Arc::new(Readers {
            claims: Mutex::new(Claims {
                generation: 0,
                next: None,
                claimed: 0,
                allowed: 0,
                closed: false,
            }),
            wake: Condvar::new(),
            files_read: AtomicU64::new(0),
            reading_ns: AtomicU64::new(0),
        });
        // The readers run at most twice their number of files ahead (see `Claims`).
        let (deliver, delivered) = std::sync::mpsc::channel();
        for k in 0..threads {
            let (files, topology) = (files.clone(), first.clone());
            let (readers, deliver) = (readers.clone(), deliver.clone());
            std::thread::Builder::new()
                .name(format!("canopy sequence reader {k}"))
                .spawn(move || read_files(&files, &topology, (root, looping), &readers, &deliver))
                .map_err(|e| Error::InvalidInput(format!("starting a sequence reader: {e}")))?;
        }
        Ok(Self {
            files,
            threads,
            looping,
            vertex_count,
            prefetch: Mutex::new(Prefetch {
                readers,
                delivered,
                read: HashMap::new(),
                expected: None,
                waited: std::time::Duration::ZERO,
            }),
            staging,
        })
    }

    /// The files.
    pub fn files(&self) -> &FrameFiles {
        &self.files
    }

    /// Vertices per frame.
    pub fn vertex_count(&self) -> u32 {
        self.vertex_count
    }

    /// Its staging buffers: the most frames in flight it can be recorded for.
    pub fn slots(&self) -> usize {
        self.staging.len()
    }

    /// Bytes uploaded per frame.
    pub fn uploaded_bytes(&self) -> u64 {
        12 * self.vertex_count as u64
    }

    /// The time recordings have waited for files not yet read, in all: near zero when reading
    /// keeps ahead of the GPU.
    pub fn waited(&self) -> std::time::Duration {
        self.prefetch
            .lock()
            .map_or(std::time::Duration::ZERO, |p| p.waited)
    }

    /// The reader threads, and the mean time one takes to read a file so far.
    pub fn readers(&self) -> (usize, std::time::Duration) {
        let Ok(prefetch) = self.prefetch.lock() else {
            return (0, std::time::Duration::ZERO);
        };
        let readers = &prefetch.readers;
        let files = readers.files_read.load(Ordering::Relaxed).max(1);
        let mean = readers.reading_ns.load(Ordering::Relaxed) / files;
        (self.threads, std::time::Duration::from_nanos(mean))
    }

    /// The placed positions of frame `frame`: read ahead by the reader threads (waiting for
    /// them if they have not read the file yet), which then read on.
    pub fn positions(&self, frame: u32) -> Result<Vec<[f32; 3]>> {
        let file = self.files.file_of_frame(frame, self.looping);
        let next = self.files.file_of_frame(frame + 1, self.looping);
        let mut prefetch = self.prefetch.lock().expect("the sequence readers' state");
        let mut generation = prefetch.readers.claims.lock().expect("claims").generation;
        // Take in what the readers delivered meanwhile, so that none waits on the consumer.
        while let Ok(delivery) = prefetch.delivered.try_recv() {
            prefetch.take(generation, delivery);
        }
        if prefetch.expected != Some(file) && !prefetch.read.contains_key(&file) {
            // Not where the readers are: start them from this file.
            prefetch.read.clear();
            let mut claims = prefetch.readers.claims.lock().expect("claims");
            claims.generation += 1;
            claims.next = Some(file);
            claims.claimed = 0;
            claims.allowed = 2 * self.threads as u64;
            generation = claims.generation;
            prefetch.readers.wake.notify_all();
            drop(claims);
            prefetch.expected = Some(file);
        }
        loop {
            if let Some(read) = prefetch.read.get(&file) {
                let read = read.clone();
                if prefetch.expected == Some(file) {
                    // One file consumed in order: the readers may claim one more.
                    prefetch.readers.claims.lock().expect("claims").allowed += 1;
                    prefetch.readers.wake.notify_one();
                    prefetch.expected = (next != file).then_some(next);
                }
                prefetch.keep_around(file, next, self.files.len());
                return read.map_err(Error::InvalidInput);
            }
            let started = std::time::Instant::now();
            let received = prefetch.delivered.recv();
            prefetch.waited += started.elapsed();
            let delivery =
                received.map_err(|_| Error::InvalidInput("the sequence readers stopped".into()))?;
            prefetch.take(generation, delivery);
        }
    }

    /// Records frame `frame`'s positions into `out` (12 bytes per vertex, from its start)
    /// through staging buffer `slot`, which no frame still in flight may be using.
    pub fn record(&self, rec: &mut Recorder, frame: u32, slot: usize, out: &Buffer) -> Result<()> {
        let positions = self.positions(frame)?;
        let mut staging = self.staging[slot % self.staging.len()]
            .lock()
            .expect("a staging buffer");
        let bytes: &[u8] = bytemuck::cast_slice(&positions);
        staging.mapped_mut().expect("staging buffers are mapped")[..bytes.len()]
            .copy_from_slice(bytes);
        rec.begin_stage("scene: sequence upload");
        rec.barrier_compute_to_transfer();
        rec.copy_buffer(&staging, 0, out, 0, bytes.len() as u64);
        rec.barrier_transfer_to_compute();
        rec.end_stage();
        Ok(())
    }
}

impl Prefetch {
    /// Keeps a delivered file if it was read for the readers' current `generation`.
    fn take(&mut self, generation: u64, (read_for, file, read): Delivery) {
        if read_for == generation {
            self.read.insert(file, read.map_err(|e| e.to_string()));
        }
    }

    /// Drops the files read other than `file` (just handed out) and those the readers may
    /// have read ahead from `next` on (in a sequence of `len` files, wrapping).
    fn keep_around(&mut self, file: usize, next: usize, len: usize) {
        let ahead = |f: usize| (f + len - next) % len < 2 * MAX_READERS;
        self.read.retain(|&f, _| f == file || ahead(f));
    }
}

impl Drop for FileStream {
    /// Ends the reader threads (each once its file in hand is dropped).
    fn drop(&mut self) {
        if let Ok(prefetch) = self.prefetch.lock() {
            if let Ok(mut claims) = prefetch.readers.claims.lock() {
                claims.closed = true;
            }
            prefetch.readers.wake.notify_all();
        }
    }
}

/// A reader thread: claims the next file to read (waiting while there is none), reads it and
/// delivers it, until the stream is dropped. Files are claimed in frame order from the last
/// seek, wrapping when `looping`.
fn read_files(
    files: &FrameFiles,
    topology: &Mesh,
    (root, looping): (Mat4, bool),
    readers: &Readers,
    deliver: &Sender<Delivery>,
) {
    loop {
        let (generation, file) = {
            let mut claims = readers.claims.lock().expect("claims");
            loop {
                if claims.closed {
                    return;
                }
                if let Some(file) = claims.next.filter(|_| claims.claimed < claims.allowed) {
                    claims.claimed += 1;
                    let following = file + 1;
                    claims.next = if following < files.len() {
                        Some(following)
                    } else if looping {
                        Some(0)
                    } else {
                        None
                    };
                    break (claims.generation, file);
                }
                claims = readers.wake.wait(claims).expect("claims");
            }
        };
        let started = std::time::Instant::now();
        let read = files.load(file, Some(topology)).map(|mesh| {
            mesh.positions
                .iter()
                .map(|&p| root.transform_point3(Vec3::from(p)).to_array())
                .collect()
        });
        readers.files_read.fetch_add(1, Ordering::Relaxed);
        readers
            .reading_ns
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if deliver.send((generation, file, read)).is_err() {
            return;
        }
    }
}
