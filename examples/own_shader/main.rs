//! canopy's BVH traced from the application's own shader: the application builds an LBVH with
//! canopy, compiles its own compute kernel (`examples/own_shader/trace.comp`, which includes
//! `glsl/include/canopy_trace.glsl` from [`canopy::GLSL_DIR`]) with `glslc`, makes its own
//! pipeline on canopy's device with ash, and records its dispatch after canopy's build in one
//! command buffer. The kernel takes the application's camera rays and writes, per ray, the
//! closest hit, whether anything is hit and how many surfaces the ray crosses (every hit, to
//! the application's callback), and shades the closest hit with a sun and its shadow ray. The
//! same scene as one instance under a two-level tree ([`TwoLevelBvh`]) is traced too, through
//! the include's `canopy_trace_instances_closest` and `_any`: the same hits. Then 300 spheres,
//! primitives canopy cannot intersect, go into a tree of their boxes
//! ([`BoxTreeBuilder`]), and the application's second kernel (`spheres.comp`) traces the same
//! rays through it, intersecting each sphere whose box a ray reaches itself; checked against
//! every sphere crossed on the CPU.
//! Every answer is checked against brute force, and the shaded image is written as a PGM.
//!
//! `cargo run --release --example own_shader -- [IMAGE.pgm]` (default `own_shader.pgm`); exits
//! non-zero on a wrong answer, a compile error or a validation error.

use ash::vk;
use canopy::accel::bvh::Bvh;
use canopy::accel::bvh::boxes::BoxTreeBuilder;
use canopy::accel::bvh::instances::{Instance, ShaderInstances, TwoLevelBvh};
use canopy::accel::bvh::lbvh::{LbvhBuilder, LbvhParams};
use canopy::geom::TriangleInput;
use canopy::geom::ray::{Ray, closest_hit_brute_force, intersect_triangle};
use canopy::render::Camera;
use canopy::scene::{Mesh, shapes};
use canopy::vk::{Context, ContextOptions, MemoryKind, Slice, Validation};
use glam::Vec3;
use std::error::Error;
use std::path::Path;

const WIDTH: u32 = 160;
const HEIGHT: u32 = 120;
const TMAX: f32 = 1e30;

/// The kernel's push constants (`Push` in trace.comp).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    nodes: u64,
    leaves: u64,
    rays: u64,
    positions: u64,
    triangles: u64,
    pixels: u64,
    primitive_count: u32,
    ray_count: u32,
    scene: ShaderInstances,
}

/// What the kernel writes per ray (`PixelOut` in trace.comp).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct PixelOut {
    t: f32,
    triangle: u32,
    u: f32,
    v: f32,
    any_hit: u32,
    crossed: u32,
    grey: f32,
    pad: u32,
    /// Through the two-level tree: the closest hit's t and triangle, and any hit.
    instances_t: f32,
    instances_triangle: u32,
    instances_any_hit: u32,
    pad2: u32,
}

/// The application's compute pipeline: its module, layout and pipeline, destroyed on drop.
struct AppPipeline<'a> {
    device: &'a ash::Device,
    module: vk::ShaderModule,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
}

impl<'a> AppPipeline<'a> {
    /// A pipeline of the SPIR-V `words` whose push constants are a `P`.
    fn new<P>(device: &'a ash::Device, words: &[u32]) -> Result<Self, vk::Result> {
        let info = vk::ShaderModuleCreateInfo::default().code(words);
        let module = unsafe { device.create_shader_module(&info, None)? };
        let range = vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(size_of::<P>() as u32);
        let info = vk::PipelineLayoutCreateInfo::default()
            .push_constant_ranges(std::slice::from_ref(&range));
        let layout = unsafe { device.create_pipeline_layout(&info, None)? };
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        let info = vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(layout);
        let pipeline =
            unsafe { device.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) }
                .map_err(|(_, e)| e)?[0];
        Ok(Self {
            device,
            module,
            layout,
            pipeline,
        })
    }
}

