//! The headless renderer: a wavefront ray tracer with reflections and refractions over any
//! tree rays are traced through ([`Traversable`]: an LBVH, a kd-tree) rebuilt every frame, after Zhou et al. 2008, section 4.
//!
//! A frame, each step one dispatch (and a profiler stage):
//! 1. **camera rays** (`glsl/render/camera_rays.comp`): the first path list, one ray per pixel
//!    with throughput 1; the pixels' radiance sums and the bounce counters are zeroed.
//! 2. For each bounce `b` in `0..=bounces`:
//!    - **trace: bounce b**: closest hits of the path list ([`Tracer`]);
//!    - **render: shade b** (`glsl/render/shade.comp`, then `close_lists.comp`): misses add the
//!      sky; diffuse hits add their ambient term and append one shadow ray per light they face,
//!      carrying the radiance it adds if unoccluded; mirror hits append the reflected ray, glass
//!      hits the reflected and the refracted ray weighted by the exact dielectric Fresnel
//!      reflectance (only the reflected one under total internal reflection). The appended rays
//!      are the next bounce's path list (list compaction by atomic append, one atomic per
//!      subgroup); each carries its pixel and throughput. At the last bounce nothing is
//!      appended: a specular hit adds the sky along each scattered direction times its weight.
//!    - **trace: shadow b**: any-hit queries of the shadow list;
//!    - **render: shadow radiance b** (`shadow_radiance.comp`): unoccluded shadow rays add
//!      their radiance.
//!
//!    Bounces after the first are sized on the GPU: the list lengths are device counters, the
//!    traces take [`Count::Device`] and the kernels dispatch indirectly; nothing is read back
//!    within a frame.
//! 3. **render: resolve** (`resolve.comp`): the sums to sRGB RGBA8, copied with the bounce
//!    counters to a host-visible [`ImageReadback`]; with file channels
//!    ([`Renderer::set_output_channels`]), `channels.comp` writes each one as the file stores
//!    it and they are copied beside the image.
//!
//! Radiance is summed per pixel in 64-bit fixed point (2^24 units per unit of linear
//! radiance, each contribution clamped to [0, 256] per channel, which never changes a pixel
//! since the image clamps at 1) with integer atomics, so the sum does not depend on the order
//! of the additions and `cpu::render` renders the same image from the same integers.
//!
//! **Memory.** A ray list entry takes 64 bytes (ray, payload, hit). The camera rays' list
//! holds one ray per pixel; a glass hit makes two rays, so bounce `b` may need up to
//! `pixels * 2^b` rays. The secondary lists hold [`RenderParams::secondary_rays_per_pixel`]
//! rays per pixel (default 2: the first bounce can never overflow), and the shadow list
//! `lights` rays per ray of the largest list. Rays that do not fit are not traced; they are
//! counted on the GPU and reported by [`ImageReadback::stats`] (`canopy render` prints them).
//! Two path lists are used in turn, so memory does not grow with the number of bounces.
//!
//! One readback per frame in flight lets the CPU hand on one frame while the GPU renders the
//! next ones; a readback holds what the frame's files hold (the 8-bit image, the file
//! channels' planes) and the bounce counters ([`ImageReadback::bytes`]).

pub mod channels;
pub mod cpu;
pub mod photons;
pub mod presets;
pub mod scene_gpu;
pub mod source;

pub use crate::scene::material::{GpuLight, Light, Material, MaterialKind};
pub use channels::{ChannelEncoding, ChannelSource, OutputChannel};
pub use scene_gpu::{SceneGpu, Surfaces};
pub use source::FrameSource;

use crate::prims::WORKGROUP_SIZE;

use crate::accel::{CameraBatch, Traversable, TraversalBatch};
use crate::geom::PinholeView;
use crate::geom::ray::{Hit, Query, Ray};
use crate::shaders;
use crate::trace::Tracer;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use crate::vk::{Count, Slice};
use glam::Vec3;
use photons::{GatherPoints, GatherScratch, PhotonMap, PhotonParams};
use std::sync::Arc;

/// A pinhole camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Eye position.
    pub position: Vec3,
    /// Point looked at.
    pub target: Vec3,
    /// Up direction (need not be orthogonal to the view; where it is parallel to the view,
    /// or zero, [`Camera::basis`] takes another, see there).
    pub up: Vec3,
    /// Vertical field of view in degrees.
    pub fov_y_degrees: f32,
}

impl Camera {
    /// The ray directions' basis for a `width` x `height` image: the direction through
    /// normalised image coordinates (x, y) in [-1, 1]² (y up) is `forward + x right + y up`.
    ///
    /// The basis is always finite and orthogonal. A view along the up direction (a camera
    /// looking straight down or up) takes as its up the world axis least aligned with the
    /// view (z before x before y on a tie; looking down -y the image's top is +z), and says
    /// so once in the log; an eye at its target looks along -z.
    pub fn basis(&self, width: u32, height: u32) -> (Vec3, Vec3, Vec3) {
        let (forward, right, up) = self.frame();
        let half_height = (self.fov_y_degrees.to_radians() * 0.5).tan();
        let half_width = half_height * width as f32 / height as f32;
        (forward, right * half_width, up * half_height)
    }

    /// The camera's orthonormal frame: forward, right and up unit vectors ([`Self::basis`]).
    pub fn frame(&self) -> (Vec3, Vec3, Vec3) {
        let forward = (self.target - self.position).normalize_or(Vec3::NEG_Z);
        let up = self.up.normalize_or_zero();
        let right = match forward.cross(up) {
            right if right.length_squared() > 1e-10 => right.normalize(),
            _ => {
                // Up along the view: the axis least aligned with it instead.
                let axis = [Vec3::Z, Vec3::X, Vec3::Y]
                    .into_iter()
                    .min_by(|a, b| forward.dot(*a).abs().total_cmp(&forward.dot(*b).abs()))
                    .unwrap_or(Vec3::Z);
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    log::info!(
                        "the camera looks along its up direction {}: the image's up is {axis} \
                         instead",
                        self.up
                    )
                });
                forward.cross(axis).normalize()
            }
        };
        (forward, right, right.cross(forward))
    }

    /// The view of a `width` x `height` image through this camera.
    pub fn view(&self, width: u32, height: u32) -> PinholeView {
        let (forward, right, up) = self.basis(width, height);
        PinholeView {
            origin: self.position.to_array(),
            forward: forward.to_array(),
            right: right.to_array(),
            up: up.to_array(),
            width,
            height,
        }
    }

    /// The primary ray through the centre of pixel (`x`, `y`) of a `width` x `height` image
    /// (rows from the top), as `glsl/render/camera_rays.comp` makes it.
    pub fn primary_ray(&self, x: u32, y: u32, width: u32, height: u32) -> Ray {
        self.view(width, height).primary_ray(x, y)
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
    /// Offset of new ray origins (shadow, reflected, refracted) off the surface along its
    /// geometric normal, in world units.
    pub surface_offset: f32,
}

