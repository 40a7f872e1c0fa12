//! LAS and LAZ point clouds (`scene::las`): georeferenced coordinates read relative to an
//! origin without losing their precision, written back with values added as extra bytes and
//! every original field exact, through the library and `canopy points`; and bad files, each
//! named in its error. The files are made here with the `las` crate.

use crate::common::files::{TempFolder, canopy_in, succeeded};
use canopy::scene::las as cloud_files;
use canopy::scene::offset_cloud::OffsetCloud;
use std::path::{Path, PathBuf};

/// Where the test clouds lie: a UTM-like position, far from zero.
const CENTRE: [f64; 3] = [512_345.678, 4_012_345.678, 150.0];

/// The test cloud: `n` points on a sphere of radius 5 around [`CENTRE`] on a 1 mm grid, each
/// with its own intensity, classification, time and colour.
fn points(n: u32) -> Vec<las::Point> {
    (0..n)
        .map(|i| {
            let (a, b) = (
                i as f64 * 2.399_963,
                (1.0 - 2.0 * (i as f64 + 0.5) / n as f64).acos(),
            );
            let on_grid = |x: f64| (x * 1000.0).round() / 1000.0;
            las::Point {
                x: on_grid(CENTRE[0] + 5.0 * b.sin() * a.cos()),
                y: on_grid(CENTRE[1] + 5.0 * b.sin() * a.sin()),
                z: on_grid(CENTRE[2] + 5.0 * b.cos()),
                intensity: (i * 37 % 65_536) as u16,
                classification: las::point::Classification::new((i % 10) as u8).unwrap(),
                gps_time: Some(1000.0 + i as f64 * 0.5),
                color: Some(las::Color::new(i as u16, 2 * i as u16, 65_535 - i as u16)),
                ..Default::default()
            }
        })
        .collect()
}

/// Writes `points` to `path` (LAZ by its extension), point format 3, scale 1 mm, offset near
/// the centre; returns the path.
fn write_cloud(path: PathBuf, points: &[las::Point]) -> PathBuf {
    let mut builder = las::Builder::from((1, 4));
    builder.point_format = las::point::Format::new(3).unwrap();
    builder.point_format.is_compressed = path.extension().is_some_and(|e| e == "laz");
    let axis = |offset: f64| las::Transform {
        scale: 0.001,
        offset,
    };
    builder.transforms = las::Vector {
        x: axis(500_000.0),
        y: axis(4_000_000.0),
        z: axis(0.0),
    };
    let mut writer = las::Writer::from_path(&path, builder.into_header().unwrap()).unwrap();
    for point in points {
        writer.write_point(point.clone()).unwrap();
    }
    writer.close().unwrap();
    path
}

/// Every point of the file at `path`.
fn read_back(path: &Path) -> (las::Header, Vec<las::Point>) {
    let mut reader = las::Reader::from_path(path).unwrap();
    let points = reader.points().map(Result::unwrap).collect();
    (reader.header().clone(), points)
}

/// The loaded cloud's points, put back at its origin in double precision, against the
/// file's: the largest difference, and an f32's error holding the same points absolute.
fn errors(cloud: &OffsetCloud, points: &[las::Point]) -> (f64, f64) {
    let mut relative: f64 = 0.0;
    let mut absolute: f64 = 0.0;
    for (got, p) in cloud.points.iter().zip(points) {
        for (k, x) in [p.x, p.y, p.z].into_iter().enumerate() {
            relative = relative.max((got[k] as f64 + cloud.origin[k] - x).abs());
            absolute = absolute.max((x as f32 as f64 - x).abs());
        }
    }
    (relative, absolute)
}

#[test]
fn georeferenced_clouds_keep_their_precision_in_las_and_laz() {
    let folder = TempFolder::new("las-precision");
    let original = points(500);
    for name in ["cloud.las", "cloud.laz"] {
        let path = write_cloud(folder.0.join(name), &original);
        let cloud = cloud_files::load(&path).unwrap();
        assert_eq!(cloud.points.len(), original.len(), "{name}");
        // The origin lies on the file's 1 mm grid, within the cloud.
        for (k, o) in cloud.origin.into_iter().enumerate() {
            assert!((o - CENTRE[k]).abs() < 5.0, "{name}: origin {o}");
            assert!(
                ((o * 1000.0).round() - o * 1000.0).abs() < 1e-6,
                "{name}: origin {o}"
            );
        }
        let (relative, absolute) = errors(&cloud, &original);
        println!(
            "{name}: largest error {relative:.2e} relative to the origin, {absolute:.2e} as f32"
        );
        assert!(relative < 1e-6, "{name}: {relative}");
        assert!(
            absolute > 0.01,
            "the test cloud is not far enough out to matter"
        );
        // Through the mesh loader too (relative to the same origin).
        let mesh_points = canopy::scene::Mesh::load_points(&path).unwrap();
        assert_eq!(mesh_points, cloud.points, "{name}");
    }
}

