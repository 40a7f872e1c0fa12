//! Whole frames of the renderer (`canopy bench render`, `cargo bench --bench render`): deform
//! (the default scene), rebuild the structure from scratch, camera rays, bounces of reflected
//! and refracted rays, shadow rays and shading, per stage with the rays each trace took; the
//! work of one frame; and the frame's camera rays traced alone, closest and any hit, timed and
//! counted.

use super::Result;
use super::harness::{Timing, count_work, time_runs};
use super::traversal::{NativeTrace, RayBatch, TraversalReport};
use crate::accel::native::{NativeBlasBuilder, NativeTracer};
use crate::accel::{
    BuildParams, RayStructure, StructureKind, StructureSize, submit_until_complete,
};
use crate::geom::ray::Query;
use crate::render::presets::Subject;
use crate::render::{FrameSource, RenderParams, Renderer, traced_rays};
use crate::scene::animated::FrameTime;
use crate::trace::Tracer;
use crate::vk::{Context, Recorder, WorkCounts};

/// How frames are measured.
#[derive(Clone, Debug)]
pub struct FrameConfig {
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// Timed frames after a warm-up; the median is reported.
    pub repeats: u32,
    /// Bounces of reflected and refracted rays.
    pub bounces: u32,
    /// Samples per pixel (each traces the stages of its paths: the stage list repeats).
    pub samples: u32,
    /// Whether diffuse surfaces are lit by the sky ([`RenderParams::sky_light`]).
    pub sky_light: bool,
    /// The builders' parameters.
    pub build: BuildParams,
    /// The animation time the frame shows, in seconds.
    pub time: f32,
    /// Also build the driver's structure over the frame's triangles and trace the camera rays
    /// through it with the driver's ray-tracing pipeline (where the device has one).
    pub native: bool,
}

impl Default for FrameConfig {
    /// 1920x1080, 15 runs, 2 bounces, 1 sample, the builders' defaults, time 1 s, without the driver's
    /// ray tracing.
    fn default() -> Self {
        Self {
            width: 1920,
            height: 1080,
            repeats: 15,
            bounces: 2,
            samples: 1,
            sky_light: false,
            build: BuildParams::default(),
            time: 1.0,
            native: false,
        }
    }
}

/// Rays traced by one stage of a frame.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StageRays {
    /// The stage (`trace: bounce 0`, `trace: shadow 1`, ...).
    pub stage: String,
    /// Rays it traced.
    pub rays: u32,
    /// Its median GPU time, in ms.
    pub ms: f64,
}

/// Frames of one subject through one structure.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FrameReport {
    /// The subject (`default scene` or the mesh file's name).
    pub scene: String,
    /// Triangles rendered (the ground included).
    pub triangles: u32,
    /// The structure rebuilt every frame.
    pub structure: StructureKind,
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// Bounces.
    pub bounces: u32,
    /// Lights.
    pub lights: u32,
    /// GPU time of a whole frame, per stage.
    pub frame: Timing,
    /// The rays of every trace of the frame.
    pub traces: Vec<StageRays>,
    /// Rays that did not fit in the ray lists (not traced).
    pub dropped_rays: u64,
    /// The work of one frame.
    pub work: WorkCounts,
    /// The most device-local bytes alive at once while the structure and renderer were made
    /// and the first frame rendered (the scene's own buffers excluded).
    pub peak_bytes: u64,
    /// The frame's camera rays alone: closest and any hit.
    pub camera_rays: Vec<TraversalReport>,
    /// The driver's structure over the same triangles and the same camera rays through its
    /// ray-tracing pipeline (with [`FrameConfig::native`], where the device has one).
    pub native: Option<NativeFrameReport>,
}

/// The driver's build and ray tracing of a frame's camera rays.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NativeFrameReport {
    /// The bottom-level build over the frame's triangles (`PREFER_FAST_BUILD`).
    pub bottom_level: Timing,
    /// The top-level build over its one instance.
    pub top_level: Timing,
    /// Device bytes of both levels and their scratch.
    pub bytes: u64,
    /// The frame's camera rays, closest and any hit.
    pub camera_rays: Vec<NativeTrace>,
}

impl FrameConfig {
    /// The frame measured: [`Self::time`], the first frame of a sequence of files.
    pub fn frame_time(&self) -> FrameTime {
        FrameTime {
            frame: 0,
            seconds: self.time,
            slot: 0,
        }
    }
}

