//! Caustics by photon mapping (seed 000 §5.3): the GPU's photons against the CPU reference
//! (same random numbers: the same photons stored, within the rounding of two traversals), energy
//! never gained, a glass sphere focusing a point light into a caustic below it, the radiance
//! estimate against brute force over the same photons, a scene without mirrors or glass
//! storing nothing and rendering as without caustics, and bad parameters.

use crate::common;

use canopy::accel::pointkd::knn::KnnFound;
use canopy::accel::{BuildParams, StructureKind, StructureSize, submit_until_complete};
use canopy::render::cpu::CpuScene;
use canopy::render::photons::cpu::{Photon, estimate, trace_photons};
use canopy::render::photons::{GatherPoints, GatherScratch, PhotonMap, PhotonParams, PhotonStats};
use canopy::render::{
    Camera, Light, Material, RayPayload, RenderParams, Renderer, SceneGpu, ShadingParams, Surfaces,
};
use canopy::scene::{Mesh, TextureRef, shapes};
use canopy::vk::{Context, Count, MemoryKind, Slice};
use common::{assert_valid, context};
use glam::Vec3;

const OFFSET: f32 = 1e-4;

/// Spheres (centre, radius, material) over a ground square (material 0) under `lights`.
struct Stage {
    mesh: Mesh,
    triangle_materials: Vec<u32>,
    materials: Vec<Material>,
    lights: Vec<Light>,
}

impl Stage {
    fn new(spheres: &[([f32; 3], f32, u32)], materials: Vec<Material>, lights: Vec<Light>) -> Self {
        let mut mesh = shapes::ground_square([0.0, 0.0, 0.0], 4.0);
        let mut triangle_materials = vec![0u32, 0];
        for &(centre, radius, material) in spheres {
            let sphere = shapes::uv_sphere(centre, radius, 32);
            triangle_materials.extend(vec![material; sphere.triangle_count()]);
            mesh.append(&sphere);
        }
        Self {
            mesh,
            triangle_materials,
            materials,
            lights,
        }
    }

    /// A glass and a mirror sphere under a sun and a point light.
    fn glass_and_mirror() -> Self {
        Self::new(
            &[([-0.8, 0.7, 0.0], 0.6, 1), ([0.9, 0.6, 0.3], 0.5, 2)],
            vec![
                Material::checker([0.8, 0.8, 0.8], 0.5),
                Material::glass(1.5, [1.0, 0.95, 0.9]),
                Material::mirror([0.9, 0.9, 0.9]),
            ],
            vec![
                Light::Directional {
                    direction: Vec3::new(-0.3, -1.0, -0.2),
                    intensity: Vec3::splat(0.8),
                },
                Light::Point {
                    position: Vec3::new(1.5, 3.0, 1.0),
                    intensity: Vec3::splat(6.0),
                },
            ],
        )
    }

    /// A metallic sphere (70% metal, gold-tinted) and a glass one over the ground.
    fn metal_and_glass() -> Self {
        let glass_and_mirror = Self::glass_and_mirror();
        Self::new(
            &[([-0.8, 0.7, 0.0], 0.6, 1), ([0.9, 0.6, 0.3], 0.5, 2)],
            vec![
                Material::checker([0.8, 0.8, 0.8], 0.5),
                Material::glass(1.5, [1.0, 0.95, 0.9]),
                Material::diffuse([0.9, 0.7, 0.3]).with_metal(0.7, 0.0, TextureRef::NONE),
            ],
            glass_and_mirror.lights,
        )
    }

    fn cpu(&self) -> CpuScene<'_> {
        CpuScene {
            positions: &self.mesh.positions,
            normals: &self.mesh.normals,
            triangles: &self.mesh.triangles,
            surfaces: Surfaces::untextured(&self.triangle_materials, &self.materials),
            lights: &self.lights,
            environment: None,
        }
    }

    fn gpu(&self, ctx: &Context) -> SceneGpu {
        SceneGpu::from_mesh(
            ctx,
            &self.mesh,
            &Surfaces::untextured(&self.triangle_materials, &self.materials),
            &self.lights,
        )
        .unwrap()
    }

    /// The GPU's photons through `through`: the stored ones and the counts.
    fn gpu_photons(
        &self,
        ctx: &Context,
        params: PhotonParams,
        through: StructureKind,
    ) -> (PhotonMap, Vec<Photon>, PhotonStats) {
        let scene = self.gpu(ctx);
        let map = PhotonMap::new(ctx, params).unwrap();
        let size = StructureSize {
            triangles: scene.triangle_count,
            vertices: scene.vertex_count,
        };
        let mut structure = through
            .create(ctx, &BuildParams::default(), size, 1)
            .unwrap()
            .into_rays()
            .unwrap();
        let input = scene.input();
        submit_until_complete(ctx, structure.as_mut(), |rec, structure| {
            structure.record_build(rec, &input, 0)?;
            let tree = structure.traversable(&input);
            map.record_photons(rec, &scene, tree.as_ref(), OFFSET, 0)
        })
        .unwrap();
        let stats = map.stats(ctx).unwrap();
        let n = stats.counters.stored as usize;
        let (positions, powers) = map.stored();
        let positions: Vec<[f32; 3]> = ctx.download(positions, 0, n).unwrap();
        let powers: Vec<[f32; 3]> = ctx.download(powers, 0, n).unwrap();
        let stored = positions
            .iter()
            .zip(&powers)
            .map(|(&p, &w)| Photon {
                position: Vec3::from(p),
                power: Vec3::from(w),
            })
            .collect();
        (map, stored, stats)
    }
}

