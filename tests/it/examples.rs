//! The examples run as a user runs them (`cargo run --release --example NAME`): `cargo test`
//! builds them, and these tests run the binaries and check what they print and write. Each
//! example fails on its own on a validation error (the layer on where it is installed) or a
//! wrong result.

use crate::common;

use common::files::{TempFolder, read_png};
use std::path::PathBuf;
use std::process::Command;

/// Runs the example `name` with `args` in an empty temporary folder; its standard output.
fn run_example(name: &str, args: &[&str]) -> String {
    // Examples are built beside the test binaries' folder: target/<profile>/examples.
    let deps = std::env::current_exe().unwrap();
    let path: PathBuf = deps
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    let folder = TempFolder::new(&format!("example-{name}-run"));
    let output = Command::new(&path)
        .args(args)
        .current_dir(&folder.0)
        .output()
        .unwrap_or_else(|e| panic!("{} does not run: {e}", path.display()));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(
        output.status.success(),
        "example {name} failed:\n{stdout}\n{stderr}"
    );
    stdout.into_owned()
}

#[test]
fn embed_builds_and_traces_inside_the_applications_command_buffer() {
    let printed = run_example("embed", &[]);
    assert!(
        printed.contains("0 differing from brute force, 0 validation errors"),
        "{printed}"
    );
}

#[test]
fn own_shader_traces_canopy_s_bvh_from_the_application_s_kernel() {
    let out = TempFolder::new("example-own-shader");
    let image = out.0.join("shaded.pgm");
    let printed = run_example("own_shader", &[image.to_str().unwrap()]);
    assert!(
        printed.contains("0 differing from brute force"),
        "{printed}"
    );
    // A 160x120 binary PGM: its header and one byte a pixel.
    let pgm = std::fs::read(&image).unwrap();
    let header = b"P5\n160 120\n255\n";
    assert!(pgm.starts_with(header));
    assert_eq!(pgm.len(), header.len() + 160 * 120);
}

#[test]
fn batch_builds_every_structure_and_renders_through_the_traceable_ones() {
    let out = TempFolder::new("example-batch");
    let printed = run_example(
        "batch",
        &[
            common::test_data("meshes/torus.obj").to_str().unwrap(),
            out.0.to_str().unwrap(),
        ],
    );
    for kind in canopy::accel::StructureKind::ALL {
        assert!(printed.contains(&format!("  {kind}")), "{printed}");
    }
    let traced: Vec<String> = canopy::accel::StructureKind::ALL
        .iter()
        .filter(|kind| kind.traceable())
        .map(|kind| format!("{kind}.png"))
        .collect();
    let mut expected = traced.clone();
    expected.sort();
    assert_eq!(out.names(), expected);
    let images: Vec<_> = traced
        .iter()
        .map(|name| read_png(&out.0.join(name)).unwrap())
        .collect();
    assert_eq!((images[0].0, images[0].1), (960, 540));
    // Closest hits are exact: the same image through every structure.
    for (name, image) in traced.iter().zip(&images) {
        assert!(image.2 == images[0].2, "{name} differs from {}", traced[0]);
    }
}

#[test]
fn sequence_writes_numbered_frames() {
    let out = TempFolder::new("example-sequence");
    let printed = run_example("sequence", &["3", out.0.to_str().unwrap()]);
    assert!(printed.starts_with("3 frames"), "{printed}");
    assert_eq!(
        out.names(),
        ["frame_0000.png", "frame_0001.png", "frame_0002.png"]
    );
    let first = read_png(&out.0.join("frame_0000.png")).unwrap();
    let last = read_png(&out.0.join("frame_0002.png")).unwrap();
    assert_eq!((first.0, first.1), (320, 180));
    assert!(first.2 != last.2, "the scene deforms between frames");
}

#[test]
fn farm_renders_on_two_devices_and_skips_what_is_written() {
    let out = TempFolder::new("example-farm");
    let printed = run_example("farm", &[out.0.to_str().unwrap()]);
    assert!(printed.starts_with("8 written, 0 skipped"), "{printed}");
    assert_eq!(out.names().len(), 8);
    std::fs::remove_file(out.0.join("frame_0005.png")).unwrap();
    let again = run_example("farm", &[out.0.to_str().unwrap()]);
    assert!(again.starts_with("1 written, 7 skipped"), "{again}");
    let frame = read_png(&out.0.join("frame_0005.png")).unwrap();
    assert_eq!((frame.0, frame.1), (320, 180));
}

#[test]
fn knn_finds_the_neighbours_brute_force_finds() {
    let bunny = common::test_data("meshes/bunny_small.obj");
    let printed = run_example("knn", &[bunny.to_str().unwrap(), "12"]);
    assert!(
        printed.contains("0 differing from brute force"),
        "{printed}"
    );
}
