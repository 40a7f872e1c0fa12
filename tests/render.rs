//! The renderer against its CPU reference on a small analytic scene (a sphere over a
//! checkered ground, a sun and a point light), and the default scene's GPU deformation
//! against the same surface on the CPU.

mod common;

use canopy::accel::bvh::Bvh;
use canopy::accel::lbvh::{LbvhBuilder, LbvhParams, TriangleInput};
use canopy::cpu::render::CpuScene;
use canopy::prims::Slice;
use canopy::render::{Camera, Light, Material, Renderer, SceneGpu, ShadingParams};
use canopy::scene::default_scene::{DefaultScene, surface_point};
use canopy::scene::{Mesh, shapes};
use canopy::vk::{Context, MemoryKind};
use common::{assert_valid, context};
use glam::Vec3;

const WIDTH: u32 = 128;
const HEIGHT: u32 = 96;

fn render_gpu(
    ctx: &Context,
    mesh: &Mesh,
    triangle_materials: &[u32],
    materials: &[Material],
    lights: &[Light],
    camera: &Camera,
    shading: &ShadingParams,
) -> Vec<u8> {
    let scene = SceneGpu::from_mesh(ctx, mesh, triangle_materials, materials, lights).unwrap();
    let n = scene.triangle_count;
    let builder = LbvhBuilder::new(ctx, LbvhParams::default(), n).unwrap();
    let mut bvh = Bvh::new(ctx, n).unwrap();
    let renderer = Renderer::new(ctx, WIDTH, HEIGHT, lights.len() as u32).unwrap();
    let image = renderer.readback(ctx).unwrap();
    ctx.submit_and_wait(|rec| {
        let input = TriangleInput {
            positions: Slice::whole(&scene.positions),
            triangles: Slice::whole(&scene.triangles),
            count: n,
        };
        builder.record(rec, &input, &mut bvh)?;
        renderer.record(rec, &scene, &bvh, camera, shading, &image)
    })
    .unwrap();
    assert_valid(ctx);
    image.rgba8().to_vec()
}

/// Tolerance: a pixel matches when every channel is within 2 of the CPU's (pow and division
/// round differently on the GPU); at most 1% of pixels may differ more, where a ray grazes a
/// silhouette or a shadow edge and the two pick different triangles.
fn compare_images(gpu: &[u8], cpu: &[u8]) -> (usize, f64) {
    let mut off = 0;
    let mut total = 0u64;
    for (g, c) in gpu.chunks(4).zip(cpu.chunks(4)) {
        let worst = (0..3).map(|i| g[i].abs_diff(c[i])).max().unwrap();
        off += (worst > 2) as usize;
        total += (0..3).map(|i| g[i].abs_diff(c[i]) as u64).sum::<u64>();
    }
    (off, total as f64 / (gpu.len() / 4 * 3) as f64)
}