/// The most bounces a [`Renderer`] traces.
pub const MAX_BOUNCES: u32 = 16;
/// The most lights a [`Renderer`] is made for (bounds a pixel's fixed-point sum: see the module
/// docs).
pub const MAX_LIGHTS: u32 = 4096;
/// Fixed-point units per unit of linear radiance in the pixels' sums (`RADIANCE_SCALE` in
/// `glsl/common/paths.glsl`).
pub const RADIANCE_SCALE: f32 = 16_777_216.0;
/// The largest contribution per channel added to a pixel's sum (`RADIANCE_MAX`).
pub const RADIANCE_MAX: f32 = 256.0;

/// A contribution to a pixel's fixed-point radiance sum, as `add_radiance` in
/// `glsl/common/paths.glsl` converts it: clamped to [0, [`RADIANCE_MAX`]] (NaN to 0), scaled
/// by [`RADIANCE_SCALE`] and rounded.
pub fn radiance_units(c: f32) -> u64 {
    let x = if c > 0.0 { c.min(RADIANCE_MAX) } else { 0.0 };
    (x * RADIANCE_SCALE + 0.5) as u64
}

/// How a [`Renderer`] traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderParams {
    /// Bounces of reflected and refracted rays after the camera rays, 0 to [`MAX_BOUNCES`]
    /// (0: camera and shadow rays only; mirrors and glass then show the sky they would
    /// reflect or pass).
    pub bounces: u32,
    /// Capacity of each secondary ray list, in rays per pixel (at least 1 when `bounces` > 0).
    /// 2 fits the first bounce of any scene; rays beyond it are dropped and counted.
    pub secondary_rays_per_pixel: u32,
    /// Samples per pixel, 1 to [`MAX_SAMPLES`]: each traces the pixel's paths from a point
    /// of its own in the pixel ([`crate::geom::view::sample_offset`]), and the pixel is
    /// their mean (a box filter). Depth, normal, position and object id come from the first
    /// sample; albedo and coverage are the means over all.
    pub samples: u32,
    /// Whether diffuse surfaces are lit by the sky (the scene's environment map, or the
    /// procedural sky) through one occlusion ray per diffuse hit and sample, in a
    /// cosine-weighted direction, instead of the ambient term. Noisy at one sample per pixel;
    /// it converges with [`Self::samples`].
    pub sky_light: bool,
}

/// The most samples per pixel ([`RenderParams::samples`]).
pub const MAX_SAMPLES: u32 = 4096;

impl Default for RenderParams {
    fn default() -> Self {
        RenderParams {
            bounces: 2,
            secondary_rays_per_pixel: 2,
            samples: 1,
            sky_light: false,
        }
    }
}

/// A ray's pixel and weight (`RayPayload` in `glsl/common/paths.glsl`): a path's throughput,
/// or the radiance a shadow ray adds to its pixel if it reaches its light. 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RayPayload {
    /// Throughput or radiance (linear RGB).
    pub weight: [f32; 3],
    /// The pixel (row-major from the top-left).
    pub pixel: u32,
}

/// The counters of one bounce on the GPU (`BounceCounters` in `glsl/common/paths.glsl`).
/// 48 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BounceCounters {
    /// Rays the bounce's shading appended to the next path list (including any dropped).
    pub appended_rays: u32,
    /// Shadow rays it appended (including any dropped).
    pub appended_shadow_rays: u32,
    /// Rays in the next path list (`appended_rays` clamped to its capacity).
    pub rays: u32,
    /// Shadow rays in the shadow list (clamped to its capacity).
    pub shadow_rays: u32,
    /// Dispatch size of the next bounce's shading.
    pub shade_groups: [u32; 4],
    /// Dispatch size of this bounce's shadow radiance pass.
    pub shadow_groups: [u32; 4],
}

const COUNTER_BYTES: u64 = std::mem::size_of::<BounceCounters>() as u64;
const _: () = assert!(COUNTER_BYTES == 48 && std::mem::size_of::<RayPayload>() == 16);

/// What one bounce of a rendered frame traced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BounceStats {
    /// Rays traced for closest hits (the camera rays at bounce 0).
    pub rays: u32,
    /// Shadow rays traced.
    pub shadow_rays: u32,
    /// Shadow rays that did not fit in the shadow list (not traced; their light is missing).
    pub dropped_shadow_rays: u32,
    /// Reflected and refracted rays made here that did not fit in the next bounce's list
    /// (not traced; their paths end).
    pub dropped_rays: u32,
}

/// Push constants of `camera_rays.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CameraRaysPush {
    /// The path list written.
    pub list_address: u64,
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
    /// Capacity of the list.
    pub capacity: u32,
    /// Up, scaled by the half-height of the view.
    pub up: [f32; 3],
    /// u32 words of bounce counters zeroed.
    pub counter_words: u32,
    /// Radiance sums zeroed (by the first sample).
    pub radiance_address: u64,
    /// Bounce counters zeroed.
    pub counters_address: u64,
    /// This sample.
    pub sample: u32,
    /// Samples per pixel.
    pub samples: u32,
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
    /// The appearance: materials and textures.
    pub appearance: u64,
}

impl From<&SceneGpu> for SceneRefs {
    fn from(scene: &SceneGpu) -> Self {
        SceneRefs {
            positions: scene.positions.address(),
            normals: scene.normals.address(),
            triangles: scene.triangles.address(),
            triangle_materials: scene.triangle_materials.address(),
            appearance: scene.appearance.address(),
        }
    }
}

