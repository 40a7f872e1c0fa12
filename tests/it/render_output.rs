//! `canopy render`'s frames as a pipeline sees them: a frame's file is whole or absent, the first
//! failed write stops the render with the frame, the path and the operating system's error,
//! an interrupt ends it cleanly with what was written said, and a closed output pipe ends it
//! quietly.

use crate::common;

use common::files::{TempFolder, canopy_in, read_png};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Every frame file in `folder` decodes as a whole PNG of the size rendered; none is left
/// partial. Returns how many there are.
fn assert_whole_frames(folder: &TempFolder, width: u32, height: u32) -> usize {
    let mut frames = 0;
    for name in folder.names() {
        assert!(!name.contains("partial"), "a partial file survived: {name}");
        let path = folder.0.join(&name);
        if path.is_dir() {
            continue;
        }
        let (w, h, _) = read_png(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((w, h), (width, height));
        frames += 1;
    }
    frames
}

/// `canopy render` of a small default scene writing `frames` into `out` (in a test's temporary
/// folder), run in the nearest folder of `out` that exists.
fn render(out: &Path, frames: &str) -> Command {
    let folder = out.ancestors().find(|p| p.is_dir()).unwrap();
    let mut command = canopy_in(folder);
    command.args([
        "render",
        "--size",
        "32x24",
        "--triangles",
        "1000",
        "--frames",
        frames,
    ]);
    command.arg("--out").arg(out);
    command
}

/// Runs `command`, which must succeed (its stderr says why not).
fn succeeds(command: &mut Command) -> Output {
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    output
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_failed_frame_stops_the_render_naming_the_frame_path_and_cause() {
    let folder = TempFolder::new("blocked");
    std::fs::create_dir(folder.0.join("frame_0001.png")).unwrap();
    let output = render(&folder.0, "0..40")
        .arg("--overwrite")
        .output()
        .unwrap();
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(4), "an I/O error: {text}");
    assert!(
        text.contains("frame 1: cannot write") && text.contains("frame_0001.png"),
        "{text}"
    );
    assert!(text.contains("frames written to"), "{text}");
    let whole = assert_whole_frames(&folder, 32, 24);
    assert!(
        folder.0.join("frame_0000.png").is_file(),
        "{:?}",
        folder.names()
    );
    assert!(
        whole < 39,
        "the render went on after the failure: {whole} frames"
    );
}

#[test]
fn an_interrupt_ends_the_render_with_whole_frames_and_a_report() {
    let folder = TempFolder::new("interrupted");
    let child = render(&folder.0, "0..100000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !folder.0.join("frame_0002.png").exists() {
        assert!(started.elapsed() < Duration::from_secs(120), "no frames");
        std::thread::sleep(Duration::from_millis(50));
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(130), "{text}");
    assert!(
        text.contains("frames written to") && text.contains("error: interrupted"),
        "{text}"
    );
    assert!(assert_whole_frames(&folder, 32, 24) >= 3);
}

#[test]
fn without_a_terminal_each_frame_is_a_line_on_stderr_unless_quiet() {
    let folder = TempFolder::new("log-lines");
    let output = render(&folder.0, "0..3").output().unwrap();
    let text = stderr(&output);
    assert!(output.status.success(), "{text}");
    for frame in 0..3 {
        assert!(
            text.contains(&format!("frame {frame} ({}/3): GPU", frame + 1))
                && text.contains(&format!("frame_000{frame}.png")),
            "{text}"
        );
    }
    let quiet = render(&folder.0, "0..3")
        .args(["--quiet", "--overwrite"])
        .output()
        .unwrap();
    assert!(quiet.status.success());
    assert!(
        !stderr(&quiet).contains("frames/s, ETA"),
        "{}",
        stderr(&quiet)
    );
}

#[test]
fn an_output_path_that_is_a_file_says_the_folder_cannot_be_created() {
    let folder = TempFolder::new("out-is-a-file");
    let file = folder.0.join("somefile");
    std::fs::write(&file, "x").unwrap();
    let output = render(&file, "0..1").output().unwrap();
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(4));
    assert!(
        text.contains("output folder") && text.contains("cannot be created"),
        "{text}"
    );
}