#[test]
fn sphere_over_ground_matches_cpu_render() {
    let ctx = context();
    let mut mesh = shapes::uv_sphere([0.0, 1.0, 0.0], 1.0, 24);
    let sphere_triangles = mesh.triangle_count();
    mesh.append(&shapes::ground_square([0.0, 0.0, 0.0], 4.0));
    let mut triangle_materials = vec![0u32; sphere_triangles];
    triangle_materials.extend([1, 1]);
    let materials = [
        Material {
            albedo: [0.9, 0.3, 0.2],
            checker_scale: 0.0,
        },
        Material {
            albedo: [0.8, 0.8, 0.8],
            checker_scale: 0.5,
        },
    ];
    let lights = [
        Light::Directional {
            direction: Vec3::new(-0.5, -1.0, -0.2),
            intensity: Vec3::splat(0.8),
        },
        Light::Point {
            position: Vec3::new(2.0, 3.0, 2.0),
            intensity: Vec3::splat(6.0),
        },
    ];
    let camera = Camera::orbit(Vec3::new(0.0, 0.8, 0.0), 5.0, 30.0, 25.0, 45.0);
    let shading = ShadingParams {
        ambient: 0.1,
        surface_offset: 1e-4,
    };
    let gpu = render_gpu(
        &ctx,
        &mesh,
        &triangle_materials,
        &materials,
        &lights,
        &camera,
        &shading,
    );
    let cpu = CpuScene {
        positions: &mesh.positions,
        normals: &mesh.normals,
        triangles: &mesh.triangles,
        triangle_materials: &triangle_materials,
        materials: &materials,
        lights: &lights,
    }
    .render(&camera, WIDTH, HEIGHT, &shading);
    let (off, mean) = compare_images(&gpu, &cpu);
    println!("{off} pixels off by more than 2, mean difference {mean:.4}");
    let pixels = (WIDTH * HEIGHT) as usize;
    assert!(
        off * 100 <= pixels,
        "{off} of {pixels} pixels differ by more than 2"
    );
    assert!(mean < 0.5, "mean channel difference {mean}");

    // Not blank: sky, a lit and a shadowed sphere, checkered ground and a cast shadow.
    let mut colours: Vec<[u8; 4]> = gpu.chunks(4).map(|p| [p[0], p[1], p[2], p[3]]).collect();
    colours.sort();
    colours.dedup();
    assert!(
        colours.len() > 200,
        "only {} distinct colours",
        colours.len()
    );
    let red = gpu
        .chunks(4)
        .filter(|p| p[0] as u32 > p[1] as u32 + 60)
        .count();
    assert!(red > pixels / 20, "the sphere covers only {red} pixels");
    let dark_ground = gpu
        .chunks(4)
        .filter(|p| p[0] == p[1] && p[1] == p[2] && p[0] < 90)
        .count();
    assert!(dark_ground > 0, "no shadow on the ground");
}

#[test]
fn default_scene_deforms_as_on_the_cpu() {
    let ctx = context();
    let scene = DefaultScene::new(&ctx, 20_000).unwrap();
    let n = scene.vertex_count();
    let positions = ctx
        .create_buffer("positions", n as u64 * 12, MemoryKind::Device)
        .unwrap();
    let normals = ctx
        .create_buffer("normals", n as u64 * 12, MemoryKind::Device)
        .unwrap();
    for time in [0.0, 1.25, 7.5] {
        ctx.submit_and_wait(|rec| {
            scene.record(rec, &positions, &normals, time);
            Ok(())
        })
        .unwrap();
        let got: Vec<[f32; 3]> = ctx.download(&positions, 0, n as usize).unwrap();
        let got_normals: Vec<[f32; 3]> = ctx.download(&normals, 0, n as usize).unwrap();
        for i in 0..n {
            let expected = scene.vertex(i, time);
            let p = got[i as usize];
            let error = (0..3)
                .map(|a| (p[a] - expected[a]).abs())
                .fold(0.0, f32::max);
            assert!(error < 1e-4, "t={time} vertex {i}: {p:?} vs {expected:?}");
            // The normal is the surface's: the cross product of central differences in v and
            // u, as on the CPU (ground corners point up).
            let normal = Vec3::from(got_normals[i as usize]);
            let expected_normal = if i < scene.segments_u * scene.segments_v {
                let tau = std::f32::consts::TAU;
                let u = tau * (i % scene.segments_u) as f32 / scene.segments_u as f32;
                let v = tau * (i / scene.segments_u) as f32 / scene.segments_v as f32;
                let at = |u: f32, v: f32| Vec3::from(surface_point(u, v, time));
                let h = 1e-3;
                let du = at(u + h, v) - at(u - h, v);
                let dv = at(u, v + h) - at(u, v - h);
                dv.cross(du).normalize()
            } else {
                Vec3::Y
            };
            assert!(
                (normal.length() - 1.0).abs() < 1e-3 && normal.dot(expected_normal) > 0.999,
                "t={time} normal {i}: {normal} vs {expected_normal}"
            );
        }
    }
    let (triangles, materials) = scene.topology();
    assert_eq!(triangles.len() as u32, scene.triangle_count());
    assert_eq!(materials.len(), triangles.len());
    assert!(triangles.iter().flatten().all(|&v| v < n));
    assert_valid(&ctx);
}
