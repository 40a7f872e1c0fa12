//! Aligned range scans: a Stanford `.conf` file (`bmesh FILE tx ty tz qi qj qk qr` per scan,
//! as `bun.conf` of the bunny's raw scans) read, each listed scan's points rotated by its unit
//! quaternion and translated, and all merged into one cloud (seed 000 §6 merges the bunny's
//! scans this way). Scans the file lists but the folder lacks are reported, not fatal; a
//! malformed line names its line number. A scan listed twice is read and placed twice (the
//! same scan at two poses), so what a load allocates stays in proportion to the bytes it reads.

use super::mesh::{Mesh, SceneError};
use std::path::{Path, PathBuf};

/// The merged cloud of a `.conf` file's scans.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AlignedScans {
    /// Every point of every scan found, in the file's order, in the common frame.
    pub points: Vec<[f32; 3]>,
    /// The scans merged, with their point counts.
    pub merged: Vec<(PathBuf, usize)>,
    /// The scans the file lists that are not beside it.
    pub missing: Vec<PathBuf>,
}

/// `p` rotated by the unit quaternion `(i, j, k, r)` and translated by `t`.
fn transform(p: [f32; 3], t: [f64; 3], q: [f64; 4]) -> [f32; 3] {
    let [x, y, z, w] = q;
    let v = p.map(f64::from);
    // v + 2 w (u x v) + 2 u x (u x v), u = (x, y, z)
    let cross = |a: [f64; 3], b: [f64; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    let u = [x, y, z];
    let uv = cross(u, v);
    let uuv = cross(u, uv);
    std::array::from_fn(|a| (v[a] + 2.0 * (w * uv[a] + uuv[a]) + t[a]) as f32)
}

/// Reads the `.conf` file at `path` and merges its scans (paths relative to its folder).
pub fn load_aligned_scans(path: &Path) -> Result<AlignedScans, SceneError> {
    let text = std::fs::read_to_string(path).map_err(|source| SceneError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let folder = path.parent().unwrap_or(Path::new("."));
    let mut scans = AlignedScans::default();
    // A UTF-8 byte-order mark would hide the first line's keyword.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    for (number, line) in text.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() != Some(&"bmesh") {
            continue;
        }
        let malformed = |message: String| SceneError::Malformed {
            path: path.to_path_buf(),
            location: format!("line {}", number + 1),
            message,
        };
        let numbers: Vec<f64> = words
            .get(2..9)
            .ok_or_else(|| malformed("a scan needs a file and 7 numbers".into()))?
            .iter()
            .map(|w| {
                w.parse::<f64>()
                    .map_err(|e| malformed(format!("'{w}': {e}")))
            })
            .collect::<Result<_, _>>()?;
        let q = [numbers[3], numbers[4], numbers[5], numbers[6]];
        let norm = q.iter().map(|x| x * x).sum::<f64>().sqrt();
        if !(norm.is_finite() && (norm - 1.0).abs() < 1e-3)
            || numbers.iter().any(|x| !x.is_finite())
        {
            return Err(malformed(format!(
                "rotation {q:?} is not a unit quaternion"
            )));
        }
        let q = q.map(|x| x / norm);
        let scan = folder.join(words[1]);
        if !scan.exists() {
            scans.missing.push(scan);
            continue;
        }
        let points = Mesh::load_points(&scan)?;
        let t = [numbers[0], numbers[1], numbers[2]];
        scans
            .points
            .extend(points.iter().map(|&p| transform(p, t, q)));
        scans.merged.push((scan, points.len()));
    }
    if scans.points.is_empty() {
        return Err(SceneError::Malformed {
            path: path.to_path_buf(),
            location: "file".into(),
            message: format!(
                "no points: none of its scans was found ({} listed, missing)",
                scans.missing.len()
            ),
        });
    }
    Ok(scans)
}
