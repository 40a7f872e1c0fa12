//! The render job in process (`canopy::job`), without the binary: frame plans over shards in
//! both modes, the three resume modes, the clean-up of what killed runs left, the stop flag
//! shared across threads, the stats log's lines, and whole jobs over a source defined here on
//! one and two devices, stopped and resumed.

use crate::common::files::TempFolder;
use canopy::export::{
    ImageFormat, OutputNaming, Shard, ShardMode, WriterOptions, WrittenFrame, output_channels,
    parse_frames,
};
use canopy::job::{
    FramePlan, FrameRecord, ImageOutput, JobError, JobEvent, JobOutputs, JobReport, JobSetup,
    RenderJob, ResumeMode, StatsLog, StopFlag,
};
use canopy::render::presets::Subject;
use canopy::render::{
    BounceStats, Camera, FrameSource, Light, Material, RenderParams, SceneGpu, ShadingParams,
    Surfaces,
};
use canopy::scene::animated::FrameTime;
use canopy::scene::{Mesh, shapes};
use canopy::sequence::{DEFAULT_FRAMES_IN_FLIGHT, FrameCamera, SequenceConfig};
use canopy::vk::{Context, ContextOptions, Recorder, Validation};
use glam::Vec3;
use std::path::Path;

fn plan(
    frames: &str,
    shard: Shard,
    naming: Option<&OutputNaming>,
    resume: ResumeMode,
) -> Result<Vec<u32>, JobError> {
    let frames = parse_frames(frames).unwrap();
    FramePlan::new(&frames, shard, naming, resume).map(|plan| plan.iter().collect())
}

/// Part `index` of `count`, dealt as `mode` deals.
fn part(index: u32, count: u32, mode: ShardMode) -> Shard {
    Shard { index, count, mode }
}

const WHOLE: Shard = Shard::WHOLE;

#[test]
fn shards_deal_every_frame_once_in_both_modes() {
    for mode in [ShardMode::Interleaved, ShardMode::Block] {
        let mut all: Vec<u32> = (0..3)
            .flat_map(|i| plan("0..20:2", part(i, 3, mode), None, ResumeMode::Error).unwrap())
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..20).step_by(2).collect::<Vec<_>>(), "{mode:?}");
    }
    let block = plan(
        "0..12",
        part(1, 4, ShardMode::Block),
        None,
        ResumeMode::Error,
    )
    .unwrap();
    assert_eq!(block, vec![3, 4, 5]);
    let interleaved = plan(
        "0..12",
        part(1, 4, ShardMode::Interleaved),
        None,
        ResumeMode::Error,
    );
    assert_eq!(interleaved.unwrap(), vec![1, 5, 9]);
}

#[test]
fn frames_written_already_are_named_skipped_or_overwritten() {
    let folder = TempFolder::new("job-resume");
    let out = folder.0.join("out");
    let naming = OutputNaming::parse(&out, None).unwrap();
    // No folder yet: the plan makes it.
    assert_eq!(
        plan("0..6", WHOLE, Some(&naming), ResumeMode::Error)
            .unwrap()
            .len(),
        6
    );
    assert!(out.is_dir());
    for frame in [1, 4] {
        std::fs::write(naming.path(frame), b"a frame").unwrap();
    }
    // A frame outside the range is not in the way.
    std::fs::write(naming.path(40), b"a frame").unwrap();
    match plan("0..6", WHOLE, Some(&naming), ResumeMode::Error) {
        Err(JobError::Existing { frames, first }) => {
            assert_eq!(frames, vec![1, 4]);
            assert_eq!(first, naming.path(1));
        }
        other => panic!("expected the frames found, got {other:?}"),
    }
    let skipped = plan("0..6", WHOLE, Some(&naming), ResumeMode::SkipExisting).unwrap();
    assert_eq!(skipped, vec![0, 2, 3, 5]);
    let frames = parse_frames("0..6").unwrap();
    let resumed = FramePlan::new(&frames, WHOLE, Some(&naming), ResumeMode::SkipExisting).unwrap();
    assert_eq!((resumed.len(), resumed.skipped()), (4, &[1, 4][..]));
    let overwritten = plan("0..6", WHOLE, Some(&naming), ResumeMode::Overwrite).unwrap();
    assert_eq!(overwritten, (0..6).collect::<Vec<_>>());
    // Only this shard's frames count: frame 4 belongs to the other shard of two.
    let odd = plan(
        "0..6",
        part(1, 2, ShardMode::Interleaved),
        Some(&naming),
        ResumeMode::SkipExisting,
    );
    assert_eq!(odd.unwrap(), vec![3, 5]);
}