/// Renders frames of `subject` (labelled `label`) through `structure`, and measures them.
pub fn measure(
    ctx: &Context,
    subject: &Subject,
    label: &str,
    structure: StructureKind,
    config: &FrameConfig,
) -> Result<FrameReport> {
    let (width, height) = (config.width, config.height);
    let scene = &subject.scene;
    let base = ctx.device_memory().live;
    ctx.reset_peak_memory();
    let size = StructureSize {
        triangles: scene.triangle_count,
        vertices: scene.vertex_count,
    };
    let mut accel = structure.create(ctx, &config.build, size, 1)?.into_rays()?;
    let input = scene.input();
    let params = RenderParams {
        bounces: config.bounces,
        samples: config.samples,
        sky_light: config.sky_light,
        ..RenderParams::default()
    };
    let renderer = Renderer::new(ctx, width, height, scene.light_count, params)?;
    let readback = renderer.readback(ctx)?;
    let camera = subject.camera(config.time, width as f32 / height as f32);
    let at = config.frame_time();
    accel.set_view(ctx, &camera.view(width, height))?;
    let shading = subject.shading();
    let frame = |rec: &mut Recorder, accel: &mut dyn RayStructure| {
        subject.record_frame(rec, at)?;
        accel.record_build(rec, &input, 0)?;
        let structure = accel.traversable(&input);
        renderer.record(rec, scene, structure.as_ref(), &camera, &shading, &readback)
    };
    // One untimed frame, rebuilt until a kd-tree's lists fit.
    submit_until_complete(ctx, accel.as_mut(), |rec, accel| frame(rec, accel))?;
    let peak_bytes = ctx.device_memory().peak - base;
    let timing = time_runs(
        ctx,
        config.repeats,
        |_| Ok(()),
        |rec| frame(rec, accel.as_mut()),
    )?;
    let bounces = readback.stats();
    let work = count_work(ctx, |rec| frame(rec, accel.as_mut()))?;
    let traced = traced_rays(&bounces);
    let traces = timing
        .stages
        .iter()
        .filter_map(|stage| {
            let &(_, rays) = traced.iter().find(|(label, _)| *label == stage.name)?;
            Some(StageRays {
                stage: stage.name.clone(),
                rays,
                ms: stage.ms,
            })
        })
        .collect();
    let dropped_rays = bounces
        .iter()
        .map(|b| b.dropped_rays as u64 + b.dropped_shadow_rays as u64)
        .sum();

    let batch = RayBatch::camera(ctx, &camera.view(width, height))?;
    let tracer = Tracer::new(ctx)?;
    let camera_rays = [Query::Closest, Query::Any]
        .into_iter()
        .map(|query| {
            let traced = batch.trace(
                ctx,
                &tracer,
                accel.traversable(&input).as_ref(),
                query,
                config.repeats,
            )?;
            Ok(traced.0)
        })
        .collect::<Result<_>>()?;
    let native = if config.native {
        measure_native(ctx, subject, &batch, config)?
    } else {
        None
    };
    Ok(FrameReport {
        scene: label.into(),
        triangles: scene.triangle_count,
        structure,
        width,
        height,
        bounces: config.bounces,
        lights: scene.light_count,
        frame: timing,
        traces,
        dropped_rays,
        work,
        peak_bytes,
        camera_rays,
        native,
    })
}

/// The driver's structure over the frame's triangles (bottom level, then the top level over
/// it), each build timed, and `camera` traced through it closest and any hit; `None` where the
/// device has no ray-tracing pipeline.
fn measure_native(
    ctx: &Context,
    subject: &Subject,
    camera: &RayBatch,
    config: &FrameConfig,
) -> Result<Option<NativeFrameReport>> {
    let scene = &subject.scene;
    let (n, vertices) = (scene.triangle_count, scene.vertex_count);
    let Some(builder) = NativeBlasBuilder::new(ctx, n, vertices)? else {
        return Ok(None);
    };
    let Some(tracer) = NativeTracer::new(ctx, &builder)? else {
        return Ok(None);
    };
    let build_bottom =
        |rec: &mut Recorder| builder.record(rec, &scene.positions, vertices, &scene.triangles, n);
    ctx.submit_and_wait(|rec| {
        subject.record_frame(rec, config.frame_time())?;
        build_bottom(rec)
    })?;
    let bottom_level = time_runs(ctx, config.repeats, |_| Ok(()), build_bottom)?;
    let top_level = time_runs(
        ctx,
        config.repeats,
        |_| Ok(()),
        |rec| {
            tracer.record_top_level(rec);
            Ok(())
        },
    )?;
    let camera_rays = [Query::Closest, Query::Any]
        .into_iter()
        .filter_map(|query| {
            camera
                .trace_native(ctx, &tracer, query, config.repeats)
                .transpose()
        })
        .collect::<Result<_>>()?;
    Ok(Some(NativeFrameReport {
        bottom_level,
        top_level,
        bytes: builder.bytes() + tracer.bytes(),
        camera_rays,
    }))
}
