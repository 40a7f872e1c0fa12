//! Hostile input and faults: huge frame ranges, absurd pattern widths, degenerate cameras,
//! byte-order marks, interrupts while a mesh loads, and GPU work that outlives its fence
//! timeout. The binary runs in a temporary folder of its own and writes only there.

use crate::common;

use canopy::export::{OutputNaming, Shard, ShardMode, parse_frames};
use canopy::render::Camera;
use common::files::TempFolder;
use glam::Vec3;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `canopy ARGS` started in `folder`, its output piped.
fn spawn_in(folder: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_canopy"))
        .args(args)
        .current_dir(folder)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the canopy binary starts")
}

/// Sends SIGINT to `child`.
fn interrupt(child: &Child) {
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// The exit code of `child` once it ends, waiting at most `limit` (then it is killed and the
/// test fails), with its stderr.
fn exit_within(mut child: Child, limit: Duration) -> (Option<i32>, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            return (status.code(), stderr);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("canopy still ran {limit:?} after the interrupt");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_huge_frame_range_is_parsed_sharded_and_iterated_at_once() {
    let start = Instant::now();
    let frames = parse_frames("0..4294967295").unwrap();
    assert_eq!(frames.len(), 4_294_967_295);
    assert_eq!(frames.iter().take(4).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    assert_eq!(frames.get(4_294_967_294), Some(4_294_967_294));
    assert!(frames.contains(4_000_000_000));
    let interleaved = Shard {
        index: 3,
        count: 7,
        mode: ShardMode::Interleaved,
    }
    .of(&frames);
    assert_eq!(
        interleaved.iter().take(3).collect::<Vec<_>>(),
        vec![3, 10, 17]
    );
    assert_eq!(interleaved.len(), (4_294_967_295u64 - 3).div_ceil(7));
    assert!(interleaved.contains(3 + 7 * 500_000_000));
    assert!(!interleaved.contains(4));
    let block = Shard {
        index: 6,
        count: 7,
        mode: ShardMode::Block,
    }
    .of(&frames);
    let first = block.get(0).unwrap();
    assert_eq!(first as u64, 4_294_967_295u64 * 6 / 7);
    assert_eq!(block.get(block.len() - 1), Some(4_294_967_294));
    // Overlapping huge stepped ranges are combined, not listed.
    let mixed = parse_frames("0..4000000000:2,1..4000000000:3,7").unwrap();
    assert_eq!(
        mixed.iter().take(8).collect::<Vec<_>>(),
        vec![0, 1, 2, 4, 6, 7, 8, 10]
    );
    // Evens, and 1 mod 3, less their common 4 mod 6.
    assert_eq!(mixed.len(), 2_000_000_000 + 1_333_333_333 - 666_666_666);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_huge_frame_range_starts_rendering_and_stops_on_an_interrupt() {
    let dir = TempFolder::new("huge-range");
    let child = spawn_in(
        &dir.0,
        &[
            "render",
            "--frames",
            "0..4294967295",
            "--size",
            "16x9",
            "--triangles",
            "1000",
            "--bounces",
            "0",
            "--out",
            "f",
        ],
    );
    let first = dir.0.join("f/frame_0000.png");
    let start = Instant::now();
    while !first.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no frame after 120 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    interrupt(&child);
    let (code, stderr) = exit_within(child, Duration::from_secs(60));
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stderr.contains("of 4294967295"), "{stderr}");
}

#[test]
fn frame_number_widths_are_bounded() {
    for bad in [
        "x_%70000d.png".to_string(),
        "x_%099999999999999999999999d.png".to_string(),
        format!("x_{}.png", "#".repeat(100_000)),
        "x_%011d.png".to_string(),
    ] {
        let error = OutputNaming::parse(Path::new(&bad), None).unwrap_err();
        assert!(error.contains("at most 10"), "{error}");
    }
    let widest = OutputNaming::parse(Path::new("x_%010d.png"), None).unwrap();
    assert_eq!(widest.path(u32::MAX), Path::new("./x_4294967295.png"));
    assert_eq!(widest.frame_of("x_4294967295.png"), Some(u32::MAX));
    assert_eq!(widest.frame_of("x_0000000007.png"), Some(7));
    assert_eq!(widest.frame_of("x_7.png"), None);
    let dir = TempFolder::new("pattern-width");
    let output = Command::new(env!("CARGO_BIN_EXE_canopy"))
        .args(["render", "--out", "x_%70000d.png", "--frames", "0"])
        .current_dir(&dir.0)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("at most 10") && !stderr.contains("internal error"),
        "{stderr}"
    );
    assert!(dir.names().is_empty());
}

/// Whether `(forward, right, up)` are finite unit vectors at right angles.
fn assert_orthonormal((forward, right, up): (Vec3, Vec3, Vec3), label: &str) {
    for v in [forward, right, up] {
        assert!(v.is_finite(), "{label}: {v}");
        assert!((v.length() - 1.0).abs() < 1e-5, "{label}: {v}");
    }
    for (a, b) in [(forward, right), (forward, up), (right, up)] {
        assert!(a.dot(b).abs() < 1e-5, "{label}: {a} . {b}");
    }
}

#[test]
fn a_camera_looking_along_its_up_has_a_finite_orthonormal_basis() {
    let camera = |position: Vec3, target: Vec3, up: Vec3| Camera {
        position,
        target,
        up,
        fov_y_degrees: 40.0,
    };
    for (position, target, up, label) in [
        (
            Vec3::new(0.0, 5.0, 0.0),
            Vec3::ZERO,
            Vec3::Y,
            "straight down",
        ),
        (Vec3::ZERO, Vec3::new(0.0, 5.0, 0.0), Vec3::Y, "straight up"),
        (
            Vec3::new(1.0, 5.0, 2.0),
            Vec3::new(1.0, -3.0, 2.0),
            Vec3::Y,
            "down, off the axis",
        ),
        (Vec3::new(0.0, 0.0, 3.0), Vec3::ZERO, Vec3::Z, "along z"),
        (Vec3::new(0.0, 0.0, 3.0), Vec3::ZERO, Vec3::ZERO, "no up"),
        (Vec3::ONE, Vec3::ONE, Vec3::Y, "eye at the target"),
        (Vec3::new(3.0, 2.0, 1.0), Vec3::ZERO, Vec3::Y, "ordinary"),
    ] {
        let c = camera(position, target, up);
        let frame = c.frame();
        assert_orthonormal(frame, label);
        if position != target {
            let towards = (target - position).normalize();
            assert!(frame.0.dot(towards) > 0.9999, "{label}");
        }
        let (forward, right, up) = c.basis(32, 18);
        assert!(forward.is_finite() && right.is_finite() && up.is_finite());
    }
    // An ordinary camera's basis is as before: up stays on the side of the given up.
    let ordinary = camera(Vec3::new(3.0, 2.0, 1.0), Vec3::ZERO, Vec3::Y).frame();
    assert!(ordinary.2.y > 0.5);
    // Looking straight down, the image's top is +z.
    let down = camera(Vec3::new(0.0, 5.0, 0.0), Vec3::ZERO, Vec3::Y).frame();
    assert!(down.2.abs_diff_eq(Vec3::Z, 1e-6), "{down:?}");
}

/// The pixels (RGB) of the binary PPM at `path`.
fn read_ppm(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    // P6\nW H\n255\n
    let mut newlines = 0;
    let start = bytes
        .iter()
        .position(|&b| {
            newlines += (b == b'\n') as u32;
            newlines == 3
        })
        .unwrap();
    bytes[start + 1..].to_vec()
}

#[test]
fn a_camera_looking_straight_down_sees_the_ground() {
    let dir = TempFolder::new("camera-down");
    let output = Command::new(env!("CARGO_BIN_EXE_canopy"))
        .args([
            "render",
            "--camera-eye",
            "0,5,0",
            "--camera-target",
            "0,0,0",
            "--frames",
            "0",
            "--size",
            "32x18",
            "--triangles",
            "1000",
            "--out",
            "down_####.ppm",
        ])
        .current_dir(&dir.0)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let pixels = read_ppm(&dir.0.join("down_0000.ppm"));
    assert_eq!(pixels.len(), 32 * 18 * 3);
    let distinct: std::collections::HashSet<&[u8]> = pixels.chunks(3).collect();
    assert!(
        distinct.len() > 4,
        "a uniform image: {} colours",
        distinct.len()
    );
}

#[test]
fn an_eye_at_its_target_is_a_usage_error() {
    let dir = TempFolder::new("camera-eye-target");
    for args in [
        &["--camera-eye", "1,2,3", "--camera-target", "1,2,3"][..],
        // The default scene's camera looks at its centre.
        &["--camera-eye", "0,0.4,0", "--no-write"][..],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_canopy"))
            .args(["render", "--frames", "0", "--size", "16x9", "--triangles"])
            .arg("1000")
            .args(args)
            .current_dir(&dir.0)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("look"), "{stderr}");
    }
    assert!(dir.names().is_empty(), "{:?}", dir.names());
}

#[test]
fn a_byte_order_mark_does_not_hide_the_first_line() {
    let dir = TempFolder::new("bom");
    let obj = dir.0.join("tri.obj");
    std::fs::write(&obj, "\u{feff}v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
    let mesh = canopy::scene::Mesh::load(&obj).unwrap();
    assert_eq!(mesh.positions.len(), 3);
    assert_eq!(mesh.triangles, vec![[0, 1, 2]]);
    let ply = dir.0.join("tri.ply");
    std::fs::write(
        &ply,
        "\u{feff}ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n\
         property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n\
         0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n",
    )
    .unwrap();
    let mesh = canopy::scene::Mesh::load(&ply).unwrap();
    assert_eq!(mesh.triangles, vec![[0, 1, 2]]);
    let conf = dir.0.join("scans.conf");
    std::fs::write(&conf, "\u{feff}bmesh tri.ply 0 0 0 0 0 0 1\n").unwrap();
    let scans = canopy::scene::scans::load_aligned_scans(&conf).unwrap();
    assert_eq!(scans.points.len(), 3);
}

/// An OBJ grid of about a million vertices and triangles (43 MB): a few seconds of loading
/// and rendering on a CPU device.
fn big_obj(path: &Path) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let n = 1_000_000;
    for i in 0..n {
        writeln!(out, "v {}.5 {}.25 0.125", i % 1000, i / 1000).unwrap();
    }
    for i in 0..n - 1001 {
        writeln!(out, "f {} {} {}", i + 1, i + 2, i + 1001).unwrap();
    }
    out.flush().unwrap();
}

/// Waits until process `pid` has `file` open (it is reading it).
fn wait_until_open(pid: u32, file: &Path) {
    let start = Instant::now();
    loop {
        let open = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == file));
        if open {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} not opened",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn an_interrupt_while_a_mesh_loads_ends_canopy_with_130() {
    let dir = TempFolder::new("interrupt-load");
    let mesh = dir.0.join("big.obj");
    big_obj(&mesh);
    let mesh = mesh.canonicalize().unwrap();
    for args in [
        &["build", "big.obj"][..],
        &["render", "--mesh", "big.obj", "--frames", "0", "--out", "f"][..],
    ] {
        let child = spawn_in(&dir.0, args);
        wait_until_open(child.id(), &mesh);
        interrupt(&child);
        // Loading and building take seconds more, and a frame seconds after them.
        let (code, stderr) = exit_within(child, Duration::from_secs(3));
        assert_eq!(code, Some(130), "{args:?}: {stderr}");
        assert!(stderr.contains("interrupted"), "{stderr}");
    }
    // The render made its (empty) output folder, and nothing else is left.
    assert_eq!(dir.names(), vec!["big.obj", "f"]);
    assert_eq!(std::fs::read_dir(dir.0.join("f")).unwrap().count(), 0);
}

