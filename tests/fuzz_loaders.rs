//! A fuzzing harness for the loaders of untrusted model files: OBJ, PLY (ASCII and binary), PCD,
//! glTF/GLB (meshes and rigs), vertex-animation sequences and `.conf` scan alignments.
//!
//! Each case takes a seed (a small model of `tests/data/`, an excerpt of one, or a tiny
//! hand-written file), applies a few mutations (bit flips, byte insertions and deletions,
//! truncation, splicing from another seed, a number replaced by a huge, negative, zero or
//! non-finite one, a header count or length inflated, a binary word overwritten), writes the
//! files into a temporary folder and loads them through the public loaders. The property:
//!
//! - every input loads or returns an error: a panic fails the test (each load runs under
//!   `catch_unwind`, on its own thread), as does a load still running after
//!   [`CASE_SECONDS`] seconds (a hang);
//! - one load's peak allocation stays within **64 bytes per byte of input plus 1 MiB**
//!   ([`allowed_bytes`]; the input is every file of the case), measured by the counting
//!   global allocator of this test binary. (A glTF texture image may decode to more than that:
//!   canopy allows up to `canopy::scene::texture::DECODED_BYTES_PER_ENCODED_BYTE` bytes per
//!   byte of the image, which real images need; the textured seeds' images, Fox's and
//!   CesiumMan's, stay within the harness's bound.)
//!
//! A failing case is shrunk (proptest) to its fewest, smallest mutations and printed: the
//! format, the seed, the mutations and the input bytes, which are also kept in the temporary
//! folder. By default each format runs [`DEFAULT_CASES`] cases from a fixed seed (a few
//! seconds in all); for a longer run, or to reproduce another seed's failure:
//!
//! ```text
//! CANOPY_FUZZ_CASES=100000 CANOPY_FUZZ_SEED=12345 cargo test --release --test fuzz_loaders
//! ```

use canopy::scene::animated::files::FrameFiles;
use canopy::scene::rig::{ClipTime, Rig};
use canopy::scene::scans::load_aligned_scans;
use canopy::scene::{MaterialMesh, Mesh, SceneError};
use glam::Mat4;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

// ---------------------------------------------------------------------------------------
// The counting allocator.

/// The system allocator, counting the bytes live on threads that are measuring a load.
struct Counting;

thread_local! {
    /// Whether this thread is measuring.
    static MEASURING: Cell<bool> = const { Cell::new(false) };
    /// Bytes allocated minus bytes freed on this thread since it started measuring.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The most `LIVE` has been.
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// Adds `bytes` (negative: freed) to the measuring thread's count.
fn count(bytes: isize) {
    let _ = MEASURING.try_with(|measuring| {
        if measuring.get() {
            let live = LIVE.get() + bytes;
            LIVE.set(live);
            PEAK.set(PEAK.get().max(live));
        }
    });
}

// SAFETY: every call is forwarded to `System` unchanged; the counting touches only
// thread-local cells that need no allocation.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most one load may allocate at its peak for `input` bytes of files.
/// The bytes a load of `files` reads: each file once, but a `.conf` (the first file) reads
/// each scan it lists once per listing (a scan listed twice is placed, and read, twice).
fn bytes_read(format: Format, files: &[(String, Vec<u8>)]) -> usize {
    let once: usize = files.iter().map(|(_, bytes)| bytes.len()).sum();
    if format != Format::Conf {
        return once;
    }
    let size = |name: &str| {
        files
            .iter()
            .find(|(file, _)| file == name)
            .map_or(0, |(_, bytes)| bytes.len())
    };
    let text = String::from_utf8_lossy(&files[0].1);
    let listed: usize = text
        .lines()
        .map(|line| line.trim_start_matches('\u{feff}').split_whitespace())
        .filter_map(|mut words| {
            (words.next() == Some("bmesh"))
                .then(|| words.next())
                .flatten()
        })
        .map(size)
        .sum();
    once.max(files[0].1.len() + listed)
}

fn allowed_bytes(format: Format, input: usize) -> usize {
    64 * input + fixed_bytes(format)
}

/// What a load of `format` may allocate whatever its input: 1 MiB, and 8 MiB for LAS/LAZ,
/// whose LAZ decoder and encoder hold about 4.5 MB of arithmetic-coder models for any file.
fn fixed_bytes(format: Format) -> usize {
    match format {
        Format::Las => 8 << 20,
        _ => 1 << 20,
    }
}

/// Seconds after which a load is taken for a hang.
const CASE_SECONDS: u64 = 20;

/// Cases per format unless `CANOPY_FUZZ_CASES` says otherwise.
const DEFAULT_CASES: u32 = 500;

/// The seed of the case generator unless `CANOPY_FUZZ_SEED` says otherwise.
const DEFAULT_SEED: u64 = 36;

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
    )
}

// ---------------------------------------------------------------------------------------
// Formats, their seeds and how a case is loaded.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Format {
    E57,
    Las,
    Obj,
    PlyAscii,
    PlyBinary,
    Pcd,
    Gltf,
    Sequence,
    Conf,
}

/// A case's files before mutation: names and contents. Mutations apply to file `target`.
#[derive(Clone, Debug)]
struct Seed {
    name: String,
    files: Vec<(String, Vec<u8>)>,
}

impl Seed {
    fn one(name: &str, file: &str, bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            name: name.into(),
            files: vec![(file.into(), bytes.into())],
        }
    }
}