#[test]
fn bare_canopy_prints_its_usage() {
    let folder = TempFolder::new("bare");
    let output = canopy_in(&folder.0).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("Usage: canopy"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn sizes_say_what_is_accepted_and_counts_read_as_words() {
    let folder = TempFolder::new("words");
    let too_big = canopy_in(&folder.0)
        .args(["render", "--size", "16385x10"])
        .output()
        .unwrap();
    assert_eq!(too_big.status.code(), Some(2));
    assert!(
        stderr(&too_big).contains("from 1 to 16384"),
        "{}",
        stderr(&too_big)
    );
    let one = render(&folder.0, "0..1").output().unwrap();
    let text = String::from_utf8_lossy(&one.stdout);
    assert!(
        text.contains("rendering 1 frame of") && text.contains("1 frame in"),
        "{text}"
    );
}

/// A reader that closes the pipe early (`canopy render | head -1`) ends the render as it ends
/// other tools, by the closed pipe's signal, not with an internal error.
#[cfg(unix)]
#[test]
fn a_closed_output_pipe_ends_the_render_quietly() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    let folder = TempFolder::new("closed-pipe");
    let mut child = canopy_in(&folder.0)
        .args(["render", "--size", "32x24", "--triangles", "1000"])
        // The reader closes the pipe after the first line; the summary after the last frame
        // then meets the closed pipe.
        .args(["--frames", "0..20", "--no-write"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("rendering"), "{first}");
    let output = child.wait_with_output().unwrap();
    const SIGPIPE: i32 = 13; // on Linux and the BSDs
    assert_eq!(output.status.signal(), Some(SIGPIPE), "{}", stderr(&output));
    assert!(
        !stderr(&output).contains("internal error"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn the_screen_grid_renders_the_lbvh_s_frames() {
    // Camera rays through the screen grid, every other ray through the LBVH of the same
    // frame: closest hits are exact, so the frames are the same, for the default scene and
    // for a mesh.
    let torus = common::test_data("meshes/torus.obj");
    for scene in [None, Some(torus.to_str().unwrap())] {
        let frames: Vec<Vec<u8>> = ["lbvh", "grid"]
            .iter()
            .map(|structure| {
                let out = TempFolder::new(&format!("render-{structure}"));
                let mut command = canopy_in(&out.0);
                command.args(["render", "--size", "45x31", "--frames", "1..3", "-q"]);
                command
                    .args(["--structure", structure])
                    .arg("--out")
                    .arg(&out.0);
                match scene {
                    Some(mesh) => command.args(["--mesh", mesh]),
                    None => command.args(["--triangles", "3000"]),
                };
                succeeds(&mut command);
                assert_eq!(assert_whole_frames(&out, 45, 31), 2);
                out.names()
                    .iter()
                    .flat_map(|name| read_png(&out.0.join(name)).unwrap().2)
                    .collect()
            })
            .collect();
        assert!(
            frames[0] == frames[1],
            "{scene:?}: the grid's frames differ"
        );
    }
}

/// `canopy render` with animated input: a glTF character walks (its frames differ), refined
/// and displaced too; the cloth sequence renders from a pattern; bad requests say what there
/// is.
#[test]
fn animated_meshes_render_from_the_command_line() {
    let data = |relative: &str| common::test_data(relative).display().to_string();
    let cesium = data("gltf/CesiumMan.glb");
    let cloth = format!("{}/frame_%04d.obj", data("sequences/vellum-cloth"));
    let runs: [&[&str]; 3] = [
        &["--mesh", &cesium],
        &[
            "--mesh",
            &cesium,
            "--subdivide",
            "2",
            "--displace",
            "--loop",
        ],
        &[
            "--mesh",
            &cloth,
            "--shading",
            "smooth",
            "--camera-eye",
            "0,2,3",
            "--fov",
            "50",
        ],
    ];
    for args in runs {
        let out = TempFolder::new("animated-render");
        let output = canopy_in(&out.0)
            .args(["render", "--size", "48x36", "--frames", "0..3", "-q"])
            .args(args)
            .arg("--out")
            .arg(&out.0)
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        assert_eq!(assert_whole_frames(&out, 48, 36), 3, "{args:?}");
        let first = read_png(&out.0.join("frame_0000.png")).unwrap().2;
        let last = read_png(&out.0.join("frame_0002.png")).unwrap().2;
        assert!(first != last, "{args:?}: the frames do not move");
    }
    let failures: [(&[&str], &str); 4] = [
        (
            &["--mesh", &cesium, "--animation", "Dance"],
            "1 animation: unnamed (0)",
        ),
        (
            &["--mesh", &cesium, "--camera", "front"],
            "no camera named or numbered 'front'",
        ),
        (
            &["--mesh", &data("meshes/torus.obj"), "--camera", "0"],
            "not a glTF file",
        ),
        (
            &["--mesh", &cesium, "--subdivide", "5"],
            "expected 0..=4 levels",
        ),
    ];
    for (args, message) in failures {
        let out = TempFolder::new("animated-render-error");
        let output = canopy_in(&out.0)
            .args(["render", "--size", "16x12", "--frames", "0..1", "-q"])
            .args(args)
            .arg("--out")
            .arg(&out.0)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?} rendered");
        assert!(
            stderr(&output).contains(message),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(out.names().is_empty(), "{args:?} wrote frames");
    }
}

/// The frames each line of the `--stats` file at `path` reports, in order.
fn stats_frames(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(value["gpu_ms"].as_f64().unwrap() > 0.0, "{line}");
            assert!(value["stages_ms"]["frame"].as_f64().is_some(), "{line}");
            value["frame"].as_u64().unwrap() as u32
        })
        .collect()
}

/// The pixels of every frame file in `folder`, by name.
fn frame_pixels(folder: &TempFolder) -> Vec<(String, Vec<u8>)> {
    folder
        .names()
        .into_iter()
        .filter(|name| name.ends_with(".png"))
        .map(|name| {
            let pixels = read_png(&folder.0.join(&name)).unwrap().2;
            (name, pixels)
        })
        .collect()
}

/// An interrupted render resumed with --skip-existing completes the animation, rendering each
/// missing frame once and none twice, into the same frames a single render makes; existing
/// frames without --skip-existing or --overwrite are an error that renders nothing.
#[test]
fn an_interrupted_render_resumes_with_skip_existing() {
    let whole = TempFolder::new("resume-whole");
    succeeds(render(&whole.0, "0..12").arg("-q"));

    let folder = TempFolder::new("resume");
    let logs = TempFolder::new("resume-stats");
    let stats = logs.0.join("stats.jsonl");
    let child = render(&folder.0, "0..12")
        .args(["--stats", stats.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !folder.0.join("frame_0002.png").exists() {
        assert!(started.elapsed() < Duration::from_secs(120), "no frames");
        std::thread::sleep(Duration::from_millis(20));
    }
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let first = stats_frames(&stats);
    let written = assert_whole_frames(&folder, 32, 24);
    assert!(
        (3..12).contains(&written),
        "{written} frames before the interrupt"
    );

    let refused = render(&folder.0, "0..12").output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--skip-existing"),
        "{}",
        stderr(&refused)
    );

    succeeds(render(&folder.0, "0..12").args([
        "--skip-existing",
        "-q",
        "--stats",
        stats.to_str().unwrap(),
    ]));
    let all = stats_frames(&stats);
    let second = &all[first.len()..];
    assert_eq!(
        second.len() + written,
        12,
        "resumed {second:?} after {written}"
    );
    for frame in second {
        assert!(
            !first.contains(frame),
            "frame {frame} rendered twice ({first:?} then {second:?})"
        );
    }
    assert_eq!(frame_pixels(&folder), frame_pixels(&whole));
}

/// Shards of one animation rendered by separate processes into one folder (as a Slurm array's
/// or an Indexed Job's tasks do) write every frame exactly once, the frames a single render
/// makes; a pattern names the files with the animation's frame numbers.
#[test]
fn shards_render_every_frame_once_into_one_folder() {
    let whole = TempFolder::new("shards-whole");
    succeeds(render(&whole.0, "0..12").arg("-q"));
    for mode in ["interleaved", "block"] {
        let folder = TempFolder::new("shards");
        let logs = TempFolder::new("shards-stats");
        let stats = logs.0.join("stats.jsonl");
        let children: Vec<_> = (0..4)
            .map(|task| {
                render(&folder.0, "0..12")
                    .args(["-q", "--shard", &format!("{task}/4"), "--shard-mode", mode])
                    .args(["--stats", stats.to_str().unwrap()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success(), "{}", stderr(&output));
        }
        let mut frames = stats_frames(&stats);
        frames.sort_unstable();
        assert_eq!(frames, (0..12).collect::<Vec<u32>>(), "{mode}");
        assert_eq!(frame_pixels(&folder), frame_pixels(&whole), "{mode}");
    }
    let named = TempFolder::new("shards-pattern");
    let pattern = named.0.join("shot_###.ppm");
    succeeds(render(&pattern, "3,7..9").args(["-q", "--shard", "0/2"]));
    // Frames 3, 7, 8: shard 0 of 2 takes the first and the third.
    assert_eq!(
        named.names(),
        ["shot_003.ppm", "shot_008.ppm"].map(String::from)
    );
    let ppm = std::fs::read(named.0.join("shot_008.ppm")).unwrap();
    assert!(ppm.starts_with(b"P6\n32 24\n255\n") && ppm.len() == 13 + 32 * 24 * 3);
}

/// `tools/farm/slurm-array.sbatch` submitted for real, as a 4-task array, to the one-node
/// Slurm cluster `tools/farm/slurm-local.sh` starts on this machine (`tools/setup.sh` installs
/// Slurm and munge): every task renders its shard of a 12-frame animation into one folder,
/// every frame exactly once (each task's stats file), the frames a single render makes.
#[test]
fn a_slurm_array_renders_every_frame_once() {
    let root = env!("CARGO_MANIFEST_DIR");
    let started = Command::new(format!("{root}/tools/farm/slurm-local.sh"))
        .current_dir(std::env::temp_dir())
        .output()
        .expect("tools/farm/slurm-local.sh runs");
    assert!(
        started.status.success(),
        "the local Slurm cluster did not start (run tools/setup.sh, as root): {}",
        stderr(&started)
    );
    let mesh = common::test_data("meshes/torus.obj");
    let whole = TempFolder::new("slurm-whole");
    succeeds(
        canopy_in(&whole.0)
            .args([
                "render", "--size", "32x24", "--frames", "0..12", "-q", "--mesh",
            ])
            .arg(&mesh)
            .arg("--out")
            .arg(whole.0.join("shot_####.png")),
    );
    let farm = TempFolder::new("slurm-farm");
    // The script asks for a GPU and 4 cores; this node has neither to give.
    let submitted = Command::new("sbatch")
        .current_dir(&farm.0)
        .args(["--wait", "--array=0-3", "--gres=none", "--cpus-per-task=1"])
        .arg(format!("--output={}/task-%a.log", farm.0.display()))
        .arg(format!("{root}/tools/farm/slurm-array.sbatch"))
        .args(["--size", "32x24", "-q"])
        .env("CANOPY", env!("CARGO_BIN_EXE_canopy"))
        .env("SCENE", &mesh)
        .env("OUT", farm.0.join("shot_####.png"))
        .env("FRAMES", "0..12")
        .output()
        .expect("sbatch runs");
    let logs: String = (0..4)
        .map(|task| {
            std::fs::read_to_string(farm.0.join(format!("task-{task}.log"))).unwrap_or_default()
        })
        .collect();
    assert!(
        submitted.status.success(),
        "the array failed: {}\n{logs}",
        stderr(&submitted)
    );
    let mut frames: Vec<u32> = (0..4)
        .flat_map(|task| stats_frames(&farm.0.join(format!("stats/task-{task}.jsonl"))))
        .collect();
    frames.sort_unstable();
    assert_eq!(frames, (0..12).collect::<Vec<u32>>(), "{logs}");
    assert_eq!(frame_pixels(&farm), frame_pixels(&whole));
}

/// The frames ffprobe counts in a video, and its size and codec.
fn probe(video: &Path) -> (u32, u32, u32, String) {
    let output = Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
        .args([
            "-show_entries",
            "stream=nb_read_frames,width,height,codec_name",
        ])
        .args(["-of", "csv=p=0"])
        .arg(video)
        .output()
        .expect("ffprobe runs (tools/setup.sh installs ffmpeg)");
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let fields: Vec<&str> = text.split(',').collect();
    assert_eq!(fields.len(), 4, "ffprobe: {text}");
    (
        fields[3].parse().unwrap(),
        fields[1].parse().unwrap(),
        fields[2].parse().unwrap(),
        fields[0].to_string(),
    )
}

/// `--video` encodes the frames through ffmpeg (H.264 with an odd size padded even; lossless
/// FFV1 beside PNG frames); without ffmpeg on the PATH it is an error naming the package,
/// before anything renders.
#[test]
fn videos_are_encoded_through_ffmpeg() {
    let folder = TempFolder::new("video");
    let mp4 = folder.0.join("shot.mp4");
    succeeds(
        canopy_in(&folder.0)
            .args([
                "render",
                "--triangles",
                "1000",
                "--size",
                "33x25",
                "--frames",
                "0..5",
                "-q",
            ])
            .arg("--video")
            .arg(&mp4),
    );
    assert_eq!(probe(&mp4), (5, 34, 26, "h264".into()));
    assert_eq!(
        folder.names(),
        ["shot.mp4"],
        "a video alone writes no frames"
    );

    let mkv = folder.0.join("lossless.mkv");
    let frame_folder = TempFolder::new("video-frames");
    let frames = &frame_folder.0;
    succeeds(
        render(frames, "0..3")
            .args(["-q", "--codec", "ffv1", "--video"])
            .arg(&mkv),
    );
    assert_eq!(probe(&mkv), (3, 32, 24, "ffv1".into()));
    assert_eq!(assert_whole_frames(&frame_folder, 32, 24), 3);
    // The lossless video's first frame is the first PNG's pixels.
    let decoded = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(&mkv)
        .args(["-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgba", "-"])
        .output()
        .unwrap();
    let png = read_png(&frames.join("frame_0000.png")).unwrap().2;
    assert!(decoded.stdout == png, "the FFV1 frame differs from the PNG");

    let missing = canopy_in(&folder.0)
        .args([
            "render",
            "--triangles",
            "1000",
            "--size",
            "32x24",
            "--frames",
            "0..2",
        ])
        .arg("--video")
        .arg(folder.0.join("none.mp4"))
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
    assert!(
        stderr(&missing).contains("apt install ffmpeg"),
        "{}",
        stderr(&missing)
    );
    assert!(!folder.0.join("none.mp4").exists());
}

/// OpenEXR frames read back: the linear radiance resolves to the PNG of the same frame, the
/// AOV channels carry the names compositors read and plausible values, and the header the
/// frame's camera and time.
#[test]
fn exr_frames_hold_linear_radiance_aovs_and_the_camera() {
    use exr::prelude::*;
    let folder = TempFolder::new("exr");
    let exr_pattern = folder.0.join("shot_####.exr");
    succeeds(render(&exr_pattern, "2").args([
        "-q",
        "--aovs",
        "depth,normal,albedo,position,object_id",
    ]));
    let png_folder = TempFolder::new("exr-png");
    succeeds(render(&png_folder.0, "2").arg("-q"));
    let png = read_png(&png_folder.0.join("frame_0002.png")).unwrap().2;

    let image = read()
        .no_deep_data()
        .largest_resolution_level()
        .all_channels()
        .all_layers()
        .all_attributes()
        .from_file(folder.0.join("shot_0002.exr"))
        .unwrap();
    let layer = &image.layer_data[0];
    assert_eq!(layer.size, Vec2(32, 24));
    let names: Vec<String> = layer
        .channel_data
        .list
        .iter()
        .map(|c| c.name.to_string())
        .collect();
    let expected = [
        "A",
        "B",
        "G",
        "N.X",
        "N.Y",
        "N.Z",
        "P.X",
        "P.Y",
        "P.Z",
        "R",
        "Z",
        "albedo.B",
        "albedo.G",
        "albedo.R",
        "object_id",
    ];
    assert_eq!(names, expected);
    let channel = |name: &str| -> Vec<f32> {
        let c = layer
            .channel_data
            .list
            .iter()
            .find(|c| c.name == *name)
            .unwrap();
        c.sample_data.values_as_f32().collect()
    };
    let (r, g, b, a, z) = (
        channel("R"),
        channel("G"),
        channel("B"),
        channel("A"),
        channel("Z"),
    );
    let (nx, ny, nz) = (channel("N.X"), channel("N.Y"), channel("N.Z"));
    let srgb =
        |c: f32| (canopy::render::channels::srgb_encode(c.clamp(0.0, 1.0)) * 255.0).round() as i32;
    let mut covered = 0;
    for p in 0..32 * 24 {
        for (c, linear) in [r[p], g[p], b[p]].into_iter().enumerate() {
            assert!(
                (srgb(linear) - png[4 * p + c] as i32).abs() <= 1,
                "pixel {p}"
            );
        }
        if a[p] == 1.0 {
            covered += 1;
            assert!(z[p].is_finite() && z[p] > 0.0, "pixel {p}: depth {}", z[p]);
            let length = (nx[p] * nx[p] + ny[p] * ny[p] + nz[p] * nz[p]).sqrt();
            assert!(
                (length - 1.0).abs() < 1e-3,
                "pixel {p}: normal of length {length}"
            );
        } else {
            assert_eq!((a[p], z[p]), (0.0, f32::INFINITY), "pixel {p}");
        }
    }
    assert!(covered > 100, "only {covered} pixels hit the scene");
    let attribute = |name: &str| match layer.attributes.other.get(&Text::from(name)) {
        Some(AttributeValue::Text(text)) => text.to_string(),
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(attribute("canopy:frame"), "2");
    assert_eq!(attribute("canopy:time"), (2.0f32 / 24.0).to_string());
    let eye: Vec<f32> = attribute("canopy:camera_position")
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(eye.len(), 3);

    // Half floats on request; AOV options refused for other formats.
    succeeds(render(&folder.0.join("half_#.exr"), "0").args(["-q", "--half"]));
    let red = exr_channel(&folder.0.join("half_0.exr"), "R");
    assert!(matches!(red, FlatSamples::F16(_)));
    let refused = render(&folder.0, "0")
        .args(["--aovs", "depth"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
}

/// The samples of the channel `name` of the OpenEXR file at `path`.
fn exr_channel(path: &Path, name: &str) -> exr::prelude::FlatSamples {
    use exr::prelude::*;
    let image = read()
        .no_deep_data()
        .largest_resolution_level()
        .all_channels()
        .first_valid_layer()
        .all_attributes()
        .from_file(path)
        .unwrap();
    let mut channels = image.layer_data.channel_data.list.into_iter();
    channels.find(|c| c.name == *name).unwrap().sample_data
}

/// A glTF file's `instance_id` channel holds its nodes' indices and the ground's id, and the
/// `--stats` lines name every id (the nodes by their names, the ground as `ground`), with and
/// without Loop subdivision.
#[test]
fn instance_ids_are_named_on_the_stats_lines() {
    use exr::prelude::*;
    let folder = TempFolder::new("instances");
    let model = folder.0.join("two.glb");
    std::fs::write(&model, common::files::two_squares_glb()).unwrap();
    for levels in ["0", "1"] {
        let stats = folder.0.join(format!("stats-{levels}.jsonl"));
        let out = folder.0.join(format!("levels-{levels}-#.exr"));
        succeeds(
            canopy_in(&folder.0)
                .args(["render", "--size", "32x24", "--frames", "0", "--out"])
                .arg(&out)
                .args(["-q", "--aovs", "instance_id", "--subdivide", levels])
                .args(["--camera-eye", "0,0.1,3", "--camera-target", "0,-0.1,0"])
                .arg("--mesh")
                .arg(&model)
                .arg("--stats")
                .arg(&stats),
        );
        let channel = exr_channel(
            &folder.0.join(format!("levels-{levels}-0.exr")),
            "instance_id",
        );
        let FlatSamples::U32(ids) = &channel else {
            panic!("instance_id as {channel:?}");
        };
        let line = std::fs::read_to_string(&stats).unwrap();
        let record: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        let names = record["instances"].as_array().unwrap();
        let name = |id: u32| match id {
            u32::MAX => "the sky".to_string(),
            id => names[id as usize].as_str().unwrap().to_string(),
        };
        let mut seen: Vec<String> = ids.iter().map(|&id| name(id)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(
            seen,
            ["ground", "left", "right", "the sky"],
            "{levels} levels"
        );
        assert_eq!(names[0], "root");
    }
}

/// 16-bit PNG frames encode the same image at more precision, and transparent ones carry the
/// camera rays' coverage as alpha (0 exactly where they see the sky).
#[test]
fn png_frames_at_16_bits_and_with_coverage_alpha() {
    let folder = TempFolder::new("png16");
    succeeds(render(&folder.0.join("eight_#.png"), "1").arg("-q"));
    succeeds(render(&folder.0.join("sixteen_#.png"), "1").args([
        "-q",
        "--depth",
        "16",
        "--transparent",
    ]));
    succeeds(render(&folder.0.join("clear_#.png"), "1").args(["-q", "--transparent"]));
    let eight = read_png(&folder.0.join("eight_1.png")).unwrap().2;
    let (w, h, wide) = read_png(&folder.0.join("sixteen_1.png")).unwrap();
    assert_eq!(
        (w, h, wide.len()),
        (32, 24, 32 * 24 * 8),
        "16 bits per channel"
    );
    let clear = read_png(&folder.0.join("clear_1.png")).unwrap().2;
    let (mut sky, mut hit) = (0, 0);
    for p in 0..32 * 24 {
        let channel = |c: usize| u16::from_be_bytes([wide[8 * p + 2 * c], wide[8 * p + 2 * c + 1]]);
        for c in 0..3 {
            let narrowed = (channel(c) as f32 / 257.0).round() as i32;
            assert!((narrowed - eight[4 * p + c] as i32).abs() <= 1, "pixel {p}");
            assert_eq!(clear[4 * p + c], eight[4 * p + c], "pixel {p}: colour");
        }
        assert_eq!(eight[4 * p + 3], 255, "an opaque frame by default");
        match (channel(3), clear[4 * p + 3]) {
            (0, 0) => sky += 1,
            (65535, 255) => hit += 1,
            other => panic!("pixel {p}: alpha {other:?}"),
        }
    }
    assert!(sky > 0 && hit > 0, "{sky} sky pixels, {hit} hits");
    let refused = render(&folder.0.join("x_#.ppm"), "1")
        .args(["--depth", "16"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
}

/// `--devices` with one device named twice renders every frame once, on both, into the same
/// frames (and the same video, in order) as one device; a device that does not exist is a
/// device error.
#[test]
fn two_devices_render_the_frames_of_one() {
    let one = TempFolder::new("devices-one");
    succeeds(render(&one.0, "0..10").arg("-q"));
    let two = TempFolder::new("devices-two");
    let logs = TempFolder::new("devices-stats");
    let stats = logs.0.join("stats.jsonl");
    let video = logs.0.join("two.mkv");
    let output = succeeds(
        render(&two.0, "0..10")
            .args(["-q", "--devices", "0,0", "--codec", "ffv1", "--stats"])
            .arg(&stats)
            .arg("--video")
            .arg(&video),
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("on 2 devices"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let mut frames = stats_frames(&stats);
    frames.sort_unstable();
    assert_eq!(frames, (0..10).collect::<Vec<u32>>());
    assert_eq!(frame_pixels(&two), frame_pixels(&one));
    // The video holds the frames in order: its 7th frame is frame 6.
    let decoded = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(&video)
        .args([
            "-vf",
            "select=eq(n\\,6)",
            "-frames:v",
            "1",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgba",
            "-",
        ])
        .output()
        .unwrap();
    let png = read_png(&one.0.join("frame_0006.png")).unwrap().2;
    assert!(decoded.stdout == png, "the video's frames are out of order");
    let missing = render(&two.0, "0..2")
        .args(["--devices", "0,99", "--overwrite"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(3), "{}", stderr(&missing));
    assert!(
        stderr(&missing).contains("no device matches '99'"),
        "{}",
        stderr(&missing)
    );
}
