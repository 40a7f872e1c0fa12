//! The headless renderer: a wavefront ray caster over a [`Bvh`] rebuilt every frame.
//!
//! Per frame, each step one dispatch (and a profiler stage): camera rays
//! (`glsl/render/camera_rays.comp`), closest hits ([`Tracer`]), one shadow ray per pixel
//! and light (`glsl/render/shadow_rays.comp`), any-hit occlusion ([`Tracer`]), and Lambert
//! shading with interpolated normals into an RGBA8 image (`glsl/render/shade.comp`), which is
//! copied to a host-visible [`ImageReadback`] for PNG output. `cpu::render` renders the same
//! image. One readback per frame in flight lets the CPU write one frame while the GPU renders
//! the next.

pub mod presets;
pub mod scene_gpu;

pub use scene_gpu::{GpuLight, Light, Material, SceneGpu};

use crate::accel::bvh::Bvh;
use crate::prims::{Count, Slice, WORKGROUP_SIZE};
use crate::shaders;
use crate::trace::{Hit, Query, Ray, Tracer};
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use glam::Vec3;
use std::sync::Arc;

/// A pinhole camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Eye position.
    pub position: Vec3,
    /// Point looked at.
    pub target: Vec3,
    /// Up direction (need not be orthogonal to the view).
    pub up: Vec3,
    /// Vertical field of view in degrees.
    pub fov_y_degrees: f32,
}

impl Camera {
    /// The ray directions' basis for a `width` x `height` image: the direction through
    /// normalised image coordinates (x, y) in [-1, 1]² (y up) is `forward + x right + y up`.
    pub fn basis(&self, width: u32, height: u32) -> (Vec3, Vec3, Vec3) {
        let forward = (self.target - self.position).normalize();
        let right = forward.cross(self.up).normalize();
        let up = right.cross(forward);
        let half_height = (self.fov_y_degrees.to_radians() * 0.5).tan();
        let half_width = half_height * width as f32 / height as f32;
        (forward, right * half_width, up * half_height)
    }

    /// The primary ray through the centre of pixel (`x`, `y`) of a `width` x `height` image
    /// (rows from the top), as `glsl/render/camera_rays.comp` makes it.
    pub fn primary_ray(&self, x: u32, y: u32, width: u32, height: u32) -> Ray {
        let (forward, right, up) = self.basis(width, height);
        let u = (x as f32 + 0.5) / width as f32 * 2.0 - 1.0;
        let v = 1.0 - (y as f32 + 0.5) / height as f32 * 2.0;
        Ray {
            origin: self.position.to_array(),
            tmin: 0.0,
            direction: (forward + u * right + v * up).to_array(),
            tmax: f32::INFINITY,
        }
    }

    /// A camera at `distance` from `target` seen from `azimuth` degrees around the y axis
    /// and `elevation` degrees above the horizon.
    pub fn orbit(target: Vec3, distance: f32, azimuth: f32, elevation: f32, fov: f32) -> Self {
        let (a, e) = (azimuth.to_radians(), elevation.to_radians());
        let offset = Vec3::new(a.sin() * e.cos(), e.sin(), a.cos() * e.cos()) * distance;
        Camera {
            position: target + offset,
            target,
            up: Vec3::Y,
            fov_y_degrees: fov,
        }
    }
}

/// Shading constants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShadingParams {
    /// Ambient light as a fraction of the albedo.
    pub ambient: f32,
    /// Offset of shadow ray origins along the surface normal, in world units.
    pub surface_offset: f32,
}

/// Push constants of `camera_rays.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CameraRaysPush {
    /// Rays written.
    pub rays_address: u64,
    /// Eye position.
    pub origin: [f32; 3],
    /// Image width.
    pub width: u32,
    /// View direction.
    pub forward: [f32; 3],
    /// Image height.
    pub height: u32,
    /// Right, scaled by the half-width of the view.
    pub right: [f32; 3],
    /// Padding.
    pub pad0: f32,
    /// Up, scaled by the half-height of the view.
    pub up: [f32; 3],
    /// Padding.
    pub pad1: f32,
}