fn data(relative: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The first `faces` faces of an OBJ file (and the obsolete `fo` faces among them) with the
/// vertices, normals and texture coordinates they use, renumbered, and the file's first
/// comment and grouping lines: a small file that keeps the original's forms of statements
/// and line breaks.
fn obj_excerpt(text: &[u8], faces: usize) -> Vec<u8> {
    let text = String::from_utf8_lossy(text);
    let mut lists: [Vec<&str>; 3] = Default::default();
    let mut header = Vec::new();
    let mut chosen = Vec::new();
    let mut taken = 0;
    for (number, line) in text.lines().enumerate() {
        let (keyword, rest) = line.split_once(' ').unwrap_or((line, ""));
        match keyword {
            "v" => lists[0].push(rest),
            "vt" => lists[1].push(rest),
            "vn" => lists[2].push(rest),
            "f" | "fo" if taken < faces => {
                taken += (keyword == "f") as usize;
                chosen.push((keyword, rest));
            }
            "f" | "fo" => {}
            _ if number < 20 => header.push(line),
            _ => {}
        }
    }
    // Old 1-based index -> new one, per list, in order of first use.
    let mut used: [Vec<usize>; 3] = Default::default();
    let mut new_index = |list: usize, old: usize| -> usize {
        match used[list].iter().position(|&o| o == old) {
            Some(k) => k + 1,
            None => {
                used[list].push(old);
                used[list].len()
            }
        }
    };
    let mut face_lines = Vec::new();
    for (keyword, rest) in chosen {
        let corners: Vec<String> = rest
            .split_ascii_whitespace()
            .map(|corner| {
                let parts: Vec<String> = corner
                    .split('/')
                    .enumerate()
                    .map(|(list, p)| match p.parse::<usize>() {
                        Ok(old) if list < 3 => new_index(list, old).to_string(),
                        _ => p.to_string(),
                    })
                    .collect();
                parts.join("/")
            })
            .collect();
        face_lines.push(format!("{keyword} {}", corners.join(" ")));
    }
    let mut out: Vec<String> = header.iter().map(|l| l.to_string()).collect();
    for (list, keyword) in ["v", "vt", "vn"].iter().enumerate() {
        for &old in &used[list] {
            out.push(format!("{keyword} {}", lists[list][old - 1]));
        }
    }
    out.extend(face_lines);
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut out = out.join(newline);
    out += newline;
    out.into_bytes()
}

/// Positions and polygons of a simple OBJ (as the excerpts are).
fn obj_geometry(text: &[u8]) -> (Vec<[f32; 3]>, Vec<Vec<u32>>) {
    let mesh = canopy::scene::obj::read(text, Path::new("seed.obj")).expect("a seed OBJ");
    let faces = mesh.triangles.iter().map(|t| t.to_vec()).collect();
    (mesh.positions, faces)
}

/// A binary PLY of `positions` and `faces` with an extra scalar and list per vertex, a
/// triangle strip and an element read past.
fn binary_ply(positions: &[[f32; 3]], faces: &[Vec<u32>], big_endian: bool) -> Vec<u8> {
    let order = if big_endian { "big" } else { "little" };
    let mut out = format!(
        "ply\nformat binary_{order}_endian 1.0\ncomment canopy fuzz seed\n\
         element vertex {}\nproperty float x\nproperty double y\nproperty float z\n\
         property uchar quality\nproperty list uchar short extra\n\
         element face {}\nproperty list uchar int vertex_indices\n\
         element tristrips 1\nproperty list int int vertex_indices\n\
         element material 2\nproperty ushort id\nproperty list ushort float values\n\
         end_header\n",
        positions.len(),
        faces.len()
    )
    .into_bytes();
    let put = |out: &mut Vec<u8>, bytes: &[u8]| {
        if big_endian {
            out.extend(bytes.iter().rev());
        } else {
            out.extend(bytes);
        }
    };
    for (i, p) in positions.iter().enumerate() {
        put(&mut out, &p[0].to_le_bytes());
        put(&mut out, &(p[1] as f64).to_le_bytes());
        put(&mut out, &p[2].to_le_bytes());
        out.push(i as u8);
        let extra = (i % 3) as u8;
        out.push(extra);
        for k in 0..extra {
            put(&mut out, &(k as i16 - 1).to_le_bytes());
        }
    }
    for face in faces {
        out.push(face.len() as u8);
        for &v in face {
            put(&mut out, &(v as i32).to_le_bytes());
        }
    }
    let strip: [i32; 7] = [0, 1, 2, 3, -1, 2, 1];
    let strip = strip.map(|v| v.min(positions.len() as i32 - 1).max(-1));
    put(&mut out, &(strip.len() as i32).to_le_bytes());
    for v in strip {
        put(&mut out, &v.to_le_bytes());
    }
    for id in 0..2u16 {
        put(&mut out, &id.to_le_bytes());
        put(&mut out, &id.to_le_bytes());
        for k in 0..id {
            put(&mut out, &(k as f32).to_le_bytes());
        }
    }
    out
}

/// An ASCII PLY of `positions` and `faces`, with normals when `normals`.
fn ascii_ply(positions: &[[f32; 3]], faces: &[Vec<u32>], normals: bool) -> Vec<u8> {
    let mut out = format!(
        "ply\nformat ascii 1.0\ncomment canopy fuzz seed\nobj_info fuzz 1\n\
         element vertex {}\nproperty float x\nproperty float y\nproperty float z\n",
        positions.len()
    );
    if normals {
        out += "property float nx\nproperty float ny\nproperty float nz\n";
    }
    out += &format!(
        "element face {}\nproperty list uchar int vertex_indices\n\
         element edge 1\nproperty int vertex1\nproperty int vertex2\nend_header\n",
        faces.len()
    );
    for p in positions {
        out += &format!("{} {} {}", p[0], p[1], p[2]);
        out += if normals { " 0 0 1\n" } else { "\n" };
    }
    for face in faces {
        out += &face.len().to_string();
        for v in face {
            out += &format!(" {v}");
        }
        out += "\n";
    }
    out += "0 1\n";
    out.into_bytes()
}

/// The first `n` points and `rows` range-grid rows of the bunny scan, with its header (CRLF
/// lines, as the original).
fn scan_excerpt(n: usize, rows: usize) -> Vec<u8> {
    let bytes = data("points/bun090.ply");
    let text = String::from_utf8_lossy(&bytes);
    let (header, body) = text.split_once("end_header\r\n").expect("a PLY header");
    let mut out = String::new();
    let mut vertices = 0;
    for line in header.lines() {
        match line.split_ascii_whitespace().collect::<Vec<_>>()[..] {
            ["element", "vertex", count] => {
                vertices = count.parse().expect("a vertex count");
                out += &format!("element vertex {n}\r\n");
            }
            ["element", "range_grid", _] => out += &format!("element range_grid {rows}\r\n"),
            _ => out += &format!("{line}\r\n"),
        }
    }
    out += "end_header\r\n";
    let lines: Vec<&str> = body.lines().collect();
    for line in lines[..n].iter().chain(&lines[vertices..vertices + rows]) {
        out += line;
        out += "\r\n";
    }
    out.into_bytes()
}

const TINY_OBJ: &str = "v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\nf 1//1 2//1 3//1\n";

const FORMS_OBJ: &str = "# every form\nmtllib x.mtl\no thing\ng part\ns 1\nusemtl m\n\
    v 0 0 0\nv 1 0 0 1\nv 1 1 0 0.5 0.5 0.5\nv 0 1 \\\n 0\nvt 0 0\nvt 1 0\n\
    vn 0 0 1\nvn 0 0 -1\nf 1/1/1 2/2/1 3/1/1 4/2/1\nf -4//2 -3//2 -2//2\nf 1/1 3/2 4/1\n\
    fo 1 2 3\nl 1 2\np 1\n";

const TINY_GLTF: &str = r#"{
  "asset": {"version": "2.0"},
  "scene": 0,
  "scenes": [{"nodes": [0]}],
  "nodes": [{"mesh": 0, "translation": [1, 0, 0], "children": [1]}, {"mesh": 0, "scale": [2, 2, 2]}],
  "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1, "material": 0}]}],
  "materials": [{"pbrMetallicRoughness": {"baseColorFactor": [1, 0.5, 0.5, 1], "metallicFactor": 1, "roughnessFactor": 0}}],
  "buffers": [{"byteLength": 42, "uri": "data:application/octet-stream;base64,AAAAAAAAAAAAAAAAAACAPwAAAAAAAAAAAAAAAAAAgD8AAAAAAAABAAIA"}],
  "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 36}, {"buffer": 0, "byteOffset": 36, "byteLength": 6}],
  "accessors": [
    {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3", "min": [0, 0, 0], "max": [1, 1, 0]},
    {"bufferView": 1, "componentType": 5123, "count": 3, "type": "SCALAR"}
  ]
}"#;

/// A GLB of `json` and `bin` chunks.
fn glb(json: &str, bin: &[u8]) -> Vec<u8> {
    let mut json = json.as_bytes().to_vec();
    while !json.len().is_multiple_of(4) {
        json.push(b' ');
    }
    let mut bin = bin.to_vec();
    while !bin.len().is_multiple_of(4) {
        bin.push(0);
    }
    let total = 12 + 8 + json.len() + 8 + bin.len();
    let mut out = b"glTF".to_vec();
    out.extend(2u32.to_le_bytes());
    out.extend((total as u32).to_le_bytes());
    out.extend((json.len() as u32).to_le_bytes());
    out.extend(b"JSON");
    out.extend(&json);
    out.extend((bin.len() as u32).to_le_bytes());
    out.extend(b"BIN\0");
    out.extend(&bin);
    out
}

/// A GLB of a triangle with an animation of its node's translation (two keys).
fn tiny_glb() -> Vec<u8> {
    let mut bin: Vec<u8> = bytemuck::cast_slice(&[0.0f32, 0., 0., 1., 0., 0., 0., 1., 0.]).to_vec();
    bin.extend(bytemuck::cast_slice(&[0u16, 1, 2, 0]));
    bin.extend(bytemuck::cast_slice(&[0.0f32, 1.0]));
    bin.extend(bytemuck::cast_slice(&[0.0f32, 0., 0., 0., 1., 0.]));
    let json = TINY_GLTF
        .replace(
            r#""buffers": [{"byteLength": 42, "uri": "data:application/octet-stream;base64,AAAAAAAAAAAAAAAAAACAPwAAAAAAAAAAAAAAAAAAgD8AAAAAAAABAAIA"}]"#,
            r#""buffers": [{"byteLength": 76}]"#,
        )
        .replace(
            r#"{"buffer": 0, "byteOffset": 36, "byteLength": 6}"#,
            r#"{"buffer": 0, "byteOffset": 36, "byteLength": 6}, {"buffer": 0, "byteOffset": 44, "byteLength": 8}, {"buffer": 0, "byteOffset": 52, "byteLength": 24}"#,
        )
        .replace(
            "{\"bufferView\": 1, \"componentType\": 5123, \"count\": 3, \"type\": \"SCALAR\"}\n  ]\n}",
            r#"{"bufferView": 1, "componentType": 5123, "count": 3, "type": "SCALAR"},
    {"bufferView": 2, "componentType": 5126, "count": 2, "type": "SCALAR", "min": [0], "max": [1]},
    {"bufferView": 3, "componentType": 5126, "count": 2, "type": "VEC3"}
  ],
  "animations": [{"channels": [{"sampler": 0, "target": {"node": 1, "path": "translation"}}],
    "samplers": [{"input": 2, "output": 3, "interpolation": "LINEAR"}]}]
}"#,
        );
    glb(&json, &bin)
}