/// `scene` rendered at `size` through an LBVH, with caustics of `caustics` when given.
fn render(
    ctx: &Context,
    (scene, camera): (&SceneGpu, &Camera),
    (width, height): (u32, u32),
    caustics: Option<PhotonParams>,
) -> Vec<u8> {
    let lights = scene.light_count;
    let mut renderer = Renderer::new(ctx, width, height, lights, RenderParams::default()).unwrap();
    if let Some(params) = caustics {
        renderer.enable_caustics(ctx, params).unwrap();
    }
    let image = renderer.readback(ctx).unwrap();
    let size = StructureSize {
        triangles: scene.triangle_count,
        vertices: scene.vertex_count,
    };
    let mut structure = StructureKind::Lbvh
        .create(ctx, &BuildParams::default(), size, 1)
        .unwrap()
        .into_rays()
        .unwrap();
    let input = scene.input();
    let shading = ShadingParams {
        ambient: 0.1,
        surface_offset: OFFSET,
    };
    submit_until_complete(ctx, structure.as_mut(), |rec, structure| {
        structure.record_build(rec, &input, 0)?;
        let tree = structure.traversable(&input);
        renderer.record(rec, scene, tree.as_ref(), camera, &shading, &image)
    })
    .unwrap();
    image.rgba8().to_vec()
}

fn params(photons: u32) -> PhotonParams {
    PhotonParams {
        photons,
        ..PhotonParams::with_max_radius(0.2)
    }
}

fn total(photons: &[Photon]) -> Vec3 {
    photons.iter().map(|p| p.power).sum()
}

#[test]
fn gpu_photons_follow_the_cpu_reference() {
    let ctx = context();
    let params = params(20_000);
    // Metal reflects photons as mirrors do, with its metallic share's probability.
    let stages = [
        ("glass and mirror", Stage::glass_and_mirror()),
        ("metal and glass", Stage::metal_and_glass()),
    ];
    for ((name, stage), through) in stages
        .iter()
        .flat_map(|s| [(s, StructureKind::Lbvh), (s, StructureKind::KdTree)])
    {
        let cpu = trace_photons(&stage.cpu(), &params, OFFSET, params.seed);
        let (_, gpu, stats) = stage.gpu_photons(&ctx, params, through);
        let label = format!("{name}, {through:?}");
        assert_eq!(stats.counters.emitters, cpu.emitters, "{label}");
        assert_eq!(stats.counters.emitted, cpu.emitted, "{label}");
        // The same photons up to a few whose paths the two traversals round apart.
        let (g, c) = (gpu.len() as f64, cpu.stored.len() as f64);
        assert!(c > 1000.0, "{label}: {c} stored on the CPU");
        assert!((g - c).abs() <= 0.01 * c, "{label}: {g} stored, CPU {c}");
        for (a, b) in total(&gpu)
            .to_array()
            .iter()
            .zip(total(&cpu.stored).to_array())
        {
            assert!(
                (a - b).abs() <= 0.01 * b,
                "{label}: stored power {a}, CPU {b}"
            );
        }
        // Each of a sample of CPU photons has a GPU photon at its place with its power.
        let matched = cpu
            .stored
            .iter()
            .step_by(17)
            .filter(|c| {
                gpu.iter().any(|g| {
                    (g.position - c.position).length() < 1e-3
                        && (g.power - c.power).abs().max_element() <= 1e-4 * c.power.max_element()
                })
            })
            .count();
        let sampled = cpu.stored.len().div_ceil(17);
        assert!(
            matched as f64 >= 0.98 * sampled as f64,
            "{label}: {matched} of {sampled} CPU photons found on the GPU"
        );
        assert_eq!(stats.scattered.len(), params.bounces as usize + 1);
    }
    assert_valid(&ctx);
}