#[test]
fn values_are_added_as_extra_bytes_and_every_field_kept() {
    let folder = TempFolder::new("las-extra-bytes");
    let original = points(300);
    for (input, output) in [("in.las", "out.las"), ("in.laz", "out.laz")] {
        let input = write_cloud(folder.0.join(input), &original);
        let output = folder.0.join(output);
        let a: Vec<f32> = (0..300).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..300).map(|i| -(i as f32)).collect();
        cloud_files::write_with_values(&input, &output, &[("first", &a), ("second", &b)]).unwrap();
        let (_, original) = read_back(&input);
        let (header, written) = read_back(&output);
        assert_eq!(header.point_format().extra_bytes, 8);
        assert_eq!(
            header.point_format().is_compressed,
            output.extension().unwrap() == "laz"
        );
        let record = header
            .vlrs()
            .iter()
            .find(|v| v.user_id == "LASF_Spec" && v.record_id == 4)
            .expect("an extra-bytes record");
        assert_eq!(record.data.len(), 2 * 192);
        assert_eq!(&record.data[4..9], b"first");
        assert_eq!(record.data[2], 9, "float");
        assert_eq!(&record.data[192 + 4..192 + 10], b"second");
        assert_eq!(written.len(), original.len());
        for (i, (w, o)) in written.iter().zip(&original).enumerate() {
            let expected: Vec<u8> = [a[i], b[i]].iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(w.extra_bytes, expected, "{}: point {i}", output.display());
            let mut w = w.clone();
            w.extra_bytes.clear();
            assert_eq!(
                &w, o,
                "point {i}: the coordinates and fields are the input's"
            );
        }
    }
    // A count other than the points' is refused before anything is written.
    let input = folder.0.join("in.las");
    let error =
        cloud_files::write_with_values(&input, &folder.0.join("short.las"), &[("x", &[1.0])])
            .unwrap_err()
            .to_string();
    assert!(error.contains("1 values of x for 300 points"), "{error}");
    assert!(!folder.0.join("short.las").exists());
}

#[test]
fn points_normals_writes_las_with_normals_as_extra_bytes() {
    let folder = TempFolder::new("las-cli");
    let original = points(2000);
    let input = write_cloud(folder.0.join("sphere.las"), &original);
    let (_, original) = read_back(&input);
    let run = canopy_in(&folder.0)
        .args(["points", "normals", "sphere.las", "-k", "12"])
        .output()
        .unwrap();
    let printed = succeeded(&run);
    assert!(printed.contains("relative to the origin"), "{printed}");
    let (header, written) = read_back(&folder.0.join("sphere_normals.las"));
    assert_eq!(header.point_format().extra_bytes, 16, "nx ny nz density");
    // The normals of a sphere point along the radius (either way before orientation; the
    // orientation makes them agree).
    let mut aligned = 0;
    for (w, o) in written.iter().zip(&original) {
        let value =
            |k: usize| f32::from_le_bytes(w.extra_bytes[4 * k..4 * k + 4].try_into().unwrap());
        let radial = [o.x - CENTRE[0], o.y - CENTRE[1], o.z - CENTRE[2]].map(|c| c / 5.0);
        let cosine: f64 = (0..3).map(|k| value(k) as f64 * radial[k]).sum();
        aligned += (cosine.abs() > 0.95) as usize;
        assert_eq!((w.x, w.y, w.z), (o.x, o.y, o.z));
    }
    assert!(
        aligned * 100 > 95 * written.len(),
        "{aligned} of {}",
        written.len()
    );
    // And as PLY, relative to the origin the comment names.
    let run = canopy_in(&folder.0)
        .args([
            "points",
            "normals",
            input.to_str().unwrap(),
            "-o",
            "sphere.ply",
        ])
        .output()
        .unwrap();
    assert!(run.status.success());
    let ply = std::fs::read(folder.0.join("sphere.ply")).unwrap();
    let text = String::from_utf8_lossy(&ply[..300]);
    let [x, y, z] = cloud_files::load(&input).unwrap().origin;
    assert!(
        text.contains(&format!("comment origin {x} {y} {z} ")),
        "{text}"
    );
}

/// The error of loading `bytes` as a LAS file.
fn load_error(folder: &Path, name: &str, bytes: &[u8]) -> String {
    let path = folder.join(name);
    std::fs::write(&path, bytes).unwrap();
    cloud_files::load(&path).unwrap_err().to_string()
}

#[test]
fn bad_las_files_are_named() {
    let folder = TempFolder::new("las-bad");
    let good = std::fs::read(write_cloud(folder.0.join("good.las"), &points(50))).unwrap();
    let error = load_error(&folder.0, "garbage.las", b"not a point cloud at all");
    assert!(
        error.contains("garbage.las") && error.contains("header"),
        "{error}"
    );
    // Cut in the middle of the points: the first missing one is named.
    let cut = &good[..good.len() - 34 * 10 - 5];
    let error = load_error(&folder.0, "cut.las", cut);
    assert!(error.contains("cut.las:point 39"), "{error}");
    // A point count no file of this size can hold (the legacy 32-bit count at byte 107 and
    // LAS 1.4's 64-bit one at byte 247).
    let mut huge = good.clone();
    huge[107..111].copy_from_slice(&u32::MAX.to_le_bytes());
    huge[247..255].copy_from_slice(&u64::MAX.to_le_bytes());
    let error = load_error(&folder.0, "huge.las", &huge);
    assert!(error.contains("points claimed"), "{error}");
    // An extended record declaring 2^60 bytes of data.
    let mut evlr = good.clone();
    let at = evlr.len() as u64;
    evlr[235..243].copy_from_slice(&at.to_le_bytes());
    evlr[243..247].copy_from_slice(&1u32.to_le_bytes());
    let mut record = vec![0u8; 60];
    record[20..28].copy_from_slice(&(1u64 << 60).to_le_bytes());
    evlr.extend(record);
    let error = load_error(&folder.0, "evlr.las", &evlr);
    assert!(error.contains("extended record 0"), "{error}");
}
