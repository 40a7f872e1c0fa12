//! ASTM E57 point clouds (`scene::e57`): scans in Cartesian and spherical coordinates, each
//! with its pose, read into one frame relative to an origin without losing georeferenced
//! precision, through the library and `canopy points`; and bad files, each named. The files
//! are made here with the `e57` crate.

use crate::common::files::{TempFolder, canopy_in, succeeded};
use canopy::scene::e57 as scan_files;
use e57::{Quaternion, Record, RecordValue, Transform, Translation};
use std::path::{Path, PathBuf};

/// Where the first scan's station stands: far from zero.
const STATION: [f64; 3] = [612_345.25, 5_012_345.75, 210.5];

/// The first scan's points in its own frame: a ring of `n` points of radius 3 around the
/// station, in Cartesian doubles; and invalid one (a point the scanner marked) among them.
fn ring(n: u32) -> Vec<[f64; 3]> {
    (0..n)
        .map(|i| {
            let a = i as f64 * std::f64::consts::TAU / n as f64;
            [3.0 * a.cos(), 3.0 * a.sin(), 0.001 * i as f64]
        })
        .collect()
}

/// Writes an E57 file of two scans: [`ring`] posed at [`STATION`] (a quarter turn about z),
/// with every 10th point marked invalid, and `n` spherical points at range 2 posed 10 m
/// east of it. Returns the path and the valid points in the common frame.
fn write_scans(path: PathBuf, n: u32) -> (PathBuf, Vec<[f64; 3]>) {
    let mut writer = e57::E57Writer::from_file(&path, "canopy-test").unwrap();
    let quarter = Quaternion {
        w: std::f64::consts::FRAC_1_SQRT_2,
        x: 0.0,
        y: 0.0,
        z: std::f64::consts::FRAC_1_SQRT_2,
    };
    let mut expected = Vec::new();
    let mut scan = writer
        .add_pointcloud(
            "scan-0",
            vec![
                Record::CARTESIAN_X_F64,
                Record::CARTESIAN_Y_F64,
                Record::CARTESIAN_Z_F64,
                Record::CARTESIAN_INVALID_STATE,
            ],
        )
        .unwrap();
    let [sx, sy, sz] = STATION;
    scan.set_transform(Some(Transform {
        rotation: quarter,
        translation: Translation {
            x: sx,
            y: sy,
            z: sz,
        },
    }));
    for (i, [x, y, z]) in ring(n).into_iter().enumerate() {
        let invalid = i % 10 == 3;
        scan.add_point(vec![
            RecordValue::Double(x),
            RecordValue::Double(y),
            RecordValue::Double(z),
            RecordValue::Integer(if invalid { 2 } else { 0 }),
        ])
        .unwrap();
        if !invalid {
            // A quarter turn about z takes (x, y) to (-y, x).
            expected.push([sx - y, sy + x, sz + z]);
        }
    }
    scan.finalize().unwrap();
    let mut scan = writer
        .add_pointcloud(
            "scan-1",
            vec![
                Record::SPHERICAL_RANGE_F64,
                Record::SPHERICAL_AZIMUTH_F64,
                Record::SPHERICAL_ELEVATION_F64,
            ],
        )
        .unwrap();
    scan.set_transform(Some(Transform {
        rotation: Quaternion {
            w: 1.0,
            x: 0.0,
            y: 0.0,
            z: 0.0,
        },
        translation: Translation {
            x: sx + 10.0,
            y: sy,
            z: sz,
        },
    }));
    for i in 0..n {
        let azimuth = i as f64 * 0.05 - 1.0;
        let elevation = 0.3;
        scan.add_point(vec![
            RecordValue::Double(2.0),
            RecordValue::Double(azimuth),
            RecordValue::Double(elevation),
        ])
        .unwrap();
        expected.push([
            sx + 10.0 + 2.0 * elevation.cos() * azimuth.cos(),
            sy + 2.0 * elevation.cos() * azimuth.sin(),
            sz + 2.0 * elevation.sin(),
        ]);
    }
    scan.finalize().unwrap();
    writer.finalize().unwrap();
    (path, expected)
}