#[test]
fn no_photon_gains_power() {
    let stage = Stage::glass_and_mirror();
    let params = params(20_000);
    let cpu = trace_photons(&stage.cpu(), &params, OFFSET, 7);
    let emitted = cpu.emitted_power;
    let stored = total(&cpu.stored);
    assert!(stored.cmple(emitted).all(), "stored {stored} of {emitted}");
    // A photon carries at most its pair's share: mirrors and glass only take power away.
    let ctx = context();
    let (_, gpu, _) = stage.gpu_photons(&ctx, params, StructureKind::Lbvh);
    let share = cpu.photon_powers.iter().fold(Vec3::ZERO, |a, &b| a.max(b)) * 1.000_01;
    for p in gpu.iter().chain(&cpu.stored) {
        assert!(p.power.cmple(share).all(), "{p:?} over {share}");
    }
    assert!(total(&gpu).cmple(emitted * 1.0001).all());
    assert_valid(&ctx);
}

/// A glass sphere of radius 0.5 whose focus (a ball lens: n R / (2 (n - 1)) = 1.5 R from its
/// centre) lies on the ground, under a point light far above.
fn lens() -> Stage {
    Stage::new(
        &[([0.0, 0.75, 0.0], 0.5, 1)],
        vec![
            Material::diffuse([0.8, 0.8, 0.8]),
            Material::glass(1.5, [1.0, 1.0, 1.0]),
        ],
        vec![Light::Point {
            position: Vec3::new(0.0, 12.0, 0.0),
            intensity: Vec3::splat(100.0),
        }],
    )
}

#[test]
fn a_glass_sphere_focuses_a_caustic_below_it() {
    let ctx = context();
    let stage = lens();
    let params = params(30_000);
    let (map, stored, stats) = stage.gpu_photons(&ctx, params, StructureKind::Lbvh);
    assert_eq!(stats.counters.emitters, 1);
    // Most of the light that passes through lands near the focus.
    let near = |p: &Photon| Vec3::new(p.position.x, 0.0, p.position.z).length() < 0.15;
    let focused: f32 = stored.iter().filter(|p| near(p)).map(|p| p.power.x).sum();
    let all: f32 = stored.iter().map(|p| p.power.x).sum();
    assert!(focused > 0.5 * all, "{focused} of {all} near the focus");
    // The photons are aimed at the sphere's bounding sphere (the sphere itself, up to its
    // tessellation), so the power stored is the emitted power times the transmission through
    // two surfaces (about 0.92 near the axis, less at grazing angles), with what the Fresnel
    // choices reflect lost.
    let cpu = trace_photons(&stage.cpu(), &params, OFFSET, params.seed);
    let ratio = all / cpu.emitted_power.x;
    assert!((0.75..0.95).contains(&ratio), "stored / emitted {ratio}");

    // The estimate: bright at the focus, nothing far from it, and equal to brute force over
    // the same photons.
    let queries: Vec<[f32; 3]> = (0..40)
        .map(|i| [-1.0 + 0.05 * i as f32, 0.0, 0.013 * i as f32])
        .chain([[3.0, 0.0, 3.0]])
        .collect();
    // The searches start from the largest radius (the default), then from Alg. 7's estimates.
    let estimated = PhotonParams {
        estimated_radii: true,
        ..params
    };
    let (estimated_map, estimated_stored, _) =
        stage.gpu_photons(&ctx, estimated, StructureKind::Lbvh);
    let maps = [
        (&map, &stored, "bound"),
        (&estimated_map, &estimated_stored, "estimated"),
    ];
    for (map, stored, label) in maps {
        let radiance = gather(&ctx, map, &queries);
        for (i, q) in queries.iter().enumerate() {
            let want = estimate(stored, Vec3::from(*q), params.k as usize, params.max_radius);
            let got = radiance[i];
            assert!(
                (got - want).abs().max_element() <= 0.01 * want.max_element() + 1e-4,
                "{label} radii: query {i} at {q:?}: GPU {got}, brute force {want}"
            );
        }
        let focus = radiance[20].x;
        assert!(
            focus > 10.0 * radiance[0].x.max(1e-3),
            "{label} radii: focus {focus}, edge {}",
            radiance[0]
        );
        assert_eq!(
            radiance[40],
            Vec3::ZERO,
            "{label} radii: far from every photon"
        );
    }
    assert_valid(&ctx);
}