/// A GLB of a triangle placed three times by `EXT_mesh_gpu_instancing` (translations, 16-bit
/// normalized rotations and scales), the extension required.
fn instanced_glb() -> Vec<u8> {
    let mut bin: Vec<u8> = bytemuck::cast_slice(&[0.0f32, 0., 0., 1., 0., 0., 0., 1., 0.]).to_vec();
    bin.extend(bytemuck::cast_slice(&[
        0.0f32, 0., 0., 2., 0., 0., 0., 3., 0.,
    ]));
    bin.extend(bytemuck::cast_slice(&[
        0i16, 0, 0, 32767, 0, 23170, 0, 23170, 32767, 0, 0, 0,
    ]));
    bin.extend(bytemuck::cast_slice(&[
        1.0f32, 1., 1., 0.5, 0.5, 0.5, 2., 1., -1.,
    ]));
    let json = r#"{
  "asset": {"version": "2.0"},
  "extensionsUsed": ["EXT_mesh_gpu_instancing"],
  "extensionsRequired": ["EXT_mesh_gpu_instancing"],
  "scene": 0,
  "scenes": [{"nodes": [0]}],
  "nodes": [{"mesh": 0, "extensions": {"EXT_mesh_gpu_instancing":
    {"attributes": {"TRANSLATION": 1, "ROTATION": 2, "SCALE": 3}}}}],
  "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
  "buffers": [{"byteLength": 132}],
  "bufferViews": [
    {"buffer": 0, "byteOffset": 0, "byteLength": 36},
    {"buffer": 0, "byteOffset": 36, "byteLength": 36},
    {"buffer": 0, "byteOffset": 72, "byteLength": 24},
    {"buffer": 0, "byteOffset": 96, "byteLength": 36}
  ],
  "accessors": [
    {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3", "min": [0, 0, 0], "max": [1, 1, 0]},
    {"bufferView": 1, "componentType": 5126, "count": 3, "type": "VEC3"},
    {"bufferView": 2, "componentType": 5122, "normalized": true, "count": 3, "type": "VEC4"},
    {"bufferView": 3, "componentType": 5126, "count": 3, "type": "VEC3"}
  ]
}"#;
    glb(json, &bin)
}