/// Push constants of `shade.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ShadePush {
    /// The scene.
    pub scene: SceneRefs,
    /// This bounce's path list.
    pub list_address: u64,
    /// Its length on the device, or 0.
    pub count_address: u64,
    /// The next bounce's path list.
    pub next_list_address: u64,
    /// The shadow list.
    pub shadow_list_address: u64,
    /// This bounce's counters.
    pub counters_address: u64,
    /// Radiance sums.
    pub radiance_address: u64,
    /// Capacity of this bounce's list.
    pub capacity: u32,
    /// Capacity of the next list.
    pub next_capacity: u32,
    /// Capacity of the shadow list.
    pub shadow_capacity: u32,
    /// Length of this bounce's list when `count_address` is 0.
    pub host_count: u32,
    /// Bounce 0: the camera rays' [`PinholeView::ray_spacing`], so that their hits read
    /// textures at the mip level of their cone; 0 for later bounces (level 0).
    pub cone_spread: f32,
    /// Ambient fraction.
    pub ambient: f32,
    /// Offset of new rays off the surface.
    pub surface_offset: f32,
    /// [`SHADE_SPAWN`] (append scattered rays; not at the last bounce) | [`SHADE_SKY_LIGHT`]
    /// | [`SHADE_GLOSSY`] | bounce << 8 | sample << 16.
    pub pass_flags: u32,
}

/// [`ShadePush::pass_flags`]: append scattered rays.
pub const SHADE_SPAWN: u32 = 1;
/// [`ShadePush::pass_flags`]: diffuse hits sample the sky's light ([`RenderParams::sky_light`]).
pub const SHADE_SKY_LIGHT: u32 = 2;
/// [`ShadePush::pass_flags`]: rough reflections scatter about the mirror direction (more than
/// one sample per pixel; see [`Material::roughness`]).
pub const SHADE_GLOSSY: u32 = 4;

/// Push constants of `close_lists.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CloseListsPush {
    /// This bounce's counters.
    pub counters_address: u64,
    /// Capacity of the next path list.
    pub next_capacity: u32,
    /// Capacity of the shadow list.
    pub shadow_capacity: u32,
    /// Invocations per workgroup of the list kernels.
    pub elements_per_group: u32,
    /// The device's per-dimension workgroup count limit.
    pub max_groups_per_dim: u32,
}

/// Push constants of `shadow_radiance.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ShadowRadiancePush {
    /// The shadow list.
    pub list_address: u64,
    /// Its length on the device.
    pub count_address: u64,
    /// Radiance sums.
    pub radiance_address: u64,
    /// Capacity of the list.
    pub capacity: u32,
    /// Padding.
    pub pad: u32,
}

/// What a pixel's camera ray hit, for compositing (`PixelAovs` in `glsl/render/aovs.comp`):
/// written when a file channel reads it ([`Renderer::set_output_channels`]). 52 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PixelAovs {
    /// The shading normal (unit, facing the camera); zero for the sky.
    pub normal: [f32; 3],
    /// Distance along the camera's view axis; infinite for the sky.
    pub depth: f32,
    /// The albedo the shading uses (checkered where the material is); zero for the sky.
    pub albedo: [f32; 3],
    /// The hit triangle's material index; `u32::MAX` for the sky.
    pub object_id: u32,
    /// The world position; zero for the sky.
    pub position: [f32; 3],
    /// 1 where the camera ray hit, 0 for the sky.
    pub coverage: f32,
    /// The hit triangle's instance; `u32::MAX` for the sky.
    pub instance_id: u32,
}

/// Push constants of `aovs.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct AovsPush {
    /// The scene's buffers.
    pub scene: SceneRefs,
    /// Bounce 0's path list.
    pub list_address: u64,
    /// Out: [`PixelAovs`] per pixel.
    pub aovs_address: u64,
    /// The camera's unit view direction.
    pub forward: [f32; 3],
    /// The path list's capacity.
    pub capacity: u32,
    /// Pixels.
    pub pixels: u32,
    /// This sample (the first writes every variable; the others add to the means).
    pub sample: u32,
    /// 1 / samples per pixel.
    pub sample_weight: f32,
    /// The camera rays' [`PinholeView::ray_spacing`] (textures at their cone's mip level).
    pub cone_spread: f32,
}

/// Push constants of `resolve.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ResolvePush {
    /// Radiance sums.
    pub radiance_address: u64,
    /// RGBA8 pixels written.
    pub image_address: u64,
    /// Pixels.
    pub pixels: u32,
    /// 1 / samples per pixel.
    pub sample_weight: f32,
}

/// A ray list in one buffer: `capacity` rays, then as many payloads, then as many hits (the
/// renderer's paths and shadow rays, the photon map's photons).
struct RayList {
    buffer: Buffer,
    capacity: u32,
}

impl RayList {
    const BYTES_PER_RAY: u64 = 64;

    fn new(ctx: &Context, name: &str, capacity: u32) -> Result<Self> {
        Ok(Self {
            buffer: ctx.create_buffer(
                name,
                capacity as u64 * Self::BYTES_PER_RAY,
                MemoryKind::Device,
            )?,
            capacity,
        })
    }

    fn address(&self) -> u64 {
        self.buffer.address()
    }

    fn rays(&self) -> Slice<'_, Ray> {
        Slice::new(&self.buffer, 0, self.capacity as u64)
    }

    fn hits(&self) -> Slice<'_, Hit> {
        Slice::new(
            &self.buffer,
            self.capacity as u64 * 48,
            self.capacity as u64,
        )
    }
}

/// Renders images of a fixed size; reusable every frame.
pub struct Renderer {
    width: u32,
    height: u32,
    max_lights: u32,
    params: RenderParams,
    camera_rays: Arc<Pipeline>,
    shade: Arc<Pipeline>,
    close_lists: Arc<Pipeline>,
    shadow_radiance: Arc<Pipeline>,
    resolve: Arc<Pipeline>,
    tracer: Tracer,
    /// Path lists used in turn: bounce `b` reads `paths[b % 2]` (one list without bounces).
    paths: Vec<RayList>,
    shadows: RayList,
    /// Three u64 fixed-point sums per pixel.
    radiance: Buffer,
    /// [`BounceCounters`] per bounce.
    counters: Buffer,
    image: Buffer,
    /// The photon map and gather list, when caustics are on.
    caustics: Option<Caustics>,
    /// The pixels' [`PixelAovs`] and their kernel, when a file channel reads them.
    aovs: Option<(Arc<Pipeline>, Buffer)>,
    /// The file channels and their planes, when set.
    channels: Option<FileChannels>,
}