#[test]
fn scans_are_posed_into_one_frame_and_keep_their_precision() {
    let folder = TempFolder::new("e57-scans");
    let (path, expected) = write_scans(folder.0.join("site.e57"), 40);
    let cloud = scan_files::load(&path).unwrap();
    assert_eq!(
        cloud.points.len(),
        expected.len(),
        "36 valid + 40 spherical"
    );
    for k in 0..3 {
        assert_eq!(cloud.origin[k], cloud.origin[k].round(), "whole metres");
    }
    let mut worst: f64 = 0.0;
    for (got, want) in cloud.points.iter().zip(&expected) {
        for k in 0..3 {
            worst = worst.max((got[k] as f64 + cloud.origin[k] - want[k]).abs());
        }
    }
    println!("origin {:?}, largest error {worst:.2e}", cloud.origin);
    assert!(worst < 2e-6, "{worst}");
    assert_eq!(
        canopy::scene::Mesh::load_points(&path).unwrap(),
        cloud.points
    );
    // From the command line: normals as PLY, relative to the origin its comment names.
    let run = canopy_in(&folder.0)
        .args(["points", "normals", "site.e57", "-k", "8"])
        .output()
        .unwrap();
    succeeded(&run);
    let ply = std::fs::read(folder.0.join("site_normals.ply")).unwrap();
    let [x, y, z] = cloud.origin;
    let head = String::from_utf8_lossy(&ply[..200]);
    assert!(
        head.contains(&format!("comment origin {x} {y} {z} ")),
        "{head}"
    );
    // LAS output needs LAS input, whose other fields it keeps.
    let run = canopy_in(&folder.0)
        .args(["points", "normals", "site.e57", "-o", "site.las"])
        .output()
        .unwrap();
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("LAS/LAZ output takes"));
}

/// The error of loading `bytes` as an E57 file.
fn load_error(folder: &Path, name: &str, bytes: &[u8]) -> String {
    let path = folder.join(name);
    std::fs::write(&path, bytes).unwrap();
    scan_files::load(&path).unwrap_err().to_string()
}

#[test]
fn bad_e57_files_are_named() {
    let folder = TempFolder::new("e57-bad");
    let (good, _) = write_scans(folder.0.join("good.e57"), 20);
    let good = std::fs::read(good).unwrap();
    for (name, bytes, fragment) in [
        (
            "short.e57",
            good[..20].to_vec(),
            "shorter than an E57 header",
        ),
        (
            "text.e57",
            b"ASTN-E57 and more text than a header".repeat(2),
            "signature",
        ),
    ] {
        let error = load_error(&folder.0, name, &bytes);
        assert!(error.contains(name) && error.contains(fragment), "{error}");
    }
    // Header fields: the XML section's length past the end, and a page size not 1,024.
    let mut xml = good.clone();
    xml[32..40].copy_from_slice(&(1u64 << 50).to_le_bytes());
    let error = load_error(&folder.0, "xml.e57", &xml);
    assert!(error.contains("XML section"), "{error}");
    let mut page = good.clone();
    page[40..48].copy_from_slice(&4096u64.to_le_bytes());
    let error = load_error(&folder.0, "page.e57", &page);
    assert!(error.contains("pages of 4096 bytes"), "{error}");
    // A scan declaring more points than the file could hold (its checksums valid).
    let path = folder.0.join("count.e57");
    let mut writer = e57::E57Writer::from_file(&path, "count").unwrap();
    let mut scan = writer
        .add_pointcloud(
            "scan",
            vec![
                Record::CARTESIAN_X_F64,
                Record::CARTESIAN_Y_F64,
                Record::CARTESIAN_Z_F64,
            ],
        )
        .unwrap();
    for i in 0..20 {
        let values = [i as f64, 1.0, 2.0].map(RecordValue::Double);
        scan.add_point(values.to_vec()).unwrap();
    }
    scan.finalize().unwrap();
    writer
        .finalize_customized_xml(|xml| {
            Ok(xml.replace("recordCount=\"20\"", "recordCount=\"1000000000000\""))
        })
        .unwrap();
    let error = scan_files::load(&path).unwrap_err().to_string();
    assert!(
        error.contains("count.e57:scan 0: 1000000000000 points declared"),
        "{error}"
    );
    // A page whose checksum fails: the crate's own check, named as the file's.
    let mut flipped = good.clone();
    flipped[600] ^= 0xff;
    let error = load_error(&folder.0, "flipped.e57", &flipped);
    assert!(error.contains("flipped.e57:"), "{error}");
}