impl AppPipeline<'_> {
    /// Records the kernel over `invocations` (in workgroups of 64) into `cmd`, with `push` as
    /// its push constants.
    fn record<P: bytemuck::Pod>(&self, cmd: vk::CommandBuffer, push: &P, invocations: u32) {
        unsafe {
            self.device
                .cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, self.pipeline);
            self.device.cmd_push_constants(
                cmd,
                self.layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                bytemuck::bytes_of(push),
            );
            self.device
                .cmd_dispatch(cmd, invocations.div_ceil(64), 1, 1);
        }
    }
}

impl Drop for AppPipeline<'_> {
    fn drop(&mut self) {
        unsafe {
            self.device.destroy_pipeline(self.pipeline, None);
            self.device.destroy_pipeline_layout(self.layout, None);
            self.device.destroy_shader_module(self.module, None);
        }
    }
}

/// The application's kernel `name` (in examples/own_shader/) compiled by `glslc` with
/// canopy's GLSL on the include path.
fn compile_kernel(name: &str) -> Result<Vec<u32>, Box<dyn Error>> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/own_shader")
        .join(name);
    let output = tempfile::NamedTempFile::new()?;
    let status = std::process::Command::new("glslc")
        .args(["--target-env=vulkan1.2", "-O", "-I", canopy::GLSL_DIR])
        .arg(&source)
        .arg("-o")
        .arg(output.path())
        .status()
        .map_err(|e| format!("glslc (the shaderc package) could not be run: {e}"))?;
    if !status.success() {
        return Err(format!("glslc could not compile {}", source.display()).into());
    }
    Ok(ash::util::read_spv(&mut std::fs::File::open(
        output.path(),
    )?)?)
}

/// Three spheres, one inside another, over a ground.
fn scene() -> Mesh {
    let mut mesh = shapes::ground_square([0.0, 0.0, 0.0], 3.0);
    for (centre, radius) in [
        ([0.0, 0.8, 0.0], 0.8),
        ([0.0, 0.8, 0.0], 0.4),
        ([1.4, 0.5, 0.7], 0.5),
    ] {
        mesh.append(&shapes::uv_sphere(centre, radius, 16));
    }
    mesh
}

