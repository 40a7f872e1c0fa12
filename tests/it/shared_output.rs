//! `canopy render`'s output in folders that other processes share or that fail under it: a
//! symbolic link planted at a temporary file's name is never followed, renders of overlapping
//! frames into one folder both succeed with whole frames, a start-up cleanup leaves a live
//! writer's temporary file, an ffmpeg that stops early and a full disk are I/O errors that
//! keep the frames written and leave no temporary file, and file names are checked up front.
//!
//! Every render runs in its own temporary folder (its working folder too).

use crate::common;

use common::files::{TempFolder, names, read_png};
use std::path::Path;
use std::process::{Command, Output, Stdio};

const SIZE: &str = "32x18";

/// `canopy render` of the default scene at a tiny size, working in `folder`.
fn render(folder: &TempFolder, frames: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_canopy"));
    command.current_dir(&folder.0).args([
        "render",
        "--size",
        SIZE,
        "--triangles",
        "2000",
        "--bounces",
        "1",
        "-q",
        "--frames",
        frames,
    ]);
    command
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every `frame_*.png` in `folder` is a whole PNG of [`SIZE`], and no temporary file is left
/// (but those in `planted`). Returns the frame numbers.
fn whole_frames(folder: &Path, planted: &[String]) -> Vec<u32> {
    let mut frames = Vec::new();
    for name in names(folder) {
        if planted.contains(&name) {
            continue;
        }
        assert!(
            !name.contains("partial"),
            "a temporary file was left: {name}"
        );
        let Some(number) = name
            .strip_prefix("frame_")
            .and_then(|n| n.strip_suffix(".png"))
        else {
            continue;
        };
        let path = folder.join(&name);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_file(), "{name} is not a regular file");
        let (w, h, _) = read_png(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((w, h), (32, 18), "{name}");
        frames.push(number.parse().unwrap());
    }
    frames
}

/// Symbolic links planted at every name a frame's temporary file had (`.NAME.PID.partial`,
/// with the render's own PID) and at the random kind's shape, pointing outside the output
/// folder, are never written through: the file outside is untouched, and every frame is a
/// regular file holding a whole PNG.
#[cfg(unix)]
#[test]
fn symbolic_links_planted_at_temporary_names_are_never_followed() {
    let folder = TempFolder::new("planted");
    let out = folder.0.join("out");
    std::fs::create_dir(&out).unwrap();
    let victim = folder.0.join("victim.txt");
    std::fs::write(&victim, b"precious").unwrap();
    let mut child = render(&folder, "0..40")
        .args(["--out", "out"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Planted once the render has started (after its start-up cleanup), for the frames it
    // has yet to write.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut started = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut started).unwrap();
    assert!(started.starts_with("rendering"), "{started}");
    let mut planted = Vec::new();
    for frame in 20..40 {
        for tail in [
            child.id().to_string(),
            "AAAAAA".to_string(),
            "partial".to_string(),
        ] {
            let name = format!(".frame_{frame:04}.png.{tail}.partial");
            std::os::unix::fs::symlink(&victim, out.join(&name)).unwrap();
            planted.push(name);
        }
    }
    // Read to its end, so that the render's summary does not meet a closed pipe.
    std::io::Read::read_to_string(&mut stdout, &mut started).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert_eq!(whole_frames(&out, &planted), (0..40).collect::<Vec<_>>());
}

/// Two renders of overlapping frames into one folder at once (a requeued job beside the one it
/// replaces): both succeed, and every frame is one whole PNG.
#[test]
fn two_renders_of_overlapping_frames_into_one_folder_both_succeed() {
    let folder = TempFolder::new("overlap");
    let children: Vec<_> = ["0..10", "2..12"]
        .into_iter()
        .map(|frames| {
            render(&folder, frames)
                .args(["--out", "out", "--overwrite"])
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
    assert_eq!(
        whole_frames(&folder.0.join("out"), &[]),
        (0..12).collect::<Vec<_>>()
    );
}

/// The start-up cleanup removes a killed render's temporary file and leaves one that a live
/// process holds locked (its writer is still writing).
#[test]
fn the_start_up_cleanup_leaves_a_live_writers_temporary_file() {
    let folder = TempFolder::new("cleanup");
    let out = folder.0.join("out");
    std::fs::create_dir(&out).unwrap();
    let live = out.join(".frame_0001.png.Xy12ab.partial");
    let dead = out.join(".frame_0002.png.Zz98cd.partial");
    let old = out.join(".frame_0003.png.4242.partial");
    let held = std::fs::File::create(&live).unwrap();
    held.lock().unwrap();
    std::fs::write(&dead, b"half a frame").unwrap();
    std::fs::write(&old, b"half a frame").unwrap();
    let output = render(&folder, "0..4")
        .args(["--out", "out"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(live.exists(), "the live writer's file was removed");
    assert!(!dead.exists() && !old.exists(), "{:?}", names(&out));
    drop(held);
    std::fs::remove_file(&live).unwrap();
    assert_eq!(whole_frames(&out, &[]), [0, 1, 2, 3]);
}

/// A folder holding an `ffmpeg` that reads `bytes` of its input (all of it: `None`), says
/// why it fails on stderr and exits 1.
fn failing_ffmpeg(folder: &TempFolder, bytes: Option<usize>) -> String {
    let bin = folder.0.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let read = match bytes {
        Some(n) => format!("head -c {n} >/dev/null"),
        None => String::new(),
    };
    let script = format!(
        "#!/bin/sh\n{read}\necho 'Could not find tag for codec h264 in stream #0' >&2\n\
         echo 'Conversion failed!' >&2\nexit 1\n"
    );
    let ffmpeg = bin.join("ffmpeg");
    std::fs::write(&ffmpeg, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ffmpeg, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = std::env::var("PATH").unwrap_or_default();
    format!("{}:{path}", bin.display())
}

/// An ffmpeg that exits early (at once, or after two frames) is an I/O error (exit 4) that
/// says its last lines, not a silent death by SIGPIPE: the frames already queued are written
/// whole and listed, and no temporary file is left of the video or of a frame.
#[test]
fn an_ffmpeg_that_exits_early_is_an_error_with_its_lines() {
    for (case, bytes) in [("at-once", Some(0)), ("after-two", Some(2 * 32 * 18 * 4))] {
        let folder = TempFolder::new(&format!("ffmpeg-{case}"));
        let path = failing_ffmpeg(&folder, bytes);
        let output = render(&folder, "0..40")
            .args(["--out", "out", "--video", "video.mp4"])
            .env("PATH", path)
            .output()
            .unwrap();
        let text = stderr(&output);
        assert_eq!(
            output.status.code(),
            Some(4),
            "{case}: {:?} {text}",
            output.status
        );
        assert!(
            text.contains("ffmpeg failed") && text.contains("Conversion failed!"),
            "{case}: {text}"
        );
        assert!(text.contains("frames written to"), "{case}: {text}");
        let left = names(&folder.0);
        assert!(
            left.iter()
                .all(|n| !n.contains("partial") && n != "video.mp4"),
            "{case}: {left:?}"
        );
        let frames = whole_frames(&folder.0.join("out"), &[]);
        assert!(frames.len() < 40, "{case}: the render went on");
        if case == "after-two" {
            assert!(frames.len() >= 2, "{case}: {frames:?}");
        }
    }
}

/// A `--stats` file that cannot be written ends the render with an I/O error, and the frames
/// already queued are still written and said.
#[cfg(target_os = "linux")]
#[test]
fn a_stats_write_error_still_finishes_the_frames_and_says_them() {
    let folder = TempFolder::new("stats-full");
    let output = render(&folder, "0..6")
        .args(["--out", "out", "--stats", "/dev/full"])
        .output()
        .unwrap();
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(4), "{text}");
    assert!(text.contains("/dev/full"), "{text}");
    assert!(text.contains("frames written to"), "{text}");
    whole_frames(&folder.0.join("out"), &[]);
}

/// A tmpfs mounted at a folder, unmounted when dropped.
struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A full disk is an I/O error (exit 4) naming the frame, with no temporary file left and
/// every frame file whole. Needs a small tmpfs, so root (skipped with a word otherwise).
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_an_io_error_leaving_only_whole_frames() {
    let folder = TempFolder::new("full-disk");
    let disk = folder.0.join("disk");
    std::fs::create_dir(&disk).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=24k", "tmpfs"])
        .arg(&disk)
        .stderr(Stdio::null())
        .status();
    if !mounted.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mounting a small tmpfs is not permitted here");
        return;
    }
    let _mount = Mount(disk.clone());
    let output = render(&folder, "0..200")
        .args(["--out", "disk/out"])
        .output()
        .unwrap();
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(4), "{text}");
    assert!(
        text.contains("cannot write") && text.contains("frame_"),
        "{text}"
    );
    assert!(text.contains("frames written to"), "{text}");
    let out = disk.join("out");
    for name in names(&out) {
        assert!(
            !name.contains("partial"),
            "a temporary file was left: {name}"
        );
        let (w, h, _) = read_png(&out.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((w, h), (32, 18));
    }
}

/// `--out still.png` writes one frame to that file (not a folder of that name), and asks for
/// a frame number when more frames are asked for; names longer than a file system takes are
/// usage errors before anything renders.
#[test]
fn single_files_and_long_names_are_settled_up_front() {
    let folder = TempFolder::new("single");
    let output = render(&folder, "3")
        .args(["--out", "still.png"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let (w, h, _) = read_png(&folder.0.join("still.png")).unwrap();
    assert_eq!((w, h), (32, 18));

    let many = render(&folder, "0..3")
        .args(["--out", "more.png"])
        .output()
        .unwrap();
    assert_eq!(many.status.code(), Some(2), "{}", stderr(&many));
    assert!(stderr(&many).contains("more_####.png"), "{}", stderr(&many));
    assert!(!folder.0.join("more.png").exists());

    let long = "x".repeat(235);
    for out in [
        format!("{long}_####.png"),
        format!("{long}{long}/f_####.png"),
    ] {
        let output = render(&folder, "0..2")
            .args(["--out", &out])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains("bytes"), "{}", stderr(&output));
        assert!(
            !stderr(&output).contains("rendering")
                && !String::from_utf8_lossy(&output.stdout).contains("rendering"),
            "it rendered first"
        );
    }
    assert_eq!(names(&folder.0), ["still.png"]);
}
