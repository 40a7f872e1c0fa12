//! PCD point clouds: the three encodings (`ascii`, `binary`, `binary_compressed`) read back
//! the points written, whatever fields surround x, y and z and whatever their types, with
//! missing returns (NaN) dropped; LZF back references; hostile headers and bodies refused with
//! the file and the place named, before anything is allocated for what they declare.

use canopy::scene::pcd::lzf_decompress;
use canopy::scene::{Mesh, SceneError};
use std::path::PathBuf;

/// A PCD file in a temporary folder, removed on drop.
struct TempPcd(PathBuf);

impl TempPcd {
    fn new(name: &str, bytes: impl AsRef<[u8]>) -> Self {
        let path = std::env::temp_dir().join(format!("canopy-{}-{name}.pcd", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        Self(path)
    }

    fn error(&self, fragment: &str) -> String {
        let error = Mesh::load_points(&self.0).unwrap_err();
        assert!(matches!(error, SceneError::Malformed { .. }), "{error}");
        let message = error.to_string();
        assert!(message.contains(&*self.0.to_string_lossy()), "{message}");
        assert!(
            message.contains(fragment),
            "{message} should say {fragment}"
        );
        message
    }
}

impl Drop for TempPcd {
    fn drop(&mut self) {
        std::fs::remove_file(&self.0).ok();
    }
}

/// Fields around the coordinates: a 16-bit intensity before x, z as a double, a packed colour
/// after, and a three-value descriptor between y and z.
const FIELDS: &str = "FIELDS intensity x y descriptor z rgb\nSIZE 2 4 4 4 8 4\nTYPE U F F F F U\n\
                      COUNT 1 1 1 3 1 1\n";
const RECORD: usize = 2 + 4 + 4 + 12 + 8 + 4;

fn header(points: usize, data: &str) -> String {
    format!(
        "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\n{FIELDS}WIDTH {points}\n\
         HEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {points}\nDATA {data}\n"
    )
}

/// 40 points, the 7th and the 23rd missing (NaN).
fn cloud() -> Vec<[f32; 3]> {
    (0..40)
        .map(|i| match i {
            7 | 23 => [f32::NAN; 3],
            _ => {
                let t = i as f32 * 0.37;
                [t.sin() * 3.5, t.cos() * -1.25, 1e5 + t]
            }
        })
        .collect()
}

fn finite(points: &[[f32; 3]]) -> Vec<[f32; 3]> {
    points
        .iter()
        .filter(|p| p.iter().all(|x| x.is_finite()))
        .copied()
        .collect()
}

fn records(points: &[[f32; 3]]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (i, p) in points.iter().enumerate() {
        bytes.extend((i as u16).to_le_bytes());
        bytes.extend(p[0].to_le_bytes());
        bytes.extend(p[1].to_le_bytes());
        bytes.extend([0.5f32, -0.5, 9.0].iter().flat_map(|v| v.to_le_bytes()));
        bytes.extend((p[2] as f64).to_le_bytes());
        bytes.extend(0x00ff8800u32.to_le_bytes());
    }
    bytes
}

/// The records field by field (PCL's `binary_compressed` layout), as literal LZF runs.
fn compressed(points: &[[f32; 3]]) -> Vec<u8> {
    let rows = records(points);
    let sizes = [2, 4, 4, 12, 8, 4];
    let mut columns = Vec::new();
    let mut offset = 0;
    for size in sizes {
        for row in rows.chunks(RECORD) {
            columns.extend(&row[offset..offset + size]);
        }
        offset += size;
    }
    let mut lzf = Vec::new();
    for run in columns.chunks(32) {
        lzf.push(run.len() as u8 - 1);
        lzf.extend(run);
    }
    let mut bytes = (lzf.len() as u32).to_le_bytes().to_vec();
    bytes.extend((columns.len() as u32).to_le_bytes());
    bytes.extend(lzf);
    bytes
}

#[test]
fn every_encoding_reads_back_the_points_without_the_missing_ones() {
    let points = cloud();
    let want = finite(&points);
    assert_eq!(want.len(), 38);

    let mut ascii = header(points.len(), "ascii");
    for (i, p) in points.iter().enumerate() {
        let coordinate = |x: f32| {
            if x.is_nan() {
                "nan".to_string()
            } else {
                format!("{x:e}")
            }
        };
        ascii += &format!(
            "{i} {} {} 0.5 -0.5 9 {} 16746496\r\n",
            coordinate(p[0]),
            coordinate(p[1]),
            coordinate(p[2])
        );
    }
    let mut binary = header(points.len(), "binary").into_bytes();
    binary.extend(records(&points));
    let mut packed = header(points.len(), "binary_compressed").into_bytes();
    packed.extend(compressed(&points));
    for (name, bytes) in [
        ("ascii", ascii.into_bytes()),
        ("binary", binary),
        ("compressed", packed),
    ] {
        let file = TempPcd::new(name, bytes);
        let got = Mesh::load_points(&file.0).unwrap();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn integer_coordinates_and_old_headers_read() {
    // No VERSION, no POINTS (WIDTH x HEIGHT instead), signed 16-bit coordinates.
    let mut bytes = "FIELDS x y z\nSIZE 2 2 2\nTYPE I I I\nWIDTH 2\nHEIGHT 1\nDATA binary\n"
        .as_bytes()
        .to_vec();
    for v in [-3i16, 4, 500, 7, -8, 9] {
        bytes.extend(v.to_le_bytes());
    }
    let file = TempPcd::new("int16", bytes);
    let got = Mesh::load_points(&file.0).unwrap();
    assert_eq!(got, vec![[-3.0, 4.0, 500.0], [7.0, -8.0, 9.0]]);
}

#[test]
fn lzf_back_references_copy_what_was_written() {
    // "abc", then 6 bytes from 3 back: "abcabcabc".
    let stream = [2, b'a', b'b', b'c', (4 << 5), 2];
    assert_eq!(lzf_decompress(&stream, 9).unwrap(), b"abcabcabc");
    // A reference before the start, a run past the end, and a wrong length are errors.
    assert!(lzf_decompress(&[0, b'a', (1 << 5), 5], 4).is_err());
    assert!(lzf_decompress(&[5, b'a'], 6).is_err());
    assert!(lzf_decompress(&stream, 10).is_err());
    assert!(lzf_decompress(&stream, 8).is_err());
}

#[test]
fn hostile_files_are_refused_with_the_place_named() {
    let huge = 1_000_000_000;
    let mut binary = header(huge, "binary").into_bytes();
    binary.extend(records(&cloud()[..2]));
    TempPcd::new("huge-binary", binary).error("bytes follow the header");

    let mut lying = header(huge, "binary_compressed").into_bytes();
    lying.extend(compressed(&cloud()[..2]));
    TempPcd::new("huge-compressed", lying).error("compressed data");

    let mut ascii = header(3, "ascii");
    ascii += "0 1 2 0 0 0 3 0\n1 1 2 0 0 0 3 0\n";
    TempPcd::new("short-ascii", ascii).error("the data ends after 2 of 3 points");

    let garbage = header(1, "ascii") + "0 one 2 0 0 0 3 0\n";
    TempPcd::new("garbage", garbage).error("'one' is not a number");

    let cut = header(1, "ascii") + "0 1\n";
    TempPcd::new("cut-line", cut).error("has 2 values");

    let no_z = "FIELDS x y\nSIZE 4 4\nTYPE F F\nCOUNT 1 1\nPOINTS 1\nDATA ascii\n1 2\n";
    TempPcd::new("no-z", no_z).error("no field 'z'");

    let mismatch = "FIELDS x y z\nSIZE 4 4\nTYPE F F F\nPOINTS 1\nDATA ascii\n1 2 3\n";
    TempPcd::new("mismatch", mismatch).error("3 FIELDS but 2 SIZE");

    let odd = "FIELDS x y z\nSIZE 4 4 3\nTYPE F F F\nPOINTS 1\nDATA ascii\n1 2 3\n";
    TempPcd::new("odd-size", odd).error("field 'z'");

    let unended = "FIELDS x y z\nSIZE 4 4 4\n";
    TempPcd::new("no-data-line", unended).error("before its DATA line");

    let unknown = "FIELDS x y z\nDATA lzma\n";
    TempPcd::new("unknown-data", unknown).error("DATA 'lzma'");
}