/// The caustic radiance `map` gathers at `queries` (weight 1 each, one pixel each).
fn gather(ctx: &Context, map: &PhotonMap, queries: &[[f32; 3]]) -> Vec<Vec3> {
    let n = queries.len() as u32;
    let positions = ctx.create_buffer_with("gathers", queries).unwrap();
    let payloads: Vec<RayPayload> = (0..n)
        .map(|pixel| RayPayload {
            weight: [1.0; 3],
            pixel,
        })
        .collect();
    let payloads = ctx.create_buffer_with("payloads", &payloads).unwrap();
    let count = ctx.create_buffer_with("count", &[n]).unwrap();
    let device =
        |name: &str, bytes: u64| ctx.create_buffer(name, bytes, MemoryKind::Device).unwrap();
    let (radii, found) = (device("radii", n as u64 * 4), device("found", n as u64 * 8));
    let radiance = ctx
        .create_buffer_with("radiance", &vec![0u64; 3 * n as usize])
        .unwrap();
    let counted = Count::Device {
        buffer: &count,
        offset: 0,
        max: n,
    };
    ctx.submit_and_wait(|rec| {
        let gathers = GatherPoints {
            positions: Slice::whole(&positions),
            payloads: Slice::whole(&payloads),
            count: counted,
        };
        let scratch = GatherScratch {
            radii: Slice::whole(&radii),
            found: Slice::<KnnFound>::whole(&found),
        };
        map.record_gather(rec, &gathers, &scratch, &radiance)
    })
    .unwrap();
    let sums: Vec<u64> = ctx.download(&radiance, 0, 3 * n as usize).unwrap();
    sums.chunks(3)
        .map(|c| Vec3::new(c[0] as f32, c[1] as f32, c[2] as f32) / canopy::render::RADIANCE_SCALE)
        .collect()
}

#[test]
fn a_scene_without_mirrors_or_glass_stores_nothing_and_renders_alike() {
    let ctx = context();
    let stage = Stage::new(
        &[([0.0, 0.6, 0.0], 0.6, 1)],
        vec![
            Material::checker([0.8, 0.8, 0.8], 0.5),
            Material::diffuse([0.7, 0.3, 0.2]),
        ],
        Stage::glass_and_mirror().lights,
    );
    let (_, stored, stats) = stage.gpu_photons(&ctx, params(5000), StructureKind::Lbvh);
    assert_eq!((stats.counters.emitters, stats.counters.emitted), (0, 0));
    assert!(stored.is_empty());
    let scene = stage.gpu(&ctx);
    let camera = Camera::orbit(Vec3::new(0.0, 0.5, 0.0), 4.0, 20.0, 25.0, 45.0);
    let view = (&scene, &camera);
    let with = render(&ctx, view, (64, 48), Some(params(5000)));
    assert_eq!(with, render(&ctx, view, (64, 48), None));
    assert_valid(&ctx);
}

#[test]
fn caustics_brighten_the_ground_below_a_glass_sphere() {
    let ctx = context();
    let stage = lens();
    let scene = stage.gpu(&ctx);
    // Looking straight down at the focus.
    let camera = Camera::orbit(Vec3::ZERO, 3.0, 0.0, 89.0, 30.0);
    let view = (&scene, &camera);
    let with = render(&ctx, view, (48, 48), Some(params(30_000)));
    let without = render(&ctx, view, (48, 48), None);
    // The image's centre sees the focus through the sphere; the caustic adds light there.
    let centre = (24 * 48 + 24) * 4;
    let brightness = |image: &[u8]| image[centre] as u32 + image[centre + 1] as u32;
    assert!(
        brightness(&with) > brightness(&without) + 20,
        "centre with caustics {:?}, without {:?}",
        &with[centre..centre + 3],
        &without[centre..centre + 3]
    );
    assert_valid(&ctx);
}

#[test]
fn bad_photon_parameters_are_named() {
    let ctx = context();
    for bad in [
        PhotonParams {
            photons: 0,
            ..params(10)
        },
        PhotonParams {
            bounces: 0,
            ..params(10)
        },
        PhotonParams {
            bounces: 17,
            ..params(10)
        },
        PhotonParams {
            k: 65,
            ..params(10)
        },
        PhotonParams {
            max_radius: f32::NAN,
            ..params(10)
        },
        PhotonParams {
            max_radius: 0.0,
            ..params(10)
        },
    ] {
        assert!(PhotonMap::new(&ctx, bad).is_err(), "{bad:?} accepted");
    }
}