/// The channels a frame's file holds, converted on the GPU (`channels.comp`).
struct FileChannels {
    list: Vec<OutputChannel>,
    pipeline: Arc<Pipeline>,
    /// Every channel's plane, one after another.
    planes: Buffer,
}

/// Push constants of `channels.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ChannelsPush {
    /// Radiance sums.
    pub radiance_address: u64,
    /// [`PixelAovs`] per pixel, or 0 where no channel reads them.
    pub aovs_address: u64,
    /// Out: the planes.
    pub planes_address: u64,
    /// Pixels.
    pub pixels: u32,
    /// Channels in `channels`.
    pub channel_count: u32,
    /// Each channel's source, and its encoding above bit 8.
    pub channels: [u32; channels::MAX_CHANNELS],
    /// 1 / samples per pixel.
    pub sample_weight: f32,
    /// Padding.
    pub pad: u32,
}

/// Push constants of `gather_queries.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GatherQueriesPush {
    /// The scene's buffers.
    pub scene: SceneRefs,
    /// This bounce's path list.
    pub list_address: u64,
    /// Its length on the device, or 0.
    pub count_address: u64,
    /// Out: gather positions.
    pub positions_address: u64,
    /// Out: gather payloads.
    pub payloads_address: u64,
    /// The gathers' [`BounceCounters`].
    pub counters_address: u64,
    /// The path list's capacity.
    pub capacity: u32,
    /// Host length of the path list.
    pub host_count: u32,
    /// The gather list's capacity.
    pub gather_capacity: u32,
    /// As [`ShadePush::cone_spread`].
    pub cone_spread: f32,
}

/// Caustics: the frame's photon map and the list of diffuse hits that gather from it.
struct Caustics {
    map: PhotonMap,
    gather_queries: Arc<Pipeline>,
    positions: Buffer,
    payloads: Buffer,
    /// A [`BounceCounters`]: gathers appended, then clamped to the capacity.
    counters: Buffer,
    radii: Buffer,
    found: Buffer,
    capacity: u32,
}

/// Host-visible memory a rendered frame is copied to: the image, then the bounce counters,
/// then the file channels' planes ([`Renderer::set_output_channels`]).
pub struct ImageReadback {
    buffer: Buffer,
    image_bytes: usize,
    pixels: u32,
    /// Where the bounce counters end.
    counters_end: usize,
    /// Each file channel, and where its plane starts.
    planes: Vec<(OutputChannel, usize)>,
}

impl ImageReadback {
    /// The image: RGBA8, rows from the top (valid once the frame's submission has completed).
    pub fn rgba8(&self) -> &[u8] {
        &self.mapped()[..self.image_bytes]
    }

    /// What each bounce traced and dropped (valid once the frame's submission has completed).
    pub fn stats(&self) -> Vec<BounceStats> {
        let counters: Vec<BounceCounters> =
            bytemuck::pod_collect_to_vec(&self.mapped()[self.image_bytes..self.counters_end]);
        let mut rays = self.pixels;
        counters
            .iter()
            .map(|c| {
                let stats = BounceStats {
                    rays,
                    shadow_rays: c.shadow_rays,
                    dropped_shadow_rays: c.appended_shadow_rays - c.shadow_rays,
                    dropped_rays: c.appended_rays - c.rays,
                };
                rays = c.rays;
                stats
            })
            .collect()
    }

    fn mapped(&self) -> &[u8] {
        self.buffer.mapped().expect("readback buffers are mapped")
    }

    /// Every file channel with its plane: one value per pixel, rows from the top, in the
    /// channel's encoding (valid once the frame's submission has completed).
    pub fn channels(&self) -> impl Iterator<Item = (OutputChannel, &[u8])> + '_ {
        let pixels = self.pixels as usize;
        self.planes.iter().map(move |&(channel, start)| {
            let bytes = pixels * channel.encoding.bytes_per_pixel();
            (channel, &self.mapped()[start..start + bytes])
        })
    }

    /// Bytes the GPU copies here each frame: the image, the counters and the planes.
    pub fn bytes(&self) -> u64 {
        self.buffer.size()
    }
}

impl Renderer {
    /// A renderer of `width` x `height` images lit by up to `max_lights` lights (at most
    /// [`MAX_LIGHTS`]), tracing as `params` says. Errors name a size out of range.
    pub fn new(
        ctx: &Context,
        width: u32,
        height: u32,
        max_lights: u32,
        params: RenderParams,
    ) -> Result<Self> {
        let pixels = width as u64 * height as u64;
        if pixels == 0 || pixels * max_lights.max(1) as u64 > u32::MAX as u64 {
            return Err(Error::InvalidInput(format!(
                "image of {width}x{height} with {max_lights} lights: size out of range"
            )));
        }
        if max_lights > MAX_LIGHTS {
            return Err(Error::InvalidInput(format!(
                "{max_lights} lights: at most {MAX_LIGHTS}"
            )));
        }
        if params.bounces > MAX_BOUNCES {
            return Err(Error::InvalidInput(format!(
                "{} bounces: at most {MAX_BOUNCES}",
                params.bounces
            )));
        }
        if !(1..=MAX_SAMPLES).contains(&params.samples) {
            return Err(Error::InvalidInput(format!(
                "{} samples per pixel: 1 to {MAX_SAMPLES}",
                params.samples
            )));
        }
        if params.bounces > 0 && params.secondary_rays_per_pixel == 0 {
            return Err(Error::InvalidInput(
                "secondary ray lists of 0 rays per pixel: at least 1 when bouncing".into(),
            ));
        }
        let secondary = if params.bounces > 0 {
            pixels * params.secondary_rays_per_pixel as u64
        } else {
            0
        };
        let largest = pixels.max(secondary);
        let shadow = largest * (max_lights + params.sky_light as u32).max(1) as u64;
        if shadow > u32::MAX as u64 {
            return Err(Error::InvalidInput(format!(
                "{width}x{height} with {} secondary rays per pixel and {max_lights} lights: \
                 ray lists over 2^32 rays",
                params.secondary_rays_per_pixel
            )));
        }
        let mut paths = vec![RayList::new(ctx, "path list 0", largest as u32)?];
        if params.bounces > 0 {
            paths.push(RayList::new(ctx, "path list 1", secondary as u32)?);
        }
        Ok(Self {
            width,
            height,
            max_lights,
            params,
            camera_rays: ctx.pipeline(&shaders::RENDER_CAMERA_RAYS, WORKGROUP_SIZE, &[])?,
            shade: ctx.pipeline(&shaders::RENDER_SHADE, WORKGROUP_SIZE, &[])?,
            close_lists: ctx.pipeline(
                &shaders::RENDER_CLOSE_LISTS,
                32.min(ctx.caps().max_workgroup_size),
                &[],
            )?,
            shadow_radiance: ctx.pipeline(&shaders::RENDER_SHADOW_RADIANCE, WORKGROUP_SIZE, &[])?,
            resolve: ctx.pipeline(&shaders::RENDER_RESOLVE, WORKGROUP_SIZE, &[])?,
            tracer: Tracer::new(ctx)?,
            paths,
            shadows: RayList::new(ctx, "shadow list", shadow as u32)?,
            radiance: ctx.create_buffer("radiance sums", pixels * 24, MemoryKind::Device)?,
            counters: ctx.create_buffer(
                "bounce counters",
                (params.bounces + 1) as u64 * COUNTER_BYTES,
                MemoryKind::Device,
            )?,
            image: ctx.create_buffer("image", pixels * 4, MemoryKind::Device)?,
            caustics: None,
            aovs: None,
            channels: None,
        })
    }