fn obj_seeds() -> Vec<Seed> {
    let mut seeds = vec![
        Seed::one("tiny", "case.obj", TINY_OBJ),
        Seed::one("forms", "case.obj", FORMS_OBJ),
    ];
    for (name, n) in [
        ("bunny_small", 40),
        ("capsule", 30),
        ("spot", 30),
        ("gear", 30),
    ] {
        let file = data(&format!("meshes/{name}.obj"));
        seeds.push(Seed::one(name, "case.obj", obj_excerpt(&file, n)));
    }
    seeds.push(Seed::one("torus", "case.obj", data("meshes/torus.obj")));
    seeds
}

/// A named mesh as positions and polygons.
type Geometry = (&'static str, Vec<[f32; 3]>, Vec<Vec<u32>>);

/// Small meshes of the test data as positions and polygons.
fn small_geometries() -> Vec<Geometry> {
    let cube: Vec<[f32; 3]> = (0..8)
        .map(|i| [(i & 1) as f32, (i >> 1 & 1) as f32, (i >> 2) as f32])
        .collect();
    let cube_faces = vec![
        vec![0, 2, 3, 1],
        vec![4, 5, 7, 6],
        vec![0, 1, 5, 4],
        vec![2, 6, 7, 3],
        vec![0, 4, 6, 2],
        vec![1, 3, 7, 5],
    ];
    let (bunny, bunny_faces) = obj_geometry(&obj_excerpt(&data("meshes/bunny_small.obj"), 24));
    vec![
        ("cube", cube, cube_faces),
        ("bunny_small", bunny, bunny_faces),
    ]
}

fn ply_ascii_seeds() -> Vec<Seed> {
    let mut seeds = Vec::new();
    for (name, positions, faces) in small_geometries() {
        seeds.push(Seed::one(
            name,
            "case.ply",
            ascii_ply(&positions, &faces, false),
        ));
        seeds.push(Seed::one(
            &format!("{name} with normals"),
            "case.ply",
            ascii_ply(&positions, &faces, true),
        ));
    }
    seeds.push(Seed::one("bun090", "case.ply", scan_excerpt(40, 30)));
    seeds
}

fn ply_binary_seeds() -> Vec<Seed> {
    let mut seeds = Vec::new();
    for (name, positions, faces) in small_geometries() {
        for big_endian in [false, true] {
            seeds.push(Seed::one(
                &format!("{name} big endian {big_endian}"),
                "case.ply",
                binary_ply(&positions, &faces, big_endian),
            ));
        }
    }
    seeds
}

fn gltf_seeds() -> Vec<Seed> {
    vec![
        Seed::one("tiny gltf", "case.gltf", TINY_GLTF),
        Seed::one("tiny glb", "case.glb", tiny_glb()),
        Seed::one("instanced glb", "case.glb", instanced_glb()),
        Seed::one("RiggedSimple", "case.glb", data("gltf/RiggedSimple.glb")),
        Seed::one("Fox", "case.glb", data("gltf/Fox.glb")),
        Seed::one("CesiumMan", "case.glb", data("gltf/CesiumMan.glb")),
    ]
}

fn sequence_seeds() -> Vec<Seed> {
    let frames = |n: usize| -> Vec<(String, Vec<u8>)> {
        (0..3)
            .map(|k| {
                let file = data(&format!("sequences/vellum-cloth/frame_000{k}.obj"));
                (format!("frame_000{k}.obj"), obj_excerpt(&file, n))
            })
            .collect()
    };
    let (positions, faces) = obj_geometry(&obj_excerpt(
        &data("sequences/vellum-cloth/frame_0000.obj"),
        16,
    ));
    let plys = (0..2)
        .map(|k| {
            let moved: Vec<[f32; 3]> = positions
                .iter()
                .map(|p| [p[0], p[1] + k as f32, p[2]])
                .collect();
            (
                format!("f{}.ply", 7 + k),
                binary_ply(&moved, &faces, k == 1),
            )
        })
        .collect();
    vec![
        Seed {
            name: "vellum-cloth".into(),
            files: frames(30),
        },
        Seed {
            name: "binary ply frames".into(),
            files: plys,
        },
    ]
}

fn conf_seeds() -> Vec<Seed> {
    let (positions, _) = obj_geometry(&obj_excerpt(&data("meshes/bunny_small.obj"), 6));
    let conf = "camera 0.0 0.0 0.0 0.0 0.0 0.0 1.0\n\
                bmesh s0.ply 0 0 0 0 0 0 1\n\
                bmesh s1.ply -0.0046 0.0012 0.0029 0 0.7071068 0 0.7071068\n\
                bmesh gone.ply 1 2 3 0 0 0 1\n\
                bmesh s2.obj 1e-3 -2.5 0 0.5 0.5 0.5 0.5\n";
    vec![Seed {
        name: "three scans".into(),
        files: vec![
            ("scans.conf".into(), conf.into()),
            ("s0.ply".into(), scan_excerpt(12, 4)),
            ("s1.ply".into(), binary_ply(&positions, &[], false)),
            ("s2.obj".into(), obj_excerpt(&data("meshes/spot.obj"), 4)),
        ],
    }]
}

/// PCD clouds in the three encodings, with fields around the coordinates and a missing
/// return (NaN).
fn pcd_seeds() -> Vec<Seed> {
    let points: Vec<[f32; 3]> = (0..24)
        .map(|i| match i {
            5 => [f32::NAN; 3],
            _ => [i as f32 * 0.25, (i * i) as f32 * -0.5, 3.0 - i as f32],
        })
        .collect();
    let header = |data: &str| {
        format!(
            "# .PCD v0.7\nVERSION 0.7\nFIELDS x y z rgb\nSIZE 4 4 4 4\nTYPE F F F U\n\
             COUNT 1 1 1 1\nWIDTH {n}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {n}\n\
             DATA {data}\n",
            n = points.len()
        )
    };
    let mut ascii = header("ascii");
    for p in &points {
        ascii += &format!("{} {} {} 4278190335\n", p[0], p[1], p[2]);
    }
    let mut binary = header("binary").into_bytes();
    for p in &points {
        binary.extend(p.iter().flat_map(|x| x.to_le_bytes()));
        binary.extend(0xff0000ffu32.to_le_bytes());
    }
    // Field by field, as literal LZF runs with one back reference (the colour column repeats).
    let mut columns = Vec::new();
    for axis in 0..3 {
        columns.extend(points.iter().flat_map(|p| p[axis].to_le_bytes()));
    }
    let mut lzf = Vec::new();
    for run in columns.chunks(32) {
        lzf.push(run.len() as u8 - 1);
        lzf.extend(run);
    }
    // The colours: 4 literal bytes, then 92 more copied from 4 back.
    lzf.extend([3, 0xff, 0, 0, 0xff, (7 << 5), 92 - 2 - 7, 3]);
    let mut compressed = header("binary_compressed").into_bytes();
    compressed.extend((lzf.len() as u32).to_le_bytes());
    compressed.extend(((columns.len() + 96) as u32).to_le_bytes());
    compressed.extend(lzf);
    vec![
        Seed::one("ascii", "case.pcd", ascii),
        Seed::one("binary", "case.pcd", binary),
        Seed::one("compressed", "case.pcd", compressed),
    ]
}

/// LAS and LAZ clouds far from the origin (point format 3: time and colour), with an extra
/// byte field already.
fn las_seeds() -> Vec<Seed> {
    let file = |compressed: bool| {
        let mut builder = las::Builder::from((1, 4));
        builder.point_format = las::point::Format::new(3).unwrap();
        builder.point_format.is_compressed = compressed;
        builder.point_format.extra_bytes = 2;
        let axis = |offset| las::Transform {
            scale: 0.01,
            offset,
        };
        builder.transforms = las::Vector {
            x: axis(400_000.0),
            y: axis(5_000_000.0),
            z: axis(0.0),
        };
        let header = builder.into_header().unwrap();
        let mut writer = las::Writer::new(std::io::Cursor::new(Vec::new()), header).unwrap();
        for i in 0..24 {
            let f = i as f64;
            writer
                .write_point(las::Point {
                    x: 400_100.0 + f * 0.25,
                    y: 5_000_200.0 - f * f * 0.5,
                    z: 30.0 - f,
                    intensity: i * 11,
                    gps_time: Some(f),
                    color: Some(las::Color::new(i, i + 1, i + 2)),
                    extra_bytes: vec![i as u8, 7],
                    ..Default::default()
                })
                .unwrap();
        }
        writer.into_inner().unwrap().into_inner()
    };
    vec![
        Seed::one("las", "case.las", file(false)),
        Seed::one("laz", "case.laz", file(true)),
    ]
}

/// An E57 file of one Cartesian scan with a pose and an invalid point, and one spherical
/// scan with intensities.
fn e57_seeds() -> Vec<Seed> {
    use e57::{Record, RecordValue, Transform, Translation};
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("seed.e57");
    let mut writer = e57::E57Writer::from_file(&path, "seed").unwrap();
    let mut scan = writer
        .add_pointcloud(
            "cartesian",
            vec![
                Record::CARTESIAN_X_F64,
                Record::CARTESIAN_Y_F64,
                Record::CARTESIAN_Z_F64,
                Record::CARTESIAN_INVALID_STATE,
            ],
        )
        .unwrap();
    scan.set_transform(Some(Transform {
        translation: Translation {
            x: 400_000.0,
            y: 5_000_000.0,
            z: 12.0,
        },
        ..Transform::default()
    }));
    for i in 0..24 {
        let f = i as f64;
        let values = [f * 0.25, -f * f * 0.5, 3.0 - f].map(RecordValue::Double);
        let state = RecordValue::Integer(if i == 5 { 2 } else { 0 });
        scan.add_point(values.into_iter().chain([state]).collect())
            .unwrap();
    }
    scan.finalize().unwrap();
    let mut scan = writer
        .add_pointcloud(
            "spherical",
            vec![
                Record::SPHERICAL_RANGE_F32,
                Record::SPHERICAL_AZIMUTH_F32,
                Record::SPHERICAL_ELEVATION_F32,
                Record::INTENSITY_U16,
            ],
        )
        .unwrap();
    for i in 0..16 {
        let f = i as f32;
        let mut values: Vec<RecordValue> = [2.0 + f, f * 0.1 - 0.5, 0.2]
            .map(RecordValue::Single)
            .to_vec();
        values.push(RecordValue::Integer(i * 100));
        scan.add_point(values).unwrap();
    }
    scan.finalize().unwrap();
    writer.finalize().unwrap();
    vec![Seed::one("e57", "case.e57", std::fs::read(&path).unwrap())]
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Obj => "obj",
            Format::PlyAscii => "ply-ascii",
            Format::PlyBinary => "ply-binary",
            Format::Pcd => "pcd",
            Format::Las => "las",
            Format::E57 => "e57",
            Format::Gltf => "gltf",
            Format::Sequence => "sequence",
            Format::Conf => "conf",
        }
    }

    fn seeds(self) -> Vec<Seed> {
        match self {
            Format::Obj => obj_seeds(),
            Format::PlyAscii => ply_ascii_seeds(),
            Format::PlyBinary => ply_binary_seeds(),
            Format::Pcd => pcd_seeds(),
            Format::Las => las_seeds(),
            Format::E57 => e57_seeds(),
            Format::Gltf => gltf_seeds(),
            Format::Sequence => sequence_seeds(),
            Format::Conf => conf_seeds(),
        }
    }

    /// Loads the case written into `folder` (the seed's first file is the one named) through
    /// the public loaders, and what a caller does next with what loaded. Returns the first
    /// error: for the fuzzed cases errors are fine (only panics, hangs and allocations
    /// count), while every seed must load.
    fn load(self, folder: &Path, files: &[(String, Vec<u8>)]) -> Result<(), String> {
        let first = folder.join(&files[0].0);
        let mut result = Ok(());
        let mut note = |r: Result<(), SceneError>| {
            if let (Ok(()), Err(e)) = (&result, r) {
                result = Err(e.to_string());
            }
        };
        match self {
            Format::Obj | Format::PlyAscii | Format::PlyBinary => {
                match Mesh::load(&first) {
                    Ok(mesh) => {
                        mesh.degenerate_triangle_count();
                        let mut normals = mesh.clone();
                        normals.compute_vertex_normals();
                        normals.fit_unit_sphere();
                    }
                    // A point cloud (the scan seed) is read by `load_points`.
                    Err(SceneError::Empty { .. }) => {}
                    Err(e) => note(Err(e)),
                }
                note(Mesh::load_points(&first).map(drop));
            }
            Format::Gltf => {
                note(MaterialMesh::load(&first).map(drop));
                note(Rig::load(&first).map(|rig| {
                    let clips = (0..rig.clips.len()).map(Some).chain([None]);
                    for clip in clips {
                        for looping in [false, true] {
                            let at = ClipTime { clip, looping };
                            for time in [0.0, 0.37, 1e9, -1.0] {
                                let pose = rig.pose(at, time, Mat4::IDENTITY);
                                rig.posed_positions(&pose);
                            }
                        }
                    }
                }));
            }
            Format::Sequence => {
                let pattern = folder.join(pattern_of(&files[0].0));
                for spec in [folder.to_path_buf(), pattern] {
                    note(FrameFiles::open(&spec).and_then(|frames| {
                        let first = frames.load(0, None)?;
                        for n in 1..frames.len() {
                            frames.load(n, Some(&first))?;
                        }
                        Ok(())
                    }));
                }
            }
            Format::Pcd => note(Mesh::load_points(&first).map(drop)),
            Format::E57 => note(canopy::scene::e57::load(&first).map(drop)),
            Format::Las => note(canopy::scene::las::load(&first).and_then(|cloud| {
                let values = vec![0.5; cloud.points.len()];
                let out = folder
                    .join("out")
                    .with_extension(first.extension().unwrap_or_default());
                canopy::scene::las::write_with_values(&first, &out, &[("v", &values)])
            })),
            Format::Conf => note(load_aligned_scans(&first).map(drop)),
        }
        result
    }
}

