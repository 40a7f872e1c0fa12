//! Frame sequences: the frames of a [`FrameSource`] (canopy's
//! [`Subject`](crate::render::presets::Subject): the default scene, a mesh file, a glTF
//! animation, a sequence of files; or an application's own) rendered one after another with
//! the acceleration structure rebuilt from scratch for each, several frames in flight
//! ([`SequenceConfig::frames_in_flight`], [`DEFAULT_FRAMES_IN_FLIGHT`] by default), each
//! finished frame handed to a sink (a PNG writer, a video encoder, an application's own
//! consumer). `canopy render` and `canopy bench render` are thin callers of it.
//!
//! While the CPU waits for the oldest frame and hands it on, the GPU renders the frames
//! submitted after it: every frame in flight has its own slot (timestamps, image readback,
//! the structure's build status), and the slots are used in turn, a ring. A kd-tree whose
//! lists overflowed during a frame's build grows them when that frame finishes
//! ([`crate::accel::Structure::grow_if_overflowed`]); the frame is then rendered again, and
//! so are the frames in flight behind it, whose builds ran with the old lists. No frame
//! reaches the sink with an incomplete tree.

use crate::accel::bvh::instances::PlacedMeshes;
use crate::accel::bvh::lbvh::BvhLayout;
use crate::accel::{BuildParams, RayStructure, StructureKind, StructureSize};
use crate::render::photons::PhotonParams;
use crate::render::{Camera, FrameSource, ImageReadback, RenderParams, Renderer, ShadingParams};
use crate::scene::animated::FrameTime;
use crate::vk::{Context, Error, Profiler, Submission};
use glam::Vec3;
use std::collections::VecDeque;

/// Frames in flight by default: the oldest handed to the sink while the GPU renders the two
/// after it.
pub const DEFAULT_FRAMES_IN_FLIGHT: usize = 3;

/// Host-visible bytes frames in flight are read back into, by default: 256 MiB, three 8-bit
/// 4K frames or half-float 1080p frames with their AOVs, but two frames of 1080p with every
/// AOV in 32-bit floats.
pub const DEFAULT_READBACK_BUDGET: u64 = 256 << 20;

/// Timestamps each frame's profiler holds (its stages: the build's, the bounces').
const STAGES_PER_FRAME: u32 = 128;

/// How a sequence renders.
#[derive(Clone, Debug)]
pub struct SequenceConfig {
    /// The structure rebuilt every frame (one rays can be traced through).
    pub structure: StructureKind,
    /// Its builder's parameters.
    pub build: BuildParams,
    /// Bounces and ray list sizes.
    pub render: RenderParams,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Frames per second of animation time: frame `n` shows time `n / fps`.
    pub fps: f32,
    /// Caustics by photon mapping ([`crate::render::photons`]), or none.
    pub caustics: Option<PhotonParams>,
    /// The channels finished frames carry beside the 8-bit image, converted on the GPU as the
    /// frames' files store them ([`Renderer::set_output_channels`]; e.g.
    /// [`crate::export::output_channels`]).
    pub channels: Vec<crate::render::OutputChannel>,
    /// Frames submitted and not yet handed to the sink, at most (at least 1): the oldest is
    /// handed on while the GPU renders the others. Each has a slot of its own, so the
    /// host-visible memory frames are read back into is this many times a frame's readback
    /// ([`ImageReadback::bytes`]: the image, the file channels' planes and the bounce
    /// counters), and a structure that builds per slot (a kd-tree's overflow status, the
    /// screen grid's) keeps as many.
    pub frames_in_flight: usize,
    /// Bytes the frames in flight may be read back into: where `frames_in_flight` frames'
    /// readbacks would take more, fewer are kept in flight, but not fewer than two, so that the
    /// ring is sized from the output ([`FrameSequence::frames_in_flight`] says how many).
    pub readback_budget: u64,
    /// Whether a still scene that places a mesh more than once
    /// ([`FrameSource::placements`]) is traced through two levels (each mesh's tree built
    /// once, the top tree over the copies every frame: [`PlacedMeshes`]) where `structure` is
    /// the LBVH in its binary layout; true by default. False: one tree over every copy.
    pub two_levels: bool,
}

impl Default for SequenceConfig {
    /// The LBVH, two bounces, 960x540 at 24 frames per second, no caustics, 8-bit images only
    /// (`canopy render`'s defaults), [`DEFAULT_FRAMES_IN_FLIGHT`] within
    /// [`DEFAULT_READBACK_BUDGET`].
    fn default() -> Self {
        Self {
            structure: StructureKind::Lbvh,
            build: BuildParams::default(),
            render: RenderParams::default(),
            width: 960,
            height: 540,
            fps: 24.0,
            caustics: None,
            channels: Vec::new(),
            frames_in_flight: DEFAULT_FRAMES_IN_FLIGHT,
            readback_budget: DEFAULT_READBACK_BUDGET,
            two_levels: true,
        }
    }
}