    /// Turns caustics on: every frame traces `params.photons` photons, builds their tree and
    /// adds the caustic radiance gathered at each path's diffuse hits (up to two per pixel; more
    /// are dropped and counted) to the direct light. The photons' seed is the same every frame,
    /// so a still scene's caustic does not flicker.
    pub fn enable_caustics(&mut self, ctx: &Context, params: PhotonParams) -> Result<()> {
        let capacity = self.pixels().saturating_mul(2);
        let device = |name: &str, bytes: u64| ctx.create_buffer(name, bytes, MemoryKind::Device);
        self.caustics = Some(Caustics {
            map: PhotonMap::new(ctx, params)?,
            gather_queries: ctx.pipeline(&shaders::RENDER_GATHER_QUERIES, WORKGROUP_SIZE, &[])?,
            positions: device("gather positions", capacity as u64 * 12)?,
            payloads: device("gather payloads", capacity as u64 * 16)?,
            counters: device("gather counters", COUNTER_BYTES)?,
            radii: device("gather starting radii", capacity as u64 * 4)?,
            found: device("gather radii", capacity as u64 * 8)?,
            capacity,
        });
        Ok(())
    }

    /// The photon map, when caustics are on ([`PhotonMap::stats`] after a frame).
    pub fn photon_map(&self) -> Option<&PhotonMap> {
        self.caustics.as_ref().map(|c| &c.map)
    }

    /// Gathers appended and kept in the last frame (after its submission completed), when
    /// caustics are on: more than kept were dropped.
    pub fn gather_stats(&self, ctx: &Context) -> Result<Option<(u32, u32)>> {
        let Some(caustics) = &self.caustics else {
            return Ok(None);
        };
        let counters: BounceCounters = ctx.download(&caustics.counters, 0, 1)?[0];
        Ok(Some((counters.appended_rays, counters.rays)))
    }

    /// Host memory for one frame of this renderer's size (and its linear output, when on).
    pub fn readback(&self, ctx: &Context) -> Result<ImageReadback> {
        let image_bytes = self.width as u64 * self.height as u64 * 4;
        let mut at = (image_bytes + self.counters.size()) as usize;
        let planes = self.output_channels().iter().map(|&channel| {
            let plane = (channel, at);
            at += channel.encoding.plane_bytes(self.pixels() as usize);
            plane
        });
        Ok(ImageReadback {
            buffer: ctx.create_buffer(
                "image readback",
                self.readback_bytes(),
                MemoryKind::Readback,
            )?,
            image_bytes: image_bytes as usize,
            pixels: self.width * self.height,
            counters_end: (image_bytes + self.counters.size()) as usize,
            planes: planes.collect(),
        })
    }

    /// Bytes of a frame's readback: the image, the counters and the file channels' planes.
    fn readback_bytes(&self) -> u64 {
        self.image_bytes() + self.counters.size() + self.plane_bytes()
    }

    /// Bytes of the file channels' planes of one frame.
    fn plane_bytes(&self) -> u64 {
        let pixels = self.pixels() as usize;
        let planes = self.output_channels().iter();
        planes.map(|c| c.encoding.plane_bytes(pixels) as u64).sum()
    }

    /// The channels set by [`Renderer::set_output_channels`].
    pub fn output_channels(&self) -> &[OutputChannel] {
        self.channels.as_ref().map_or(&[], |c| &c.list)
    }

    /// Makes every frame's readback hold `channels` beside the 8-bit image (at most
    /// [`MAX_CHANNELS`](channels::MAX_CHANNELS)), each converted on the GPU into the
    /// encoding a file stores it in ([`ImageReadback::channels`]); what the camera rays hit
    /// ([`PixelAovs`]) is computed only when a channel reads it. Readbacks made before no
    /// longer fit; an empty list turns the channels off.
    pub fn set_output_channels(&mut self, ctx: &Context, channels: &[OutputChannel]) -> Result<()> {
        if channels.len() > channels::MAX_CHANNELS {
            return Err(Error::InvalidInput(format!(
                "{} file channels: at most {}",
                channels.len(),
                channels::MAX_CHANNELS
            )));
        }
        for channel in channels {
            channel.check().map_err(Error::InvalidInput)?;
        }
        self.channels = None;
        self.aovs = None;
        if channels.is_empty() {
            return Ok(());
        }
        if channels.iter().any(|c| !c.source.is_radiance()) {
            let aovs = ctx.create_buffer(
                "pixel aovs",
                self.pixels() as u64 * std::mem::size_of::<PixelAovs>() as u64,
                MemoryKind::Device,
            )?;
            let pipeline = ctx.pipeline(&shaders::RENDER_AOVS, WORKGROUP_SIZE, &[])?;
            self.aovs = Some((pipeline, aovs));
        }
        let pixels = self.pixels() as usize;
        let bytes = channels
            .iter()
            .map(|c| c.encoding.plane_bytes(pixels) as u64);
        self.channels = Some(FileChannels {
            list: channels.to_vec(),
            pipeline: ctx.pipeline(&shaders::RENDER_CHANNELS, WORKGROUP_SIZE, &[])?,
            planes: ctx.create_buffer("file channels", bytes.sum(), MemoryKind::Device)?,
        });
        Ok(())
    }