/// The printf pattern of a numbered file name: `frame_0000.obj` -> `frame_%04d.obj`,
/// `f7.ply` -> `f%d.ply`.
fn pattern_of(name: &str) -> String {
    let (stem, extension) = name.rsplit_once('.').unwrap_or((name, ""));
    let prefix = stem.trim_end_matches(|c: char| c.is_ascii_digit());
    let digits = &stem[prefix.len()..];
    let spec = if digits.len() > 1 && digits.starts_with('0') {
        format!("%0{}d", digits.len())
    } else {
        "%d".into()
    };
    format!("{prefix}{spec}.{extension}")
}

// ---------------------------------------------------------------------------------------
// Mutations.

/// Numbers a mutation may write in place of another.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "1e39",
    "-1e39",
    "1e-45",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "-2147483648",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "1.5",
    "3",
    "255",
    "65535",
    "1000000000",
];

/// Words a mutation may write in binary (little endian u32).
const WORDS: &[u32] = &[
    0,
    1,
    0xff,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x7f80_0000, // +inf
    0x7fc0_0000, // NaN
    0xff80_0000, // -inf
    1_000_000_000,
    0x4000_0000,
];

/// Where header counts and lengths are written, in the formats' text.
const COUNT_KEYS: &[&str] = &[
    "element ",
    "\"count\"",
    "\"byteLength\"",
    "\"byteOffset\"",
    "\"byteStride\"",
    "\"input\"",
    "\"output\"",
    "\"node\"",
    "\"mesh\"",
    "\"skin\"",
    "\"joints\"",
    "\"indices\"",
    "\"POSITION\"",
    "bmesh ",
];