/// A finished frame, as a sink receives it.
pub struct FinishedFrame<'a> {
    /// The frame's number.
    pub frame: u32,
    /// Its image and the renderer's per-bounce ray counts.
    pub image: &'a ImageReadback,
    /// Its GPU stage times (`frame`, then the build's and the renderer's stages).
    pub profiler: &'a Profiler,
    /// The camera it was seen through, and the image's size.
    pub camera: FrameCamera,
    /// Frames in flight as it was handed on, itself included: submitted and not yet handed to
    /// the sink (at most [`SequenceConfig::frames_in_flight`]).
    pub in_flight: usize,
}

/// The camera a frame was seen through and the image's size, as ground truth for the frame
/// ([`FrameCamera::intrinsics`], [`FrameCamera::world_to_camera`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameCamera {
    /// The camera.
    pub camera: Camera,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
}

impl FrameCamera {
    /// The intrinsic matrix K (row-major) in pixels, in the computer-vision convention: a
    /// point at (X, Y, Z) in camera space ([`Self::world_to_camera`]: x right, y down, z
    /// forward) falls at image point (u, v) = (fx X / Z + cx, fy Y / Z + cy), with u from the
    /// image's left edge and v from its top edge, so pixel (px, py)'s centre is at
    /// (px + 0.5, py + 0.5).
    pub fn intrinsics(&self) -> [[f32; 3]; 3] {
        let (_, right, up) = self.camera.basis(self.width, self.height);
        let (w, h) = (self.width as f32, self.height as f32);
        let fx = w * 0.5 / right.length();
        let fy = h * 0.5 / up.length();
        [[fx, 0.0, w * 0.5], [0.0, fy, h * 0.5], [0.0, 0.0, 1.0]]
    }

    /// The rigid transform from world space to camera space (x right, y down, z forward; the
    /// rows of the rotation are the camera's right, down and forward), row-major.
    pub fn world_to_camera(&self) -> [[f32; 4]; 4] {
        let (forward, right, up) = self.camera.frame();
        let down = -up;
        let eye = self.camera.position;
        let row = |axis: Vec3| [axis.x, axis.y, axis.z, -axis.dot(eye)];
        [row(right), row(down), row(forward), [0.0, 0.0, 0.0, 1.0]]
    }
}

/// What a sink asks of the sequence after a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Render the next frame.
    Continue,
    /// Stop: the frames in flight are waited for and dropped.
    Stop,
}

/// Renders frames of one source, [`SequenceConfig::frames_in_flight`] at a time.
pub struct FrameSequence<'a> {
    ctx: &'a Context,
    source: &'a dyn FrameSource,
    config: SequenceConfig,
    structure: Box<dyn RayStructure>,
    renderer: Renderer,
    shading: ShadingParams,
    profilers: Vec<Profiler>,
    /// One per frame in flight.
    readbacks: Vec<ImageReadback>,
    rerendered: u32,
}

impl<'a> FrameSequence<'a> {
    /// A sequence of `source`'s frames rendered as `config` says; all device memory is
    /// allocated here, once. No frames in flight, or more than the source can be recorded
    /// for ([`FrameSource::max_frames_in_flight`]), is refused.
    pub fn new(
        ctx: &'a Context,
        source: &'a dyn FrameSource,
        config: SequenceConfig,
    ) -> Result<Self, Error> {
        if config.frames_in_flight == 0 {
            return Err(Error::InvalidInput(
                "a frame sequence keeps at least 1 frame in flight".into(),
            ));
        }
        let scene = source.scene();
        let mut renderer = Renderer::new(
            ctx,
            config.width,
            config.height,
            scene.light_count,
            config.render,
        )?;
        if let Some(params) = config.caustics {
            renderer.enable_caustics(ctx, params)?;
        }
        renderer.set_output_channels(ctx, &config.channels)?;
        let mut readbacks = vec![renderer.readback(ctx)?];
        let within_budget = (config.readback_budget / readbacks[0].bytes()).max(2);
        let slots = config.frames_in_flight.min(within_budget as usize);
        if let Some(most) = source.max_frames_in_flight()
            && most < slots
        {
            return Err(Error::InvalidInput(format!(
                "the frame source can be recorded for {most} frames in flight, and the \
                 sequence keeps {slots}"
            )));
        }
        while readbacks.len() < slots {
            readbacks.push(renderer.readback(ctx)?);
        }
        let size = StructureSize {
            triangles: scene.triangle_count,
            vertices: scene.vertex_count,
        };
        let structure: Box<dyn RayStructure> = match source.placements() {
            Some(placements)
                if config.two_levels
                    && config.structure == StructureKind::Lbvh
                    && config.build.lbvh.layout == BvhLayout::Binary =>
            {
                Box::new(PlacedMeshes::new(ctx, config.build.lbvh, placements)?)
            }
            _ => config
                .structure
                .create(ctx, &config.build, size, slots)?
                .into_rays()?,
        };
        Ok(Self {
            profilers: (0..slots)
                .map(|_| Profiler::new(ctx, STAGES_PER_FRAME))
                .collect::<Result<_, _>>()?,
            readbacks,
            ctx,
            source,
            config,
            structure,
            renderer,
            shading: source.shading(),
            rerendered: 0,
        })
    }