    /// Image width.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Image height.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// How it traces.
    pub fn params(&self) -> RenderParams {
        self.params
    }

    /// Records a frame of `scene` traced through `structure` (a `&Bvh`, a kd-tree over the
    /// scene's triangles; its build must be recorded before, with its barrier) seen by
    /// `camera`, copied to `output` (from [`Renderer::readback`]).
    ///
    /// Synchronisation: waits for all earlier work in the command buffer (a full barrier),
    /// so the build and the scene's vertices recorded before are ordered; ends with a
    /// transfer → host barrier, so `output` is readable once the submission has completed.
    pub fn record(
        &self,
        rec: &mut Recorder,
        scene: &SceneGpu,
        structure: &dyn Traversable,
        camera: &Camera,
        shading: &ShadingParams,
        output: &ImageReadback,
    ) -> Result<()> {
        self.check_frame(scene, output)?;
        // An earlier frame recorded before this one may still read its buffers.
        rec.barrier_after_earlier_work();
        let view = camera.view(self.width, self.height);
        if let Some(caustics) = &self.caustics {
            caustics
                .map
                .record_photons(rec, scene, structure, shading.surface_offset, 0)?;
            rec.barrier_compute_to_transfer();
            rec.fill(&caustics.counters, 0, COUNTER_BYTES, 0);
            rec.barrier_transfer_to_compute();
        }
        // Each sample traces its paths in turn, adding to the pixels' sums.
        for sample in 0..self.params.samples {
            self.record_camera_rays(rec, &view, sample)?;
            for bounce in 0..=self.params.bounces {
                let step = BounceStep::new(self, bounce);
                self.record_trace_paths(rec, structure, &step, &view, scene.cutouts())?;
                if bounce == 0 {
                    self.record_aovs(rec, scene, &step, &view, sample)?;
                }
                self.record_shade(rec, scene, shading, &step, &view, sample)?;
                if let Some(caustics) = &self.caustics {
                    self.record_gather_queries(rec, scene, caustics, &step, &view)?;
                }
                self.record_trace_shadows(rec, structure, &step, scene.cutouts())?;
                self.record_shadow_radiance(rec, &step);
            }
        }
        if let Some(caustics) = &self.caustics {
            self.record_caustic_radiance(rec, caustics)?;
        }
        self.record_resolve(rec, output)
    }

    /// Checks that `output` and `scene` fit what the renderer was made for.
    fn check_frame(&self, scene: &SceneGpu, output: &ImageReadback) -> Result<()> {
        let image_bytes = self.image_bytes();
        let channels = output.planes.iter().map(|(channel, _)| channel);
        if output.buffer.size() < self.readback_bytes()
            || output.image_bytes as u64 != image_bytes
            || !channels.eq(self.output_channels())
        {
            return Err(Error::InvalidInput(format!(
                "image readback of {} bytes for a {}x{} image with {} bounces",
                output.buffer.size(),
                self.width,
                self.height,
                self.params.bounces
            )));
        }
        if scene.light_count > self.max_lights {
            return Err(Error::InvalidInput(format!(
                "scene has {} lights; the renderer was made for {}",
                scene.light_count, self.max_lights
            )));
        }
        Ok(())
    }

    fn pixels(&self) -> u32 {
        self.width * self.height
    }

    /// What each sample weighs in a pixel's mean.
    fn sample_weight(&self) -> f32 {
        1.0 / self.params.samples as f32
    }

    fn image_bytes(&self) -> u64 {
        self.pixels() as u64 * 4
    }

    /// `camera_rays.comp`: sample `sample`'s first path list, one ray per pixel; counters
    /// zeroed, and by the first sample the radiance.
    fn record_camera_rays(
        &self,
        rec: &mut Recorder,
        view: &PinholeView,
        sample: u32,
    ) -> Result<()> {
        rec.begin_stage("render: camera rays");
        let push = CameraRaysPush {
            list_address: self.paths[0].address(),
            origin: view.origin,
            width: self.width,
            forward: view.forward,
            height: self.height,
            right: view.right,
            capacity: self.paths[0].capacity,
            up: view.up,
            counter_words: (self.counters.size() / 4) as u32,
            radiance_address: self.radiance.address(),
            counters_address: self.counters.address(),
            sample,
            samples: self.params.samples,
        };
        rec.dispatch(
            &self.camera_rays,
            &push,
            self.pixels().div_ceil(WORKGROUP_SIZE),
        )?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }

    /// The closest hits of the bounce's path list ([`Tracer`]), through `cutouts`; the camera
    /// rays through the structure's own caster when it has one (the screen grid).
    fn record_trace_paths(
        &self,
        rec: &mut Recorder,
        structure: &dyn Traversable,
        step: &BounceStep,
        view: &PinholeView,
        cutouts: Option<&Buffer>,
    ) -> Result<()> {
        rec.begin_stage(&TraceStage::Bounce.label(step.bounce));
        let (list, count) = (step.list, step.count);
        let (rays, hits) = (list.rays(), list.hits());
        match structure.camera_caster() {
            Some(caster) if step.bounce == 0 => {
                let batch = CameraBatch {
                    view: *view,
                    rays,
                    hits,
                    work: None,
                    cutouts,
                };
                caster.record_cast(rec, &batch)?;
            }
            _ => {
                let batch = TraversalBatch {
                    query: Query::Closest,
                    rays,
                    hits,
                    work: None,
                    count,
                    cutouts,
                };
                self.tracer.record_batch(rec, structure, &batch)?
            }
        }
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }

    /// `shade.comp` over the bounce's hits (sky, ambient, shadow rays, the next bounce's rays),
    /// then `close_lists.comp` clamping the lists it appended to and sizing their dispatches.
    fn record_shade(
        &self,
        rec: &mut Recorder,
        scene: &SceneGpu,
        shading: &ShadingParams,
        step: &BounceStep,
        view: &PinholeView,
        sample: u32,
    ) -> Result<()> {
        rec.begin_stage(&format!("render: shade {}", step.bounce));
        let (list, next) = (step.list, step.next);
        let counters = self.counters.address() + step.own;
        let (count_address, host_count) = step.count.push();
        let push = ShadePush {
            scene: scene.into(),
            list_address: list.address(),
            count_address,
            next_list_address: next.address(),
            shadow_list_address: self.shadows.address(),
            counters_address: counters,
            radiance_address: self.radiance.address(),
            capacity: list.capacity,
            next_capacity: next.capacity,
            shadow_capacity: self.shadows.capacity,
            host_count,
            cone_spread: step.cone_spread(view),
            ambient: shading.ambient,
            surface_offset: shading.surface_offset,
            pass_flags: if step.bounce < self.params.bounces {
                SHADE_SPAWN
            } else {
                0
            } | if self.params.sky_light {
                SHADE_SKY_LIGHT
            } else {
                0
            } | if self.params.samples > 1 {
                SHADE_GLOSSY
            } else {
                0
            } | step.bounce << 8
                | sample << 16,
        };
        self.dispatch_over_paths(rec, &self.shade, &push, step)?;
        rec.barrier_compute_to_compute();
        let push = CloseListsPush {
            counters_address: counters,
            next_capacity: next.capacity,
            shadow_capacity: self.shadows.capacity,
            elements_per_group: WORKGROUP_SIZE,
            max_groups_per_dim: rec.context().caps().max_workgroup_count,
        };
        rec.dispatch(&self.close_lists, &push, 1)?;
        rec.barrier_compute_to_indirect();
        rec.end_stage();
        Ok(())
    }

    /// A dispatch of `pipeline` over the bounce's path list: one invocation per pixel at
    /// bounce 0, else sized on the GPU by the previous bounce's counters.
    fn dispatch_over_paths<P: bytemuck::Pod>(
        &self,
        rec: &mut Recorder,
        pipeline: &Pipeline,
        push: &P,
        step: &BounceStep,
    ) -> Result<()> {
        match step.previous {
            None => rec.dispatch(pipeline, push, self.pixels().div_ceil(WORKGROUP_SIZE))?,
            Some(previous) => {
                let offset = previous + std::mem::offset_of!(BounceCounters, shade_groups) as u64;
                rec.dispatch_indirect(pipeline, push, &self.counters, offset);
            }
        }
        Ok(())
    }

    /// `gather_queries.comp`: the bounce's diffuse hits appended to the gather list, sized as
    /// the bounce's shading is.
    fn record_gather_queries(
        &self,
        rec: &mut Recorder,
        scene: &SceneGpu,
        caustics: &Caustics,
        step: &BounceStep,
        view: &PinholeView,
    ) -> Result<()> {
        rec.begin_stage(&format!("photons: gather points {}", step.bounce));
        let (count_address, host_count) = step.count.push();
        let push = GatherQueriesPush {
            scene: scene.into(),
            list_address: step.list.address(),
            count_address,
            positions_address: caustics.positions.address(),
            payloads_address: caustics.payloads.address(),
            counters_address: caustics.counters.address(),
            capacity: step.list.capacity,
            host_count,
            gather_capacity: caustics.capacity,
            cone_spread: step.cone_spread(view),
        };
        self.dispatch_over_paths(rec, &caustics.gather_queries, &push, step)?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }

    /// The gather list closed (clamped to its capacity), then the caustic radiance of every
    /// gather added to its pixel ([`PhotonMap::record_gather`]).
    fn record_caustic_radiance(&self, rec: &mut Recorder, caustics: &Caustics) -> Result<()> {
        let push = CloseListsPush {
            counters_address: caustics.counters.address(),
            next_capacity: caustics.capacity,
            shadow_capacity: 0,
            elements_per_group: WORKGROUP_SIZE,
            max_groups_per_dim: rec.context().caps().max_workgroup_count,
        };
        rec.dispatch(&self.close_lists, &push, 1)?;
        rec.barrier_compute_to_compute();
        let count = Count::Device {
            buffer: &caustics.counters,
            offset: std::mem::offset_of!(BounceCounters, rays) as u64,
            max: caustics.capacity,
        };
        let gathers = GatherPoints {
            positions: Slice::whole(&caustics.positions),
            payloads: Slice::whole(&caustics.payloads),
            count,
        };
        let scratch = GatherScratch {
            radii: Slice::whole(&caustics.radii),
            found: Slice::whole(&caustics.found),
        };
        caustics
            .map
            .record_gather(rec, &gathers, &scratch, &self.radiance)
    }

    /// The any hits of the shadow rays the bounce's shading appended.
    fn record_trace_shadows(
        &self,
        rec: &mut Recorder,
        structure: &dyn Traversable,
        step: &BounceStep,
        cutouts: Option<&Buffer>,
    ) -> Result<()> {
        rec.begin_stage(&TraceStage::Shadow.label(step.bounce));
        let batch = TraversalBatch {
            query: Query::Any,
            rays: self.shadows.rays(),
            hits: self.shadows.hits(),
            work: None,
            count: self.shadow_count(step),
            cutouts,
        };
        self.tracer.record_batch(rec, structure, &batch)?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }

    /// The shadow rays of `step`'s bounce: its shadow counter on the device.
    fn shadow_count(&self, step: &BounceStep) -> Count<'_> {
        Count::Device {
            buffer: &self.counters,
            offset: step.own + std::mem::offset_of!(BounceCounters, shadow_rays) as u64,
            max: self.shadows.capacity,
        }
    }

    /// `shadow_radiance.comp`: the light of every unoccluded shadow ray.
    fn record_shadow_radiance(&self, rec: &mut Recorder, step: &BounceStep) {
        rec.begin_stage(&format!("render: shadow radiance {}", step.bounce));
        let push = ShadowRadiancePush {
            list_address: self.shadows.address(),
            count_address: self.shadow_count(step).push().0,
            radiance_address: self.radiance.address(),
            capacity: self.shadows.capacity,
            pad: 0,
        };
        let offset = step.own + std::mem::offset_of!(BounceCounters, shadow_groups) as u64;
        rec.dispatch_indirect(&self.shadow_radiance, &push, &self.counters, offset);
        rec.barrier_compute_to_compute();
        rec.end_stage();
    }

    /// `aovs.comp`, with linear output: what each camera ray hit.
    fn record_aovs(
        &self,
        rec: &mut Recorder,
        scene: &SceneGpu,
        step: &BounceStep,
        view: &PinholeView,
        sample: u32,
    ) -> Result<()> {
        let Some((pipeline, aovs)) = &self.aovs else {
            return Ok(());
        };
        rec.begin_stage("render: aovs");
        let push = AovsPush {
            scene: scene.into(),
            list_address: step.list.address(),
            aovs_address: aovs.address(),
            forward: Vec3::from(view.forward).normalize_or_zero().to_array(),
            capacity: step.list.capacity,
            pixels: self.pixels(),
            sample,
            sample_weight: self.sample_weight(),
            cone_spread: view.ray_spacing(),
        };
        rec.dispatch(pipeline, &push, self.pixels().div_ceil(WORKGROUP_SIZE))?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }

    /// `resolve.comp`: radiance to 8-bit pixels; the image and the counters copied to
    /// `output`.
    fn record_resolve(&self, rec: &mut Recorder, output: &ImageReadback) -> Result<()> {
        rec.begin_stage("render: resolve");
        let push = ResolvePush {
            radiance_address: self.radiance.address(),
            image_address: self.image.address(),
            pixels: self.pixels(),
            sample_weight: self.sample_weight(),
        };
        rec.dispatch(&self.resolve, &push, self.pixels().div_ceil(WORKGROUP_SIZE))?;
        if let Some(file) = &self.channels {
            let mut push = ChannelsPush {
                radiance_address: self.radiance.address(),
                aovs_address: self.aovs.as_ref().map_or(0, |(_, aovs)| aovs.address()),
                planes_address: file.planes.address(),
                pixels: self.pixels(),
                channel_count: file.list.len() as u32,
                channels: [0; channels::MAX_CHANNELS],
                sample_weight: self.sample_weight(),
                pad: 0,
            };
            for (word, channel) in push.channels.iter_mut().zip(&file.list) {
                *word = channel.packed();
            }
            let pairs = self.pixels().div_ceil(2);
            rec.dispatch(&file.pipeline, &push, pairs.div_ceil(WORKGROUP_SIZE))?;
        }
        rec.barrier_compute_to_transfer();
        let image_bytes = self.image_bytes();
        rec.copy_buffer(&self.image, 0, &output.buffer, 0, image_bytes);
        rec.copy_buffer(
            &self.counters,
            0,
            &output.buffer,
            image_bytes,
            self.counters.size(),
        );
        if let (Some(file), Some((_, first))) = (&self.channels, output.planes.first()) {
            let bytes = self.plane_bytes();
            rec.copy_buffer(&file.planes, 0, &output.buffer, *first as u64, bytes);
        }
        rec.barrier_transfer_to_host();
        rec.end_stage();
        Ok(())
    }
}

/// What the steps of one bounce read: its path list and the next, where its counters are,
/// and how many paths it has.
struct BounceStep<'a> {
    bounce: u32,
    list: &'a RayList,
    next: &'a RayList,
    /// Byte offset of this bounce's counters.
    own: u64,
    /// Byte offset of the previous bounce's counters (none at bounce 0).
    previous: Option<u64>,
    /// The list's length: every pixel at bounce 0, else the previous bounce's `rays` counter.
    count: Count<'a>,
}

impl<'a> BounceStep<'a> {
    fn new(renderer: &'a Renderer, bounce: u32) -> Self {
        let paths = &renderer.paths;
        let list = &paths[bounce as usize % paths.len()];
        let own = bounce as u64 * COUNTER_BYTES;
        let previous = bounce.checked_sub(1).map(|b| b as u64 * COUNTER_BYTES);
        let count = match previous {
            None => Count::Host(renderer.pixels()),
            Some(previous) => Count::Device {
                buffer: &renderer.counters,
                offset: previous + std::mem::offset_of!(BounceCounters, rays) as u64,
                max: list.capacity,
            },
        };
        Self {
            bounce,
            list,
            next: &paths[(bounce as usize + 1) % paths.len()],
            own,
            previous,
            count,
        }
    }

    /// The cone spread the bounce's hits are shaded with: the camera rays'
    /// [`PinholeView::ray_spacing`] at bounce 0, else 0 (level 0 of every texture).
    fn cone_spread(&self, view: &PinholeView) -> f32 {
        if self.bounce == 0 {
            view.ray_spacing()
        } else {
            0.0
        }
    }
}

/// The renderer's stages that trace rays, one of each per bounce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceStage {
    /// The closest hits of a bounce's path list (`trace: bounce 1`).
    Bounce,
    /// The any hits of a bounce's shadow rays (`trace: shadow 1`).
    Shadow,
}

impl TraceStage {
    /// The profiler label of this stage at `bounce`.
    pub fn label(self, bounce: u32) -> String {
        match self {
            TraceStage::Bounce => format!("trace: bounce {bounce}"),
            TraceStage::Shadow => format!("trace: shadow {bounce}"),
        }
    }
}

impl BounceStats {
    /// The rays `stage` traced at this bounce.
    pub fn rays_of(&self, stage: TraceStage) -> u32 {
        match stage {
            TraceStage::Bounce => self.rays,
            TraceStage::Shadow => self.shadow_rays,
        }
    }
}

/// The rays each tracing stage of a frame traced, by profiler label (as the renderer names
/// its stages): what a profile divides each stage's time by.
pub fn traced_rays(bounces: &[BounceStats]) -> Vec<(String, u32)> {
    bounces
        .iter()
        .enumerate()
        .flat_map(|(bounce, stats)| {
            [TraceStage::Bounce, TraceStage::Shadow]
                .map(|stage| (stage.label(bounce as u32), stats.rays_of(stage)))
        })
        .collect()
}