/// One change to a file; positions and choices wrap around what they index.
#[derive(Clone, Debug)]
enum Mutation {
    /// Flips bit `bit` of the byte at `at`.
    FlipBit { at: usize, bit: u8 },
    /// Inserts `bytes` before `at`.
    Insert { at: usize, bytes: Vec<u8> },
    /// Removes `len` bytes from `at`.
    Delete { at: usize, len: usize },
    /// Keeps the first `at` bytes.
    Truncate { at: usize },
    /// Inserts `len` bytes of seed file `from` (from its byte `start`) before `at`.
    Splice {
        at: usize,
        from: usize,
        start: usize,
        len: usize,
    },
    /// Replaces the `which`-th number of the text with `NUMBERS[number]`.
    Number { which: usize, number: usize },
    /// Replaces the number after the `which`-th header count or length key with
    /// `NUMBERS[number]`.
    Count { which: usize, number: usize },
    /// Writes `WORDS[word]` as 4 little-endian bytes at `at`.
    Word { at: usize, word: usize },
    /// Repeats `len` bytes from `at` `times` times.
    Repeat { at: usize, len: usize, times: u8 },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0..1usize << 24;
    prop_oneof![
        3 => (at.clone(), 0..8u8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        1 => (at.clone(), proptest::collection::vec(
            prop_oneof![Just(b'\n'), Just(b' '), Just(b'/'), Just(b'\\'), Just(b'-'), Just(0u8), any::<u8>()],
            1..8,
        ))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        2 => (at.clone(), 1..64usize).prop_map(|(at, len)| Mutation::Delete { at, len }),
        1 => at.clone().prop_map(|at| Mutation::Truncate { at }),
        1 => (at.clone(), 0..16usize, at.clone(), 1..256usize)
            .prop_map(|(at, from, start, len)| Mutation::Splice { at, from, start, len }),
        3 => (0..4096usize, 0..NUMBERS.len())
            .prop_map(|(which, number)| Mutation::Number { which, number }),
        2 => (0..64usize, 0..NUMBERS.len())
            .prop_map(|(which, number)| Mutation::Count { which, number }),
        2 => (at.clone(), 0..WORDS.len()).prop_map(|(at, word)| Mutation::Word { at, word }),
        1 => (at, 1..64usize, 1..64u8)
            .prop_map(|(at, len, times)| Mutation::Repeat { at, len, times }),
    ]
}

/// The byte ranges of the numbers in `bytes`: a run of digits with an optional sign, point
/// and exponent, or one of the words `nan` and `inf`.
fn numbers(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i].is_ascii_digit()
            || (matches!(bytes[i], b'-' | b'+' | b'.')
                && bytes.get(i + 1).is_some_and(u8::is_ascii_digit));
        let boundary = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if starts && boundary {
            let mut j = i + 1;
            while j < bytes.len()
                && (bytes[j].is_ascii_digit()
                    || matches!(bytes[j], b'.' | b'e' | b'E')
                    || (matches!(bytes[j], b'-' | b'+') && matches!(bytes[j - 1], b'e' | b'E')))
            {
                j += 1;
            }
            out.push((i, j));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

fn replace(bytes: &mut Vec<u8>, (start, end): (usize, usize), with: &[u8]) {
    bytes.splice(start..end, with.iter().copied());
}

impl Mutation {
    fn apply(&self, bytes: &mut Vec<u8>, others: &[&[u8]]) {
        let len = bytes.len();
        let wrap = |at: usize| if len == 0 { 0 } else { at % len };
        match *self {
            Mutation::FlipBit { at, bit } => {
                if len > 0 {
                    bytes[wrap(at)] ^= 1 << (bit % 8);
                }
            }
            Mutation::Insert { at, bytes: ref new } => {
                let at = at % (len + 1);
                bytes.splice(at..at, new.iter().copied());
            }
            Mutation::Delete { at, len: n } => {
                let at = wrap(at);
                bytes.drain(at..(at + n).min(len));
            }
            Mutation::Truncate { at } => bytes.truncate(at % (len + 1)),
            Mutation::Splice {
                at,
                from,
                start,
                len: n,
            } => {
                let source = others[from % others.len()];
                if !source.is_empty() {
                    let start = start % source.len();
                    let piece = &source[start..(start + n).min(source.len())];
                    let at = at % (len + 1);
                    bytes.splice(at..at, piece.iter().copied());
                }
            }
            Mutation::Number { which, number } => {
                let found = numbers(bytes);
                if !found.is_empty() {
                    replace(
                        bytes,
                        found[which % found.len()],
                        NUMBERS[number].as_bytes(),
                    );
                }
            }
            Mutation::Count { which, number } => {
                let mut keys = Vec::new();
                for key in COUNT_KEYS {
                    let key = key.as_bytes();
                    keys.extend(
                        bytes
                            .windows(key.len())
                            .enumerate()
                            .filter(|(_, w)| *w == key)
                            .map(|(i, _)| i + key.len()),
                    );
                }
                keys.sort_unstable();
                if let Some(&after) = keys.get(which % keys.len().max(1)) {
                    // The first number after the key (past an element's name).
                    let found = numbers(&bytes[after..]);
                    if let Some(&(s, e)) = found.first() {
                        replace(bytes, (after + s, after + e), NUMBERS[number].as_bytes());
                    }
                }
            }
            Mutation::Word { at, word } => {
                if len >= 4 {
                    let at = at % (len - 3);
                    bytes[at..at + 4].copy_from_slice(&WORDS[word].to_le_bytes());
                }
            }
            Mutation::Repeat { at, len: n, times } => {
                if len > 0 {
                    let at = wrap(at);
                    let piece = bytes[at..(at + n).min(len)].to_vec();
                    for _ in 0..times {
                        bytes.splice(at..at, piece.iter().copied());
                    }
                }
            }
        }
    }
}

/// A case: a seed, the file its mutations change, and the mutations.
#[derive(Clone, Debug)]
struct Case {
    seed: usize,
    target: usize,
    mutations: Vec<Mutation>,
}

fn case(seeds: usize) -> impl Strategy<Value = Case> {
    (
        0..seeds,
        0..8usize,
        proptest::collection::vec(mutation(), 1..6),
    )
        .prop_map(|(seed, target, mutations)| Case {
            seed,
            target,
            mutations,
        })
}

impl Case {
    /// The case's files.
    fn files(&self, seeds: &[Seed]) -> Vec<(String, Vec<u8>)> {
        let seed = &seeds[self.seed];
        let mut files = seed.files.clone();
        let target = self.target % files.len();
        let others: Vec<&[u8]> = seeds
            .iter()
            .flat_map(|s| s.files.iter().map(|(_, b)| &b[..]))
            .collect();
        for m in &self.mutations {
            m.apply(&mut files[target].1, &others);
        }
        files
    }
}

// ---------------------------------------------------------------------------------------
// Running cases.

/// A temporary folder of this process, removed when dropped.
struct TempFolder(PathBuf);

impl TempFolder {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("canopy-fuzz-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create a temporary folder");
        Self(path)
    }
}

impl Drop for TempFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What went wrong with one case's load.
enum Failure {
    Panic(String),
    Hang,
    Allocation { peak: usize, allowed: usize },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Failure::Panic(message) => write!(f, "the load panicked: {message}"),
            Failure::Hang => write!(f, "the load ran past {CASE_SECONDS} s (a hang)"),
            Failure::Allocation { peak, allowed } => write!(
                f,
                "the load allocated {peak} bytes at its peak, more than the {allowed} allowed"
            ),
        }
    }
}