#[test]
fn gpu_work_past_its_fence_timeout_is_an_error_and_nothing_is_destroyed_under_it() {
    let ctx = common::context();
    assert_eq!(ctx.fence_timeout(), Some(canopy::vk::SUBMIT_TIMEOUT));
    let buffer = ctx
        .create_buffer("big", 256 << 20, canopy::vk::MemoryKind::Device)
        .unwrap();
    ctx.set_fence_timeout(Some(Duration::from_nanos(1)));
    let waited = ctx.submit_and_wait(|rec| {
        for value in 0..16 {
            rec.fill(&buffer, 0, 256 << 20, value);
            rec.barrier_after_earlier_work();
        }
        Ok(())
    });
    let error = waited.unwrap_err();
    assert!(
        matches!(error, canopy::vk::Error::GpuTimeout { .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("raise --fence-timeout"),
        "{error}"
    );
    assert!(ctx.timed_out());
    // Dropped while the GPU may still fill it: leaked, not destroyed.
    drop(buffer);
    common::assert_valid(&ctx);
    let dir = TempFolder::new("fence-timeout");
    let output = Command::new(env!("CARGO_BIN_EXE_canopy"))
        .args(["--fence-timeout", "0.000000001", "render", "--no-write"])
        .args(["--frames", "0", "--size", "64x36", "--triangles", "1000"])
        .current_dir(&dir.0)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("raise --fence-timeout"), "{stderr}");
    for (text, expected) in [
        ("2.5", Some(Some(Duration::from_millis(2500)))),
        ("0", Some(None)),
        ("none", Some(None)),
        ("-1", None),
        ("soon", None),
    ] {
        assert_eq!(
            canopy::vk::parse_fence_timeout(text).ok(),
            expected,
            "{text}"
        );
    }
}