fn main() -> Result<(), Box<dyn Error>> {
    let image_path = std::env::args().nth(1).unwrap_or("own_shader.pgm".into());
    let ctx = Context::new(&ContextOptions {
        validation: Validation::IfAvailable,
        ..ContextOptions::default()
    })?;
    let mesh = scene();
    let n = mesh.triangle_count() as u32;
    let camera = Camera::orbit(Vec3::new(0.1, 0.6, 0.05), 4.5, 35.0, 20.0, 45.0);
    let rays: Vec<Ray> = (0..HEIGHT)
        .flat_map(|y| (0..WIDTH).map(move |x| (x, y)))
        .map(|(x, y)| Ray {
            tmax: TMAX,
            ..camera.primary_ray(x, y, WIDTH, HEIGHT)
        })
        .collect();

    let positions = ctx.create_buffer_with("app positions", &mesh.positions)?;
    let triangles = ctx.create_buffer_with("app triangles", &mesh.triangles)?;
    let ray_buffer = ctx.create_buffer_with("app rays", &rays)?;
    let pixel_bytes = rays.len() as u64 * size_of::<PixelOut>() as u64;
    let pixels = ctx.create_buffer("app pixels", pixel_bytes, MemoryKind::Device)?;
    let builder = LbvhBuilder::new(&ctx, LbvhParams::default(), n)?;
    let mut bvh = Bvh::new(&ctx, n)?;
    // The same scene as one instance of the mesh, under a top tree.
    let mut two_level = TwoLevelBvh::new(&ctx, 1)?;
    let pipeline = AppPipeline::new::<Push>(ctx.device(), &compile_kernel("trace.comp")?)?;

    ctx.submit_and_wait(|rec| {
        builder.record(
            rec,
            &TriangleInput::whole(&positions, &triangles, n),
            &mut bvh,
        )?;
        rec.barrier_compute_to_compute();
        two_level.record_build(rec, &[&bvh], &[Instance::new(0, Instance::IDENTITY)])?;
        let push = Push {
            nodes: bvh.nodes.address(),
            leaves: bvh.leaf_triangles.address(),
            rays: ray_buffer.address(),
            positions: positions.address(),
            triangles: triangles.address(),
            pixels: pixels.address(),
            primitive_count: n,
            ray_count: rays.len() as u32,
            scene: two_level.shader_view(),
        };
        pipeline.record(rec.command_buffer(), &push, rays.len() as u32);
        Ok(())
    })?;
    let got: Vec<PixelOut> = ctx.download(&pixels, 0, rays.len())?;
    drop(pipeline);

    // Every ray against brute force: the closest hit (triangle and t), any hit, and the
    // count of every hit in (0, tmax).
    let mut wrong = 0;
    for (ray, out) in rays.iter().zip(&got) {
        let closest = closest_hit_brute_force(&mesh.positions, &mesh.triangles, ray);
        let crossed = mesh
            .triangles
            .iter()
            .filter(|t| {
                let [a, b, c] = t.map(|i| mesh.positions[i as usize]);
                intersect_triangle(ray, a, b, c).is_some_and(|(t, _, _)| t > 0.0 && t < TMAX)
            })
            .count() as u32;
        let same_closest = out.triangle == closest.triangle
            && (out.t - closest.t).abs() <= 1e-6 * closest.t.abs().max(1.0);
        let same_instances = (
            out.instances_t,
            out.instances_triangle,
            out.instances_any_hit,
        ) == (out.t, out.triangle, out.any_hit);
        let same = same_closest
            && (out.any_hit == 1) == closest.is_hit()
            && out.crossed == crossed
            && same_instances;
        if !same && wrong < 5 {
            eprintln!("ray {ray:?}: got {out:?}, brute force {closest:?} and {crossed} hits");
        }
        wrong += !same as usize;
    }
    let most_crossed = got.iter().map(|p| p.crossed).max().unwrap_or(0);
    let grey: Vec<u8> = got
        .iter()
        .map(|p| (p.grey.clamp(0.0, 1.0) * 255.0) as u8)
        .collect();
    let mut pgm = format!("P5\n{WIDTH} {HEIGHT}\n255\n").into_bytes();
    pgm.extend(grey);
    std::fs::write(&image_path, pgm)?;
    println!(
        "{n} triangles, {} rays traced by the application's kernel on {}: {wrong} differing \
         from brute force (closest, any, every hit, and through two levels; up to {most_crossed} \
         surfaces crossed); \
         image {image_path}",
        rays.len(),
        ctx.caps().name
    );
    let wrong_spheres = trace_spheres(&ctx, &rays)?;
    ctx.check_validation()?;
    if wrong > 0 || wrong_spheres > 0 {
        return Err(format!(
            "{wrong} rays differ from brute force through the triangles, {wrong_spheres} \
             through the spheres"
        )
        .into());
    }
    Ok(())
}

/// The push constants of spheres.comp.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SpheresPush {
    nodes: u64,
    leaves: u64,
    spheres: u64,
    rays: u64,
    out: u64,
    sphere_count: u32,
    ray_count: u32,
}

/// What spheres.comp writes per ray.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct SphereOut {
    t: f32,
    sphere: u32,
    any_hit: u32,
    crossed: u32,
}

/// Where `ray` crosses `sphere` (centre, radius) in (tmin, tmax), nearer crossing first, as
/// spheres.comp computes it; with whether the ray all but grazes it (a discriminant within
/// rounding of 0, where the GPU and the CPU may decide apart).
fn cross_sphere(ray: &Ray, [x, y, z, r]: [f32; 4]) -> (Option<f32>, bool) {
    let to_origin = Vec3::from(ray.origin) - Vec3::new(x, y, z);
    let direction = Vec3::from(ray.direction);
    let (a, b) = (direction.dot(direction), to_origin.dot(direction));
    let c = to_origin.dot(to_origin) - r * r;
    let discriminant = b * b - a * c;
    let grazing = discriminant.abs() <= 4e-6 * (b * b).max(a * c.abs());
    if discriminant < 0.0 {
        return (None, grazing);
    }
    let root = discriminant.sqrt();
    let (near, far) = ((-b - root) / a, (-b + root) / a);
    let crossing = if near > ray.tmin { near } else { far };
    (
        (crossing > ray.tmin && crossing < ray.tmax).then_some(crossing),
        grazing,
    )
}