/// The scene's buffers as kernels address them (`SceneRefs` in `glsl/common/shading.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SceneRefs {
    /// Vertex positions.
    pub positions: u64,
    /// Vertex normals.
    pub normals: u64,
    /// Triangles.
    pub triangles: u64,
    /// Material per triangle.
    pub triangle_materials: u64,
    /// Materials.
    pub materials: u64,
}

impl From<&SceneGpu> for SceneRefs {
    fn from(scene: &SceneGpu) -> Self {
        SceneRefs {
            positions: scene.positions.address(),
            normals: scene.normals.address(),
            triangles: scene.triangles.address(),
            triangle_materials: scene.triangle_materials.address(),
            materials: scene.materials.address(),
        }
    }
}

/// Push constants of `shadow_rays.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ShadowRaysPush {
    /// The scene.
    pub scene: SceneRefs,
    /// Primary rays.
    pub primary_rays_address: u64,
    /// Primary hits.
    pub primary_hits_address: u64,
    /// Lights.
    pub lights_address: u64,
    /// Shadow rays written.
    pub shadow_rays_address: u64,
    /// Pixels.
    pub pixels: u32,
    /// Lights.
    pub light_count: u32,
    /// Offset along the normal.
    pub surface_offset: f32,
    /// Padding.
    pub pad: u32,
}

/// Push constants of `shade.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ShadePush {
    /// The scene.
    pub scene: SceneRefs,
    /// Primary rays.
    pub primary_rays_address: u64,
    /// Primary hits.
    pub primary_hits_address: u64,
    /// Lights.
    pub lights_address: u64,
    /// Shadow hits.
    pub shadow_hits_address: u64,
    /// RGBA8 pixels written.
    pub image_address: u64,
    /// Pixels.
    pub pixels: u32,
    /// Lights.
    pub light_count: u32,
    /// Ambient fraction.
    pub ambient: f32,
    /// Padding.
    pub pad: u32,
}

/// Renders images of a fixed size; reusable every frame.
pub struct Renderer {
    width: u32,
    height: u32,
    max_lights: u32,
    camera_rays: Arc<Pipeline>,
    shadow_rays: Arc<Pipeline>,
    shade: Arc<Pipeline>,
    tracer: Tracer,
    primary_rays: Buffer,
    primary_hits: Buffer,
    shadow_ray_buffer: Buffer,
    shadow_hits: Buffer,
    image: Buffer,
}

/// Host-visible memory a rendered frame is copied to.
pub struct ImageReadback {
    buffer: Buffer,
}

impl ImageReadback {
    /// The image: RGBA8, rows from the top (valid once the frame's submission has completed).
    pub fn rgba8(&self) -> &[u8] {
        self.buffer.mapped().expect("readback buffers are mapped")
    }
}

impl Renderer {
    /// A renderer of `width` x `height` images lit by up to `max_lights` lights.
    pub fn new(ctx: &Context, width: u32, height: u32, max_lights: u32) -> Result<Self> {
        let pixels = width as u64 * height as u64;
        if pixels == 0 || pixels * max_lights.max(1) as u64 > u32::MAX as u64 {
            return Err(Error::InvalidInput(format!(
                "image of {width}x{height} with {max_lights} lights: size out of range"
            )));
        }
        let ray_bytes = std::mem::size_of::<Ray>() as u64;
        let hit_bytes = std::mem::size_of::<Hit>() as u64;
        let shadow = pixels * max_lights.max(1) as u64;
        Ok(Self {
            width,
            height,
            max_lights,
            camera_rays: ctx.pipeline(&shaders::RENDER_CAMERA_RAYS, WORKGROUP_SIZE, &[])?,
            shadow_rays: ctx.pipeline(&shaders::RENDER_SHADOW_RAYS, WORKGROUP_SIZE, &[])?,
            shade: ctx.pipeline(&shaders::RENDER_SHADE, WORKGROUP_SIZE, &[])?,
            tracer: Tracer::new(ctx)?,
            primary_rays: ctx.create_buffer(
                "primary rays",
                pixels * ray_bytes,
                MemoryKind::Device,
            )?,
            primary_hits: ctx.create_buffer(
                "primary hits",
                pixels * hit_bytes,
                MemoryKind::Device,
            )?,
            shadow_ray_buffer: ctx.create_buffer(
                "shadow rays",
                shadow * ray_bytes,
                MemoryKind::Device,
            )?,
            shadow_hits: ctx.create_buffer(
                "shadow hits",
                shadow * hit_bytes,
                MemoryKind::Device,
            )?,
            image: ctx.create_buffer("image", pixels * 4, MemoryKind::Device)?,
        })
    }