    /// Bytes each frame in flight is read back into ([`ImageReadback::bytes`]).
    pub fn readback_bytes(&self) -> u64 {
        self.readbacks[0].bytes()
    }

    /// Frames kept in flight: [`SequenceConfig::frames_in_flight`], or fewer where that many
    /// frames' readbacks would exceed [`SequenceConfig::readback_budget`].
    pub fn frames_in_flight(&self) -> usize {
        self.readbacks.len()
    }

    /// The renderer (its photon map's and gathers' counts after a frame).
    pub fn renderer(&self) -> &Renderer {
        &self.renderer
    }

    /// Renders `frames` in order, handing each finished one to `sink`, until the last or
    /// until `sink` answers [`Flow::Stop`]. The sink's own errors stop the sequence too (after
    /// the frames in flight are waited for) and are returned.
    pub fn render<E: From<Error>>(
        &mut self,
        frames: &[u32],
        sink: impl FnMut(&FinishedFrame) -> Result<Flow, E>,
    ) -> Result<(), E> {
        let mut frames = frames.iter().copied();
        self.render_pulled(|| frames.next(), sink)
    }

    /// As [`Self::render`], taking each next frame from `pull` when there is room for it (none:
    /// the sequence ends): several sequences, on several devices, share one list of frames this
    /// way, each pulling the next frame nobody has taken.
    pub fn render_pulled<E: From<Error>>(
        &mut self,
        mut pull: impl FnMut() -> Option<u32>,
        mut sink: impl FnMut(&FinishedFrame) -> Result<Flow, E>,
    ) -> Result<(), E> {
        let slots = self.frames_in_flight();
        // The frames taken so far, in order (a frame rendered again is taken once).
        let mut frames: Vec<u32> = Vec::new();
        // The frames submitted and not yet handed to the sink, oldest first, by their index in
        // `frames`: frame `n` renders into slot `n % slots`, and the frames in flight are
        // consecutive, so no two share a slot.
        let mut in_flight: VecDeque<(usize, Submission)> = VecDeque::new();
        // The next frame to submit.
        let mut next = 0;
        loop {
            while in_flight.len() < slots {
                if next == frames.len() {
                    let Some(frame) = pull() else { break };
                    frames.push(frame);
                }
                in_flight.push_back((next, self.submit(frames[next], next % slots)?));
                next += 1;
            }
            let Some((done, oldest)) = in_flight.pop_front() else {
                return Ok(());
            };
            oldest.wait()?;
            if self.structure.grow_if_overflowed(self.ctx, done % slots)? {
                // The frame's tree lost nodes for want of space: render it, and the frames in
                // flight after it, again with the grown lists.
                wait_for_all(&mut in_flight)?;
                log::info!(
                    "frame {}: kd-tree lists grown; rendering it again",
                    frames[done]
                );
                self.rerendered += 1;
                next = done;
                continue;
            }
            let (width, height) = (self.config.width, self.config.height);
            let time = frames[done] as f32 / self.config.fps;
            let finished = FinishedFrame {
                frame: frames[done],
                image: &self.readbacks[done % slots],
                profiler: &self.profilers[done % slots],
                camera: FrameCamera {
                    camera: self.source.camera(time, width as f32 / height as f32),
                    width,
                    height,
                },
                in_flight: 1 + in_flight.len(),
            };
            let flow = sink(&finished);
            if !matches!(flow, Ok(Flow::Continue)) {
                // Stopped: the frames in flight are dropped once their GPU work is done.
                wait_for_all(&mut in_flight)?;
                return flow.map(drop);
            }
        }
    }

    /// Frames rendered again because the structure's lists grew during their build.
    pub fn rerendered(&self) -> u32 {
        self.rerendered
    }

    /// Records and submits frame `frame` into `slot`.
    fn submit(&mut self, frame: u32, slot: usize) -> Result<Submission, Error> {
        let (source, structure, renderer) = (self.source, &mut self.structure, &self.renderer);
        let time = frame as f32 / self.config.fps;
        let camera = source.camera(time, self.config.width as f32 / self.config.height as f32);
        let (shading, image) = (&self.shading, &self.readbacks[slot]);
        structure.set_view(
            self.ctx,
            &camera.view(self.config.width, self.config.height),
        )?;
        self.ctx.submit(Some(&mut self.profilers[slot]), |rec| {
            rec.barrier_after_earlier_work();
            rec.begin_stage("frame");
            source.record_frame(
                rec,
                FrameTime {
                    frame,
                    seconds: time,
                    slot,
                },
            )?;
            let input = source.scene().input();
            structure.record_build(rec, &input, slot)?;
            let traced = structure.traversable(&input);
            renderer.record(
                rec,
                source.scene(),
                traced.as_ref(),
                &camera,
                shading,
                image,
            )?;
            rec.end_stage();
            Ok(())
        })
    }
}

/// Waits for every submission of `in_flight` and drops them.
fn wait_for_all(in_flight: &mut VecDeque<(usize, Submission)>) -> Result<(), Error> {
    in_flight
        .drain(..)
        .try_for_each(|(_, submission)| submission.wait())
}