/// 300 spheres as primitives only the application intersects: canopy builds a tree over their
/// boxes (BoxTreeBuilder) and spheres.comp traces `rays` through it from the application's own
/// kernel; the closest sphere, any hit and the count of spheres met are checked against every
/// sphere crossed on the CPU. Returns how many rays differ (rays grazing a sphere aside).
fn trace_spheres(ctx: &Context, rays: &[Ray]) -> Result<usize, Box<dyn Error>> {
    let mut rng = canopy::rng::Rng::new(40);
    let spheres: Vec<[f32; 4]> = (0..300)
        .map(|_| {
            [
                rng.f32_in(-2.5, 2.5),
                rng.f32_in(0.0, 2.0),
                rng.f32_in(-2.5, 2.5),
                rng.f32_in(0.05, 0.3),
            ]
        })
        .collect();
    let boxes: Vec<[[f32; 3]; 2]> = spheres
        .iter()
        .map(|&[x, y, z, r]| [[x - r, y - r, z - r], [x + r, y + r, z + r]])
        .collect();
    let n = spheres.len() as u32;
    let box_buffer = ctx.create_buffer_with("app sphere boxes", &boxes)?;
    let sphere_buffer = ctx.create_buffer_with("app spheres", &spheres)?;
    let ray_buffer = ctx.create_buffer_with("app rays", rays)?;
    let out_bytes = rays.len() as u64 * size_of::<SphereOut>() as u64;
    let out = ctx.create_buffer("app sphere hits", out_bytes, MemoryKind::Device)?;
    let builder = BoxTreeBuilder::new(ctx, n)?;
    let mut tree = Bvh::new(ctx, n)?;
    let pipeline = AppPipeline::new::<SpheresPush>(ctx.device(), &compile_kernel("spheres.comp")?)?;
    ctx.submit_and_wait(|rec| {
        builder.record(rec, Slice::whole(&box_buffer), n, &mut tree)?;
        let push = SpheresPush {
            nodes: tree.nodes.address(),
            leaves: tree.leaf_triangles.address(),
            spheres: sphere_buffer.address(),
            rays: ray_buffer.address(),
            out: out.address(),
            sphere_count: n,
            ray_count: rays.len() as u32,
        };
        pipeline.record(rec.command_buffer(), &push, rays.len() as u32);
        Ok(())
    })?;
    let got: Vec<SphereOut> = ctx.download(&out, 0, rays.len())?;
    drop(pipeline);
    let (mut wrong, mut grazing, mut hit) = (0, 0, 0);
    for (ray, out) in rays.iter().zip(&got) {
        let crossings: Vec<(Option<f32>, bool)> =
            spheres.iter().map(|&s| cross_sphere(ray, s)).collect();
        if crossings.iter().any(|c| c.1) {
            grazing += 1;
            continue;
        }
        let closest = crossings
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.0.map(|t| (t, i as u32)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let crossed = crossings.iter().filter(|c| c.0.is_some()).count() as u32;
        hit += closest.is_some() as usize;
        let same = match closest {
            Some((t, _)) => (out.t - t).abs() <= 1e-5 * t.abs().max(1.0),
            None => out.sphere == canopy::MISS,
        } && (out.any_hit == 1) == closest.is_some()
            && out.crossed == crossed;
        if !same && wrong < 5 {
            eprintln!("ray {ray:?}: got {out:?}, on the CPU {closest:?} and {crossed} spheres");
        }
        wrong += !same as usize;
    }
    println!(
        "{n} spheres, each in a box of canopy's tree and intersected by the application's \
         kernel: {} rays, {hit} hitting a sphere, {wrong} differing from every sphere crossed \
         on the CPU ({grazing} grazing a sphere, not compared)",
        rays.len()
    );
    if grazing * 50 > rays.len() || hit * 20 < rays.len() {
        return Err(
            format!("{grazing} rays graze and {hit} hit: the spheres were not seen").into(),
        );
    }
    Ok(wrong)
}