/// Writes `files` into `folder` (emptied first), loads them as `format` on a thread of its
/// own under `catch_unwind`, and checks its peak allocation.
/// With `must_load`, an error fails too (as a panic).
fn run_case(
    format: Format,
    folder: &Path,
    files: &[(String, Vec<u8>)],
    must_load: bool,
) -> Result<(), Failure> {
    for entry in std::fs::read_dir(folder)
        .expect("the case folder")
        .flatten()
    {
        std::fs::remove_file(entry.path()).expect("empty the case folder");
    }
    for (name, bytes) in files {
        std::fs::write(folder.join(name), bytes).expect("write a case file");
    }
    let allowed = allowed_bytes(format, bytes_read(format, files));
    let (send, receive) = std::sync::mpsc::channel();
    let (folder, files) = (folder.to_path_buf(), Arc::new(files.to_vec()));
    std::thread::Builder::new()
        .name(format!("fuzz {}", format.name()))
        .spawn(move || {
            LIVE.set(0);
            PEAK.set(0);
            MEASURING.set(true);
            let outcome = std::panic::catch_unwind(|| {
                let loaded = format.load(&folder, &files);
                if must_load {
                    loaded.expect("a seed loads");
                }
            });
            MEASURING.set(false);
            let peak = PEAK.get().max(0) as usize;
            let outcome = outcome.map_err(|payload| {
                payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic".into())
            });
            let _ = send.send((outcome, peak));
        })
        .expect("start a load thread");
    match receive.recv_timeout(Duration::from_secs(CASE_SECONDS)) {
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(Failure::Hang),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(Failure::Panic(
            "the load thread ended without a result".into(),
        )),
        Ok((Err(message), _)) => Err(Failure::Panic(message)),
        Ok((Ok(()), peak)) if peak > allowed => Err(Failure::Allocation { peak, allowed }),
        Ok(_) => Ok(()),
    }
}