#[test]
fn plans_remove_what_killed_runs_left_for_their_frames_only() {
    let folder = TempFolder::new("job-partials");
    let naming = OutputNaming::parse(&folder.0, None).unwrap();
    let partial = |frame: u32| {
        let name = naming.path(frame);
        let name = name.file_name().unwrap().to_str().unwrap();
        folder.0.join(format!(".{name}.x7Qa9z.partial"))
    };
    for frame in [2, 9] {
        std::fs::write(partial(frame), b"half a frame").unwrap();
    }
    let other = folder.0.join("notes.txt");
    std::fs::write(&other, b"kept").unwrap();
    plan("0..5", WHOLE, Some(&naming), ResumeMode::Error).unwrap();
    assert!(
        !partial(2).exists(),
        "frame 2's abandoned temporary file is removed"
    );
    assert!(
        partial(9).exists(),
        "frame 9 is not this plan's: its file is left"
    );
    assert!(other.exists());
}

#[test]
fn an_output_folder_in_the_way_is_an_output_error() {
    let folder = TempFolder::new("job-in-the-way");
    let file = folder.0.join("out");
    std::fs::write(&file, b"a file").unwrap();
    let naming = OutputNaming::parse(&file, None).unwrap();
    match plan("0..3", WHOLE, Some(&naming), ResumeMode::Error) {
        Err(JobError::Output(message)) => assert!(message.contains("a file of that name")),
        other => panic!("expected an output error, got {other:?}"),
    }
}

#[test]
fn a_stop_flag_is_seen_by_every_clone_on_every_thread() {
    let flag = StopFlag::new();
    let seen = flag.clone();
    assert!(!seen.is_stopped());
    std::thread::spawn(move || flag.stop()).join().unwrap();
    assert!(seen.is_stopped());
}

#[test]
fn the_stats_log_appends_one_line_per_frame() {
    let folder = TempFolder::new("job-stats");
    let path = folder.0.join("stats.jsonl");
    let record = |frame| FrameRecord {
        frame,
        stages: vec![
            ("frame".into(), 3.5),
            ("trace".into(), 1.0),
            ("trace".into(), 0.5),
        ],
        bounces: vec![BounceStats {
            rays: 100,
            shadow_rays: 40,
            dropped_rays: 2,
            dropped_shadow_rays: 1,
        }],
        device_memory: 1 << 20,
        camera: FrameCamera {
            camera: Camera {
                position: Vec3::new(1.0, 2.0, 5.0),
                target: Vec3::new(0.0, 0.5, 0.0),
                up: Vec3::Y,
                fov_y_degrees: 40.0,
            },
            width: 320,
            height: 180,
        },
        in_flight: 3,
        readback_bytes: 320 * 180 * 4,
    };
    assert_eq!(record(0).gpu_ms(), 3.5);
    assert_eq!(record(0).dropped_rays(), 3);
    // Two logs on one file, as two shards would have.
    let mut first = StatsLog::append(&path).unwrap();
    let mut second = StatsLog::append(&path).unwrap();
    let written = WrittenFrame {
        frame: 7,
        bytes: 4096,
        encode_s: 0.002,
    };
    let file = std::path::Path::new("out/frame_0007.png");
    first
        .write(&record(7), 0.25, Some(file), Some(&written))
        .unwrap();
    second.write(&record(8), 0.5, None, None).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["frame"], 7);
    assert_eq!(lines[0]["gpu_ms"], 3.5);
    assert_eq!(
        lines[0]["stages_ms"]["trace"], 1.5,
        "a stage's times are summed"
    );
    assert_eq!(lines[0]["bounces"][0]["dropped_rays"], 2);
    assert_eq!(lines[0]["file"], "out/frame_0007.png");
    assert_eq!(lines[0]["in_flight"], 3);
    assert_eq!(lines[0]["readback_bytes"], 320 * 180 * 4);
    // The line's camera projects a point onto the pixel whose camera ray passes through it.
    let camera = &lines[0]["camera"];
    assert_eq!(
        (camera["width"].clone(), camera["height"].clone()),
        (320.into(), 180.into())
    );
    let matrix =
        |name: &str| -> Vec<Vec<f32>> { serde_json::from_value(camera[name].clone()).unwrap() };
    let (k, world_to_camera) = (matrix("K"), matrix("world_to_camera"));
    let frame = record(7).camera;
    for (px, py) in [(0, 0), (37, 21), (319, 179), (160, 90)] {
        let ray = frame.camera.primary_ray(px, py, 320, 180);
        let p = Vec3::from(ray.origin) + 3.0 * Vec3::from(ray.direction);
        let c: Vec<f32> = (0..3)
            .map(|r| {
                (0..3).map(|i| world_to_camera[r][i] * p[i]).sum::<f32>() + world_to_camera[r][3]
            })
            .collect();
        let u = k[0][0] * c[0] / c[2] + k[0][2];
        let v = k[1][1] * c[1] / c[2] + k[1][2];
        assert!(
            (u - (px as f32 + 0.5)).abs() < 1e-3 && (v - (py as f32 + 0.5)).abs() < 1e-3,
            "pixel ({px}, {py}) projects to ({u}, {v})"
        );
    }
    assert_eq!(lines[0]["bytes"], 4096);
    assert_eq!(lines[0]["encode_ms"], 2.0);
    assert_eq!(lines[1]["frame"], 8);
    assert!(lines[1]["file"].is_null() && lines[1]["bytes"].is_null());
}

