//! Whole frames of the renderer (`canopy bench render`, `cargo bench --bench render`): deform
//! (the default scene), rebuild the structure from scratch, camera rays, bounces of reflected
//! and refracted rays, shadow rays and shading, per stage with the rays each trace took; the
//! work of one frame; and the frame's camera rays traced alone, closest and any hit, timed and
//! counted.

use super::Result;
use super::harness::{Timing, count_work, time_runs};
use super::traversal::{RayBatch, TraversalReport};
use crate::accel::{BuildParams, RayStructure, StructureKind, submit_until_complete};
use crate::geom::ray::Query;
use crate::render::presets::{self, Subject};
use crate::render::{RenderParams, Renderer, traced_rays};
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
    /// The builders' parameters.
    pub build: BuildParams,
    /// The animation time the frame shows, in seconds.
    pub time: f32,
}

impl Default for FrameConfig {
    /// 1920x1080, 15 runs, 2 bounces, the builders' defaults, time 1 s.
    fn default() -> Self {
        Self {
            width: 1920,
            height: 1080,
            repeats: 15,
            bounces: 2,
            build: BuildParams::default(),
            time: 1.0,
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
    let size = (scene.triangle_count, scene.vertex_count);
    let mut accel = structure.create(ctx, &config.build, size, 1)?.into_rays()?;
    let input = scene.input();
    let params = RenderParams {
        bounces: config.bounces,
        ..RenderParams::default()
    };
    let renderer = Renderer::new(ctx, width, height, scene.light_count, params)?;
    let readback = renderer.readback(ctx)?;
    let camera = subject.camera(config.time, width as f32 / height as f32);
    accel.set_view(ctx, &camera.view(width, height))?;
    let shading = presets::shading(subject.radius);
    let frame = |rec: &mut Recorder, accel: &mut dyn RayStructure| {
        subject.record_frame(rec, config.time)?;
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
    })
}
