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
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender, SyncSender};

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
    /// The numbers must run without gaps; a missing one is an error naming its file.
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
        if let Some(gap) = numbered.windows(2).find(|w| w[1].0 != w[0].0 + 1) {
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

/// The reader thread's side: it reads files from a requested one on, in frame order.
struct Prefetch {
    seek: Sender<usize>,
    read: Receiver<(usize, Read)>,
    /// The file the thread will deliver next, if it is reading.
    next: Option<usize>,
    /// The files delivered last (a frame rendered again, or held, reads no file).
    recent: Vec<(usize, Vec<[f32; 3]>)>,
}

/// Files the reader thread reads ahead of the frame being recorded.
const READ_AHEAD: usize = 1;

/// Streams a sequence's frames to the GPU (see the module docs).
pub struct FileStream {
    files: FrameFiles,
    looping: bool,
    vertex_count: u32,
    prefetch: Mutex<Prefetch>,
    staging: Vec<Mutex<Buffer>>,
}

impl FileStream {
    /// A stream of `files`, every position placed by `root`, with `slots` staging buffers
    /// (one per frame in flight); `first` is frame 0's mesh (its topology is every file's).
    pub fn new(
        ctx: &Context,
        files: FrameFiles,
        first: &Mesh,
        (root, looping): (Mat4, bool),
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
        let (seek, seeks) = std::sync::mpsc::channel();
        let (delivered, read) = std::sync::mpsc::sync_channel(READ_AHEAD);
        let (thread_files, topology) = (files.clone(), first.clone());
        std::thread::Builder::new()
            .name("canopy sequence reader".into())
            .spawn(move || read_files(&thread_files, &topology, (root, looping), seeks, delivered))
            .map_err(|e| Error::InvalidInput(format!("starting the sequence reader: {e}")))?;
        Ok(Self {
            files,
            looping,
            vertex_count,
            prefetch: Mutex::new(Prefetch {
                seek,
                read,
                next: None,
                recent: Vec::new(),
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

    /// Bytes uploaded per frame.
    pub fn uploaded_bytes(&self) -> u64 {
        12 * self.vertex_count as u64
    }

    /// The placed positions of frame `frame`: from the reader thread (waiting for it if it
    /// has not read the file yet), which then reads on.
    pub fn positions(&self, frame: u32) -> Result<Vec<[f32; 3]>> {
        let file = self.files.file_of_frame(frame, self.looping);
        let mut prefetch = self.prefetch.lock().expect("the sequence reader's state");
        if let Some((_, positions)) = prefetch.recent.iter().find(|(f, _)| *f == file) {
            return Ok(positions.clone());
        }
        if prefetch.next != Some(file) {
            prefetch
                .seek
                .send(file)
                .map_err(|_| Error::InvalidInput("the sequence reader stopped".into()))?;
        }
        loop {
            let (delivered, read) = prefetch
                .read
                .recv()
                .map_err(|_| Error::InvalidInput("the sequence reader stopped".into()))?;
            // Files read before the seek are dropped.
            if delivered != file {
                continue;
            }
            let positions = read.map_err(|e| Error::InvalidInput(e.to_string()))?;
            prefetch.next = Some(self.files.file_of_frame(frame + 1, self.looping))
                .filter(|&next| next != file);
            if prefetch.recent.len() == 2 {
                prefetch.recent.remove(0);
            }
            prefetch.recent.push((file, positions.clone()));
            return Ok(positions);
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

/// The reader thread: waits for a file to start from, then reads on from it in frame order
/// (wrapping when `looping`), at most [`READ_AHEAD`] files ahead of the consumer, until the
/// consumer goes away.
fn read_files(
    files: &FrameFiles,
    topology: &Mesh,
    (root, looping): (Mat4, bool),
    seeks: Receiver<usize>,
    delivered: SyncSender<(usize, Read)>,
) {
    let Ok(mut next) = seeks.recv() else {
        return;
    };
    loop {
        if let Ok(file) = seeks.try_recv() {
            next = file;
        }
        let read = files.load(next, Some(topology)).map(|mesh| {
            mesh.positions
                .iter()
                .map(|&p| root.transform_point3(Vec3::from(p)).to_array())
                .collect()
        });
        if delivered.send((next, read)).is_err() {
            return;
        }
        next += 1;
        if next == files.len() {
            if !looping {
                // Past the end there is nothing to read until a seek.
                match seeks.recv() {
                    Ok(file) => next = file,
                    Err(_) => return,
                }
                continue;
            }
            next = 0;
        }
    }
}