/// The options of a validated context on the default device (lavapipe in CI).
fn device() -> ContextOptions {
    let validation = match std::env::var("CANOPY_VALIDATION").as_deref() {
        Ok("off") => Validation::Off,
        _ => Validation::Required,
    };
    ContextOptions {
        device: None,
        validation,
        max_workgroup_count: None,
    }
}

/// The default scene at its smallest.
fn default_scene(ctx: &Context) -> Result<Subject, JobError> {
    Ok(Subject::default_scene(ctx, 1000)?)
}

/// A job of `frames` over the frame source `source` makes, at 48x32, on `devices` devices,
/// writing PNG frames into `out` with `threads` encoders; `stop_after` frames, the stop flag
/// is set. Every device's context must end without validation errors.
fn run_job<S: FrameSource>(
    source: &(dyn Fn(&Context) -> Result<S, JobError> + Sync),
    frames: &FramePlan,
    devices: usize,
    (out, threads): (&Path, usize),
    stats: Option<&Path>,
    stop_after: Option<u64>,
) -> JobReport<JobError> {
    let devices = vec![device(); devices];
    let naming = OutputNaming::parse(out, None).unwrap();
    let options = WriterOptions {
        threads,
        ..WriterOptions::default()
    };
    let channels = output_channels(ImageFormat::Png, options.png, &options.exr);
    let stop = StopFlag::new();
    let job = RenderJob {
        frames,
        devices: &devices,
        setup: JobSetup {
            context: &|options| Ok(Context::new(options)?),
            source,
            config: &|_| {
                Ok(SequenceConfig {
                    width: 48,
                    height: 32,
                    channels: channels.clone(),
                    ..SequenceConfig::default()
                })
            },
            attributes: &|_, _| Vec::new(),
            finished: &|ctx, _| Ok(ctx.check_validation()?),
        },
        outputs: JobOutputs {
            images: Some(ImageOutput { naming, options }),
            video: None,
            stats: stats.map(|path| StatsLog::append(path).unwrap()),
        },
    };
    let mut started = 0;
    let report = job.run(&stop, |event| match event {
        JobEvent::Started { devices: names, .. } => started = names.len(),
        JobEvent::Frame {
            done,
            written,
            backlog,
            ..
        } => {
            // Every frame handed over is written or still with the encoders.
            assert_eq!(written + backlog, done as usize);
            if stop_after.is_some_and(|n| done >= n) {
                stop.stop();
            }
        }
    });
    assert_eq!(started, devices.len(), "every device said it was ready");
    report
}

