//! Frame sequences: the frames of a [`FrameSource`] (canopy's
//! [`Subject`](crate::render::presets::Subject): the default scene, a mesh file, a glTF
//! animation, a sequence of files; or an application's own) rendered one after another with
//! the acceleration structure rebuilt from scratch for each, [`FRAMES_IN_FLIGHT`] at a time,
//! each finished frame handed to a sink (a PNG writer, a video encoder, an application's own
//! consumer). `canopy render` and `canopy bench render` are thin callers of it.
//!
//! While the CPU waits for one frame and hands it on, the GPU renders the next: every frame in
//! flight has its own slot (timestamps, image readback, the structure's build status). A
//! kd-tree whose lists overflowed during a frame's build grows them when that frame finishes
//! ([`crate::accel::Structure::grow_if_overflowed`]); the frame is then rendered again, and so is the
//! frame in flight behind it, whose build ran with the old lists. No frame reaches the sink
//! with an incomplete tree.

use crate::accel::{BuildParams, RayStructure, StructureKind, StructureSize};
use crate::render::photons::PhotonParams;
use crate::render::{Camera, FrameSource, ImageReadback, RenderParams, Renderer, ShadingParams};
use crate::scene::animated::FrameTime;
use crate::vk::{Context, Error, Profiler, Submission};
use glam::Vec3;

/// Frames the GPU works on while the CPU hands on the one before.
pub const FRAMES_IN_FLIGHT: usize = 2;

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
}

impl Default for SequenceConfig {
    /// The LBVH, two bounces, 960x540 at 24 frames per second, no caustics, 8-bit images only
    /// (`canopy render`'s defaults).
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
    /// Stop: the frame in flight is waited for and dropped.
    Stop,
}

/// Renders frames of one source, [`FRAMES_IN_FLIGHT`] at a time.
pub struct FrameSequence<'a> {
    ctx: &'a Context,
    source: &'a dyn FrameSource,
    config: SequenceConfig,
    structure: Box<dyn RayStructure>,
    renderer: Renderer,
    shading: ShadingParams,
    profilers: Vec<Profiler>,
    readbacks: Vec<ImageReadback>,
    rerendered: u32,
}

impl<'a> FrameSequence<'a> {
    /// A sequence of `source`'s frames rendered as `config` says; all device memory is
    /// allocated here, once. A source that cannot be recorded for [`FRAMES_IN_FLIGHT`]
    /// frames in flight ([`FrameSource::max_frames_in_flight`]) is refused.
    pub fn new(
        ctx: &'a Context,
        source: &'a dyn FrameSource,
        config: SequenceConfig,
    ) -> Result<Self, Error> {
        if let Some(slots) = source.max_frames_in_flight()
            && slots < FRAMES_IN_FLIGHT
        {
            return Err(Error::InvalidInput(format!(
                "the frame source can be recorded for {slots} frames in flight, and the \
                 sequence keeps {FRAMES_IN_FLIGHT}"
            )));
        }
        let scene = source.scene();
        let size = StructureSize {
            triangles: scene.triangle_count,
            vertices: scene.vertex_count,
        };
        let structure = config
            .structure
            .create(ctx, &config.build, size, FRAMES_IN_FLIGHT)?
            .into_rays()?;
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
        Ok(Self {
            profilers: (0..FRAMES_IN_FLIGHT)
                .map(|_| Profiler::new(ctx, STAGES_PER_FRAME))
                .collect::<Result<_, _>>()?,
            readbacks: (0..FRAMES_IN_FLIGHT)
                .map(|_| renderer.readback(ctx))
                .collect::<Result<_, _>>()?,
            ctx,
            source,
            config,
            structure,
            renderer,
            shading: source.shading(),
            rerendered: 0,
        })
    }

    /// The renderer (its photon map's and gathers' counts after a frame).
    pub fn renderer(&self) -> &Renderer {
        &self.renderer
    }

    /// Renders `frames` in order, handing each finished one to `sink`, until the last or
    /// until `sink` answers [`Flow::Stop`]. The sink's own errors stop the sequence too (after
    /// the frame in flight is waited for) and are returned.
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
        // The frames taken so far, in order (a frame rendered again is taken once).
        let mut frames: Vec<u32> = Vec::new();
        let mut in_flight: Option<(usize, usize, Submission)> = None;
        // One step past the last frame, so that the last submission is finished by the same
        // code as the others.
        let mut n = 0;
        loop {
            if n == frames.len()
                && let Some(frame) = pull()
            {
                frames.push(frame);
            }
            if n > frames.len() {
                break;
            }
            let slot = n % FRAMES_IN_FLIGHT;
            let submitted = match frames.get(n) {
                Some(&frame) => Some((n, slot, self.submit(frame, slot)?)),
                None => None,
            };
            n += 1;
            let Some((done, done_slot, previous)) = std::mem::replace(&mut in_flight, submitted)
            else {
                continue;
            };
            previous.wait()?;
            if self.structure.grow_if_overflowed(self.ctx, done_slot)? {
                // The frame's tree lost nodes for want of space: render it, and the frame in
                // flight after it, again with the grown lists.
                if let Some((_, _, next)) = in_flight.take() {
                    next.wait()?;
                }
                log::info!(
                    "frame {}: kd-tree lists grown; rendering it again",
                    frames[done]
                );
                self.rerendered += 1;
                n = done;
                continue;
            }
            let (width, height) = (self.config.width, self.config.height);
            let time = frames[done] as f32 / self.config.fps;
            let finished = FinishedFrame {
                frame: frames[done],
                image: &self.readbacks[done_slot],
                profiler: &self.profilers[done_slot],
                camera: FrameCamera {
                    camera: self.source.camera(time, width as f32 / height as f32),
                    width,
                    height,
                },
            };
            let flow = sink(&finished);
            if !matches!(flow, Ok(Flow::Continue)) {
                // Stopped: the frame in flight is dropped once its GPU work is done.
                if let Some((_, _, next)) = in_flight.take() {
                    next.wait()?;
                }
                return flow.map(drop);
            }
        }
        Ok(())
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
