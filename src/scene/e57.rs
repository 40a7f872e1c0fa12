//! ASTM E57 point clouds (through the `e57` crate): every scan's valid Cartesian points, each
//! moved by its scan's pose into the file's common frame, read relative to an origin so that
//! georeferenced coordinates keep their precision ([`OffsetCloud`]). Spherical scans are
//! converted to Cartesian; points whose coordinates the file marks invalid or direction-only
//! are left out. The origin is the middle of the points' bounds rounded to whole metres (exact
//! in `f64`), printed by `canopy points` and named in a PLY written from the cloud.
//!
//! **Hostile files.** Before the `e57` crate reads a file, its header's sizes (the XML
//! section's place and length, the page size) are checked against the file's; its scans may
//! declare at most [`MAX_POINTS_PER_BYTE`] points per byte of the file in all; a panic inside
//! the crate is an error naming the file, not a crash.

use super::gltf_source::guarded;
use super::mesh::SceneError;
use super::offset_cloud::OffsetCloud;
use std::io::Read;
use std::path::Path;

/// The most points a file may declare per byte of its size: values that never change (a
/// scaled integer whose limits are equal) take no bits, so a record can be smaller than a
/// byte, but a cloud of only such points is not a scan.
pub const MAX_POINTS_PER_BYTE: u64 = 8;

/// The bytes of an E57 file's header and its page size.
const HEADER_BYTES: usize = 48;
const PAGE_BYTES: u64 = 1024;

/// Whether `path` names an E57 file (by its extension).
pub fn is_e57(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("e57"))
}

/// Reads every scan of the E57 file `path`, in the file's common frame, relative to the
/// middle of its points rounded to whole metres.
pub fn load(path: &Path) -> Result<OffsetCloud, SceneError> {
    let size = check_header(path)?;
    let malformed = |location: &str, e: e57::Error| {
        SceneError::malformed(path, location.to_string(), e.to_string())
    };
    let mut reader = guarded(path, "header", || e57::E57Reader::from_file(path))?
        .map_err(|e| malformed("header", e))?;
    let mut absolute: Vec<[f64; 3]> = Vec::new();
    let mut declared = 0u64;
    for (scan, cloud) in reader.pointclouds().iter().enumerate() {
        let location = format!("scan {scan}");
        declared = declared.saturating_add(cloud.records);
        if declared > size.saturating_mul(MAX_POINTS_PER_BYTE) {
            return Err(SceneError::malformed(
                path,
                location,
                format!(
                    "{} points declared in a file of {size} bytes (with the scans before it)",
                    declared
                ),
            ));
        }
        guarded(path, &location, || -> Result<(), e57::Error> {
            let mut points = reader.pointcloud_simple(cloud)?;
            points.apply_pose(true);
            points.spherical_to_cartesian(true);
            for point in points {
                if let e57::CartesianCoordinate::Valid { x, y, z } = point?.cartesian {
                    absolute.push([x, y, z]);
                }
            }
            Ok(())
        })?
        .map_err(|e| malformed(&location, e))?;
    }
    let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    for p in &absolute {
        for k in 0..3 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    let origin = std::array::from_fn(|k| {
        let middle = ((lo[k] + hi[k]) * 0.5).round();
        if middle.is_finite() { middle } else { 0.0 }
    });
    OffsetCloud::relative(origin, &absolute).map_err(|i| {
        SceneError::malformed(path, format!("point {i}"), "a coordinate is not finite")
    })
}

/// Checks the 48-byte header: the signature, the file's physical length, the XML section
/// within it, and the page size. Returns the file's size.
fn check_header(path: &Path) -> Result<u64, SceneError> {
    let mut file = std::fs::File::open(path).map_err(|e| SceneError::io(path, e))?;
    let size = file.metadata().map_err(|e| SceneError::io(path, e))?.len();
    let mut header = [0u8; HEADER_BYTES];
    let bad = |message: String| SceneError::malformed(path, "header", message);
    file.read_exact(&mut header)
        .map_err(|_| bad(format!("{size} bytes, shorter than an E57 header")))?;
    if &header[..8] != b"ASTM-E57" {
        return Err(bad("not an E57 file (no ASTM-E57 signature)".into()));
    }
    let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().expect("8 bytes"));
    let (physical, xml_at, xml_length, page) = (word(16), word(24), word(32), word(40));
    if physical > size {
        return Err(bad(format!(
            "{physical} bytes declared in a file of {size}"
        )));
    }
    if xml_at.checked_add(xml_length).is_none_or(|end| end > size) {
        return Err(bad(format!(
            "the XML section ({xml_length} bytes at {xml_at}) runs past the file's {size} bytes"
        )));
    }
    if page != PAGE_BYTES {
        return Err(bad(format!("pages of {page} bytes, not {PAGE_BYTES}")));
    }
    Ok(size)
}