    /// Host memory for one frame of this renderer's size.
    pub fn readback(&self, ctx: &Context) -> Result<ImageReadback> {
        let bytes = self.width as u64 * self.height as u64 * 4;
        Ok(ImageReadback {
            buffer: ctx.create_buffer("image readback", bytes, MemoryKind::Readback)?,
        })
    }

    /// Image width.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Image height.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Records a frame of `scene` through `bvh` (whose build was recorded before) seen by
    /// `camera`, copied to `output` (from [`Renderer::readback`]).
    pub fn record(
        &self,
        rec: &mut Recorder,
        scene: &SceneGpu,
        bvh: &Bvh,
        camera: &Camera,
        shading: &ShadingParams,
        output: &ImageReadback,
    ) -> Result<()> {
        let bytes = self.width as u64 * self.height as u64 * 4;
        if output.buffer.size() < bytes {
            return Err(Error::InvalidInput(format!(
                "image readback of {} bytes for a {}x{} image",
                output.buffer.size(),
                self.width,
                self.height
            )));
        }
        if scene.light_count > self.max_lights {
            return Err(Error::InvalidInput(format!(
                "scene has {} lights; the renderer was made for {}",
                scene.light_count, self.max_lights
            )));
        }
        let pixels = self.width * self.height;
        let groups = pixels.div_ceil(WORKGROUP_SIZE);
        let (forward, right, up) = camera.basis(self.width, self.height);
        // An earlier frame recorded before this one may still read its buffers.
        rec.barrier_after_earlier_work();
        rec.begin_stage("render: camera rays");
        let push = CameraRaysPush {
            rays_address: self.primary_rays.address(),
            origin: camera.position.to_array(),
            width: self.width,
            forward: forward.to_array(),
            height: self.height,
            right: right.to_array(),
            pad0: 0.0,
            up: up.to_array(),
            pad1: 0.0,
        };
        rec.dispatch(&self.camera_rays, &push, groups);
        rec.barrier_compute_to_compute();
        rec.end_stage();

        rec.begin_stage("trace: primary");
        self.tracer.record(
            rec,
            bvh,
            Query::Closest,
            Slice::whole(&self.primary_rays),
            Slice::whole(&self.primary_hits),
            Count::Host(pixels),
        )?;
        rec.barrier_compute_to_compute();
        rec.end_stage();

        rec.begin_stage("render: shadow rays");
        let push = ShadowRaysPush {
            scene: scene.into(),
            primary_rays_address: self.primary_rays.address(),
            primary_hits_address: self.primary_hits.address(),
            lights_address: scene.lights.address(),
            shadow_rays_address: self.shadow_ray_buffer.address(),
            pixels,
            light_count: scene.light_count,
            surface_offset: shading.surface_offset,
            pad: 0,
        };
        rec.dispatch(&self.shadow_rays, &push, groups);
        rec.barrier_compute_to_compute();
        rec.end_stage();

        rec.begin_stage("trace: shadow");
        self.tracer.record(
            rec,
            bvh,
            Query::Any,
            Slice::whole(&self.shadow_ray_buffer),
            Slice::whole(&self.shadow_hits),
            Count::Host(pixels * scene.light_count),
        )?;
        rec.barrier_compute_to_compute();
        rec.end_stage();

        rec.begin_stage("render: shade");
        let push = ShadePush {
            scene: scene.into(),
            primary_rays_address: self.primary_rays.address(),
            primary_hits_address: self.primary_hits.address(),
            lights_address: scene.lights.address(),
            shadow_hits_address: self.shadow_hits.address(),
            image_address: self.image.address(),
            pixels,
            light_count: scene.light_count,
            ambient: shading.ambient,
            pad: 0,
        };
        rec.dispatch(&self.shade, &push, groups);
        rec.barrier_compute_to_transfer();
        rec.copy_buffer(&self.image, 0, &output.buffer, 0, pixels as u64 * 4);
        rec.barrier_transfer_to_host();
        rec.end_stage();
        Ok(())
    }
}
