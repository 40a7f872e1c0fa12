//! Helpers of the tests that run the `canopy` binary and read what it writes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// An empty folder of its own for one test, in the system's temporary folder, removed (with
/// what is in it) when dropped.
pub struct TempFolder(pub PathBuf);

impl TempFolder {
    /// `canopy-<pid>-<n>-<name>` (`n` counting the folders this process made, as the tests
    /// share one process), emptied if it exists.
    pub fn new(name: &str) -> Self {
        static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("canopy-{}-{n}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    /// The names of the entries in it, sorted.
    pub fn names(&self) -> Vec<String> {
        names(&self.0)
    }
}

/// The names of the entries in `folder`, sorted.
pub fn names(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

impl Drop for TempFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The `canopy` binary as a command run in `folder`: every test runs it in a temporary folder
/// of its own, never in the crate's (where the README's quick start leaves `frames/`).
pub fn canopy_in(folder: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_canopy"));
    command.current_dir(folder);
    command
}

/// Runs `canopy ARGS` in an empty temporary folder of its own, the validation layer as the
/// other tests have it (`CANOPY_VALIDATION=off` turns it off).
pub fn canopy(args: &[&str]) -> Output {
    let validation = match std::env::var("CANOPY_VALIDATION").as_deref() {
        Ok("off") => "off",
        _ => "auto",
    };
    let folder = TempFolder::new("run");
    canopy_in(&folder.0)
        .args(["--validation", validation])
        .args(args)
        .output()
        .expect("the canopy binary runs")
}

/// The standard output of a `canopy` run that must have succeeded (its output and errors
/// printed where it did not).
pub fn succeeded(run: &Output) -> String {
    let printed = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    printed
}

/// The width, height and pixels of the PNG file at `path`, or why it does not decode.
pub fn read_png(path: &Path) -> Result<(u32, u32, Vec<u8>), String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .map_err(|e| e.to_string())?;
    let mut pixels = vec![0; reader.output_buffer_size().ok_or("no output size")?];
    reader.next_frame(&mut pixels).map_err(|e| e.to_string())?;
    Ok((reader.info().width, reader.info().height, pixels))
}

/// A GLB of `json` (with `"BIN_LENGTH"` replaced by the binary chunk's length) and `bin`.
pub fn glb(json: &str, bin: &[u8]) -> Vec<u8> {
    let pad = |mut bytes: Vec<u8>, with: u8| {
        bytes.resize(bytes.len().next_multiple_of(4), with);
        bytes
    };
    let bin = pad(bin.to_vec(), 0);
    let json = pad(
        json.replace("BIN_LENGTH", &bin.len().to_string())
            .into_bytes(),
        b' ',
    );
    let total = 12 + 8 + json.len() + 8 + bin.len();
    let mut out = Vec::new();
    out.extend(b"glTF");
    out.extend(2u32.to_le_bytes());
    out.extend((total as u32).to_le_bytes());
    out.extend((json.len() as u32).to_le_bytes());
    out.extend(b"JSON");
    out.extend(json);
    out.extend((bin.len() as u32).to_le_bytes());
    out.extend(b"BIN\0");
    out.extend(bin);
    out
}

/// A GLB of two squares side by side in the xy plane, facing +z: nodes 1 (`left`) and 2
/// (`right`), children of node 0 (`root`, without a mesh), sharing one mesh.
pub fn two_squares_glb() -> Vec<u8> {
    let positions: [[f32; 3]; 4] = [
        [-1.0, -1.0, 0.0],
        [1.0, -1.0, 0.0],
        [1.0, 1.0, 0.0],
        [-1.0, 1.0, 0.0],
    ];
    let indices: [u16; 6] = [0, 1, 2, 0, 2, 3];
    let mut bin = bytemuck::cast_slice::<_, u8>(&positions).to_vec();
    bin.extend_from_slice(bytemuck::cast_slice(&indices));
    let json = r#"{
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [
            {"name": "root", "children": [1, 2]},
            {"name": "left", "mesh": 0, "translation": [-1.2, 0, 0]},
            {"name": "right", "mesh": 0, "translation": [1.2, 0, 0]}
        ],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "buffers": [{"byteLength": BIN_LENGTH}],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 48},
            {"buffer": 0, "byteOffset": 48, "byteLength": 12}
        ],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3",
             "min": [-1, -1, 0], "max": [1, 1, 0]},
            {"bufferView": 1, "componentType": 5123, "count": 6, "type": "SCALAR"}
        ]
    }"#;
    glb(json, &bin)
}