/// Runs `format`'s cases; on a failure, prints the shrunk case and panics.
fn fuzz(format: Format) {
    let cases = env_number("CANOPY_FUZZ_CASES").map_or(DEFAULT_CASES, |n| n as u32);
    let seed = env_number("CANOPY_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
    let seeds = format.seeds();
    // Every seed must load: the mutations start from valid input.
    let folder = TempFolder::new(format.name());
    for s in &seeds {
        run_case(format, &folder.0, &s.files, true)
            .unwrap_or_else(|f| panic!("{} seed {}: {f}", format.name(), s.name));
    }
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2000,
        max_shrink_time: 120_000,
        ..Config::default()
    };
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..8 + format.name().len()].copy_from_slice(format.name().as_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &key);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let result = runner.run(&case(seeds.len()), |case| {
        let files = case.files(&seeds);
        run_case(format, &folder.0, &files, false).map_err(|f| TestCaseError::fail(f.to_string()))
    });
    match result {
        Ok(()) => {}
        Err(TestError::Abort(why)) => panic!("{}: aborted: {why}", format.name()),
        Err(TestError::Fail(why, case)) => {
            let files = case.files(&seeds);
            let kept = std::env::temp_dir().join(format!(
                "canopy-fuzz-failure-{}-{}",
                format.name(),
                std::process::id()
            ));
            let _ = std::fs::create_dir_all(&kept);
            let mut shown = String::new();
            for (name, bytes) in &files {
                let _ = std::fs::write(kept.join(name), bytes);
                let text = bytes.escape_ascii().to_string();
                let text = if text.len() > 4000 {
                    format!("{}... ({} bytes)", &text[..4000], bytes.len())
                } else {
                    text
                };
                shown += &format!("\n  {name}: b\"{text}\"");
            }
            panic!(
                "{} (CANOPY_FUZZ_SEED={seed}): {why}\n  seed file set '{}', file {} mutated by \
                 {:?}\n  files kept in {}{shown}",
                format.name(),
                seeds[case.seed].name,
                case.target % seeds[case.seed].files.len(),
                case.mutations,
                kept.display(),
            );
        }
    }
}

/// The allocator counts what a measuring thread allocates, and the bound is what the docs say.
#[test]
fn the_counting_allocator_measures_a_load() {
    let peak = std::thread::spawn(|| {
        LIVE.set(0);
        PEAK.set(0);
        MEASURING.set(true);
        let big = vec![1u8; 10 << 20];
        drop(std::hint::black_box(big));
        let small = vec![1u8; 1 << 20];
        MEASURING.set(false);
        drop(small);
        PEAK.get()
    })
    .join()
    .unwrap();
    assert!((10 << 20..11 << 20).contains(&peak), "{peak}");
    assert_eq!(allowed_bytes(Format::Obj, 1000), 64_000 + 1_048_576);
    assert_eq!(pattern_of("frame_0000.obj"), "frame_%04d.obj");
    assert_eq!(pattern_of("f7.ply"), "f%d.ply");
}

#[test]
fn fuzz_obj() {
    fuzz(Format::Obj);
}

#[test]
fn fuzz_ply_ascii() {
    fuzz(Format::PlyAscii);
}

#[test]
fn fuzz_ply_binary() {
    fuzz(Format::PlyBinary);
}

#[test]
fn fuzz_pcd() {
    fuzz(Format::Pcd);
}

/// E57 scans, read into one frame.
#[test]
fn fuzz_e57() {
    fuzz(Format::E57);
}

/// LAS and LAZ clouds, read and written back with a value added to each point.
#[test]
fn fuzz_las() {
    fuzz(Format::Las);
}

/// glTF and GLB files, static and rigged (posed at a few times). Seeds that once panicked:
/// `CANOPY_FUZZ_SEED=1 CANOPY_FUZZ_CASES=4000` (a `POSITION` accessor index past the
/// accessors, inside the `gltf` crate's validation) and `CANOPY_FUZZ_SEED=2
/// CANOPY_FUZZ_CASES=3000` (an animation output accessor of count 0, when the rig was posed).
#[test]
fn fuzz_gltf() {
    fuzz(Format::Gltf);
}

#[test]
fn fuzz_sequences() {
    fuzz(Format::Sequence);
}

#[test]
fn fuzz_conf() {
    fuzz(Format::Conf);
}

// ---------------------------------------------------------------------------------------
// Regressions: defects the harness found, each checked as a case and by its error.

/// Runs `files` as a case of `format` (no panic, hang or excess allocation) and returns the
/// folder's load error, if any, from `load`.
fn regression(
    format: Format,
    files: &[(&str, Vec<u8>)],
    load: impl Fn(&Path) -> Result<(), SceneError>,
) -> Option<String> {
    let files: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|(n, b)| (n.to_string(), b.clone()))
        .collect();
    let folder = TempFolder::new(&format!("regression-{}", files[0].0));
    run_case(format, &folder.0, &files, false).unwrap_or_else(|f| panic!("{f}"));
    load(&folder.0).err().map(|e| e.to_string())
}

/// A PLY element without properties has nothing to read per instance: a count of 10^18 was
/// looped over for ever.
#[test]
fn ply_element_without_properties_and_a_huge_count_is_passed_at_once() {
    let ply = "ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty uchar x\n\
               property uchar y\nproperty uchar z\nelement nothing 1000000000000000000\n\
               element face 1\nproperty list uchar uchar vertex_indices\nend_header\n";
    let mut bytes = ply.as_bytes().to_vec();
    bytes.extend([0, 0, 0, 1, 0, 0, 0, 1, 0, 3, 0, 1, 2]);
    let error = regression(Format::PlyBinary, &[("case.ply", bytes)], |folder| {
        let mesh = Mesh::load(&folder.join("case.ply"))?;
        assert_eq!(mesh.triangles, [[0, 1, 2]]);
        Ok(())
    });
    assert_eq!(error, None);
}

/// Two files of one frame number (`frame_1.obj`, `frame_01.obj`) were reported as a missing
/// frame 2 (and two of number u64::MAX overflowed).
#[test]
fn a_sequence_with_two_files_of_one_number_names_them() {
    let frame = TINY_OBJ.as_bytes().to_vec();
    for (a, b) in [
        ("frame_1.obj", "frame_01.obj"),
        (
            "frame_18446744073709551615.obj",
            "frame_018446744073709551615.obj",
        ),
    ] {
        let error = regression(
            Format::Sequence,
            &[(a, frame.clone()), (b, frame.clone())],
            |folder| FrameFiles::open(folder).map(drop),
        )
        .expect("an error");
        assert!(error.contains("has two files"), "{error}");
    }
}

/// A scan listed many times is read and placed each time: what the load allocates grows with
/// the bytes it reads (each listing reads the scan again), within the bound.
#[test]
fn a_conf_listing_a_scan_many_times_reads_it_each_time() {
    let conf = "bmesh s.ply 0 0 0 0 0 0 1\n".repeat(200);
    let error = regression(
        Format::Conf,
        &[
            ("scans.conf", conf.into_bytes()),
            ("s.ply", scan_excerpt(3000, 0)),
        ],
        |folder| {
            let scans = load_aligned_scans(&folder.join("scans.conf"))?;
            assert_eq!(scans.merged.len(), 200);
            Ok(())
        },
    );
    assert_eq!(error, None);
}