/// A job in process, on two devices at once (the same device twice), writes every frame of
/// its plan once, with a stats line each; its PNG files are byte for byte those of one
/// encoder thread on one device. Each device keeps its frames in flight, and reads back per
/// frame the PNG's pixels, 8-bit RGBA, with the bounce counters beside them.
#[test]
fn a_job_on_two_devices_writes_every_frame_like_one_device() {
    let folder = TempFolder::new("job-two-devices");
    let (two, one) = (folder.0.join("two"), folder.0.join("one"));
    let frames = parse_frames("0..6").unwrap();
    let stats = folder.0.join("stats.jsonl");
    let mut reports = Vec::new();
    for (out, devices, threads, stats) in [(&two, 2, 4, Some(stats.as_path())), (&one, 1, 1, None)]
    {
        let naming = OutputNaming::parse(out, None).unwrap();
        let plan = FramePlan::new(&frames, WHOLE, Some(&naming), ResumeMode::Error).unwrap();
        let report = run_job(&default_scene, &plan, devices, (out, threads), stats, None);
        report.outcome.as_ref().unwrap();
        assert!(report.write_failure.is_none());
        assert_eq!(report.written, (0..6).collect::<Vec<_>>());
        assert_eq!(report.gpu_ms.len(), 6);
        assert_eq!(
            report.frames_in_flight, DEFAULT_FRAMES_IN_FLIGHT,
            "{devices} devices"
        );
        // One 48-byte counter of the camera rays and one of each bounce.
        let counters = 48 * (RenderParams::default().bounces as u64 + 1);
        assert_eq!(report.readback_bytes, 48 * 32 * 4 + counters);
        reports.push(report);
    }
    for frame in 0..6 {
        let name = format!("frame_{frame:04}.png");
        let (a, b) = (
            std::fs::read(two.join(&name)),
            std::fs::read(one.join(&name)),
        );
        assert_eq!(a.unwrap(), b.unwrap(), "{name} differs between the runs");
    }
    // Each line follows its file: its size, and the time its encoder took.
    let mut logged: Vec<u64> = std::fs::read_to_string(&stats)
        .unwrap()
        .lines()
        .map(|line| {
            let line = serde_json::from_str::<serde_json::Value>(line).unwrap();
            let file = std::fs::metadata(line["file"].as_str().unwrap()).unwrap();
            assert_eq!(line["bytes"].as_u64(), Some(file.len()), "{line}");
            assert!(line["encode_ms"].as_f64().unwrap() > 0.0, "{line}");
            line["frame"].as_u64().unwrap()
        })
        .collect();
    logged.sort_unstable();
    assert_eq!(logged, (0..6).collect::<Vec<_>>());
}

/// A stop flag set after two frames ends the job with the frames finished written whole and
/// no temporary file left; the folder then resumes with exactly the missing frames.
#[test]
fn a_stopped_job_leaves_whole_frames_and_resumes() {
    let folder = TempFolder::new("job-stop");
    let out = folder.0.join("out");
    let frames = parse_frames("0..12").unwrap();
    let naming = OutputNaming::parse(&out, None).unwrap();
    let plan = FramePlan::new(&frames, WHOLE, Some(&naming), ResumeMode::Error).unwrap();
    let report = run_job(&default_scene, &plan, 1, (&out, 2), None, Some(2));
    report.outcome.as_ref().unwrap();
    let written = report.written.clone();
    assert!(written.len() >= 2 && written.len() < 12, "{written:?}");
    let mut names = crate::common::files::names(&out);
    names.sort();
    let expected: Vec<String> = written
        .iter()
        .map(|f| format!("frame_{f:04}.png"))
        .collect();
    assert_eq!(names, expected, "only whole frames, no temporary files");
    let resumed = FramePlan::new(&frames, WHOLE, Some(&naming), ResumeMode::SkipExisting).unwrap();
    assert_eq!(resumed.skipped(), &written[..]);
    let rest = run_job(&default_scene, &resumed, 1, (&out, 2), None, None);
    rest.outcome.as_ref().unwrap();
    assert_eq!(crate::common::files::names(&out).len(), 12);
}

/// The plan of `frames`, written into `out` (made now).
fn plan_into(frames: &str, out: &Path) -> FramePlan {
    let naming = OutputNaming::parse(out, None).unwrap();
    let frames = parse_frames(frames).unwrap();
    FramePlan::new(&frames, WHOLE, Some(&naming), ResumeMode::Error).unwrap()
}

/// An application's own frame source: a cube sliding along x over a ground square, its
/// vertices written into the frame's commands each frame, under one sun, seen through a
/// camera of its own that drifts with time. `held`: the cube stays where it is in that frame,
/// uploaded once when the source is made.
struct SlidingCube {
    scene: SceneGpu,
    held: Option<u32>,
}

impl SlidingCube {
    fn new(ctx: &Context, held: Option<u32>) -> Result<Self, JobError> {
        let mut mesh = shapes::cube([0.0; 3], 1.0);
        mesh.append(&shapes::ground_square([0.0; 3], 4.0));
        // No normals: each triangle is shaded by its own, wherever it is.
        let mesh = Mesh {
            positions: Self::positions(held.unwrap_or(0)),
            normals: vec![[0.0; 3]; mesh.positions.len()],
            ..mesh
        };
        let materials = [
            Material::diffuse([0.8, 0.3, 0.2]),
            Material::diffuse([0.7, 0.7, 0.7]),
        ];
        let triangle_materials: Vec<u32> = (0..mesh.triangle_count())
            .map(|t| u32::from(t >= 12))
            .collect();
        let sun = Light::Directional {
            direction: Vec3::new(-0.3, -1.0, -0.5),
            intensity: Vec3::splat(0.9),
        };
        let surfaces = Surfaces::untextured(&triangle_materials, &materials);
        let scene = SceneGpu::from_mesh(ctx, &mesh, &surfaces, &[sun])?;
        Ok(Self { scene, held })
    }

    /// The cube's 8 vertices half a unit further along x each frame, then the ground's 4.
    fn positions(frame: u32) -> Vec<[f32; 3]> {
        let x = -1.5 + 0.5 * frame as f32;
        let mut mesh = shapes::cube([x, 0.0, -0.5], 1.0);
        mesh.append(&shapes::ground_square([0.0; 3], 4.0));
        mesh.positions
    }
}

impl FrameSource for SlidingCube {
    fn scene(&self) -> &SceneGpu {
        &self.scene
    }

    fn record_frame(&self, rec: &mut Recorder, at: FrameTime) -> canopy::vk::Result<()> {
        if self.held.is_none() {
            rec.update_buffer(&self.scene.positions, 0, &Self::positions(at.frame));
            rec.barrier_transfer_to_compute();
        }
        Ok(())
    }

    fn camera(&self, time: f32, _aspect: f32) -> Camera {
        Camera {
            position: Vec3::new(time, 3.0, 6.0),
            target: Vec3::new(0.0, 0.5, 0.0),
            up: Vec3::Y,
            fov_y_degrees: 45.0,
        }
    }

    fn shading(&self) -> ShadingParams {
        ShadingParams {
            ambient: 0.1,
            surface_offset: 1e-4,
        }
    }
}

/// A job over a source defined here, on two devices, renders each frame with the source's
/// vertices of that frame and its camera: each file is byte for byte that of a job over the
/// same source held at that frame from the start, and the frames differ from each other.
#[test]
fn a_job_renders_an_applications_own_source() {
    let folder = TempFolder::new("job-own-source");
    let read = |out: &Path, frame: u32| std::fs::read(out.join(format!("frame_{frame:04}.png")));
    let sliding = folder.0.join("sliding");
    let report = run_job(
        &|ctx| SlidingCube::new(ctx, None),
        &plan_into("0..4", &sliding),
        2,
        (&sliding, 2),
        None,
        None,
    );
    report.outcome.as_ref().unwrap();
    assert_eq!(report.written, [0, 1, 2, 3]);
    let images: Vec<Vec<u8>> = (0..4).map(|f| read(&sliding, f).unwrap()).collect();
    for (a, b) in [(0, 1), (1, 2), (2, 3), (0, 3)] {
        assert_ne!(
            images[a], images[b],
            "frames {a} and {b} are the same image"
        );
    }
    for frame in [1, 3] {
        let held = folder.0.join(format!("held{frame}"));
        let plan = plan_into(&frame.to_string(), &held);
        let source = |ctx: &Context| SlidingCube::new(ctx, Some(frame));
        let report = run_job(&source, &plan, 1, (&held, 1), None, None);
        report.outcome.as_ref().unwrap();
        assert!(
            read(&held, frame).unwrap() == images[frame as usize],
            "frame {frame} differs from the cube held there"
        );
    }
}
