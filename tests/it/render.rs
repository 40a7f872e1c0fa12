//! The renderer against its CPU reference on small analytic scenes (a diffuse sphere, then a
//! mirror and a glass sphere, over a checkered ground, a sun and a point light), traced
//! through an LBVH and a kd-tree; that mirrors and glass change the image as they should; bad
//! renderer input; and the default scene's GPU deformation against the same surface on the CPU.

use crate::common;

use canopy::accel::bvh::lbvh::BvhLayout;
use canopy::accel::{BuildParams, StructureKind, StructureSize, submit_until_complete};
use canopy::geom::ray::closest_hit_brute_force;
use canopy::render::channels::{encode_plane, srgb_encode};
use canopy::render::cpu::CpuScene;
use canopy::render::{
    BounceStats, Camera, ChannelEncoding, ChannelSource, ImageReadback, Light, MAX_BOUNCES,
    Material, OutputChannel, PixelAovs, RenderParams, Renderer, SceneGpu, ShadingParams, Surfaces,
};
use canopy::scene::default_scene::{DefaultScene, surface_point};
use canopy::scene::texture::{Filter, MipFilter, Sampler};
use canopy::scene::{Environment, MaterialMesh, Mesh, Texture, TextureRef, shapes};
use canopy::vk::{Context, MemoryKind, Recorder};
use common::files::TempFolder;
use common::{assert_valid, context};
use glam::Vec3;

const WIDTH: u32 = 128;
const HEIGHT: u32 = 96;

/// A test scene: mesh, materials (and textures), lights, view.
struct TestScene {
    mesh: Mesh,
    triangle_materials: Vec<u32>,
    triangle_instances: Vec<u32>,
    materials: Vec<Material>,
    texcoords: Vec<[f32; 4]>,
    textures: Vec<Texture>,
    tangents: Vec<[f32; 4]>,
    colours: Vec<[f32; 4]>,
    lights: Vec<Light>,
    camera: Camera,
    shading: ShadingParams,
    width: u32,
    height: u32,
    samples: u32,
    sky_light: bool,
    environment: Option<Environment>,
    /// How the structure is built (the LBVH's layout, ...).
    build: BuildParams,
}

/// Every structure rays can be traced through.
fn traceable() -> impl Iterator<Item = StructureKind> {
    StructureKind::ALL
        .into_iter()
        .filter(|kind| kind.traceable())
}

impl TestScene {
    /// `spheres` (centre, radius, material) over a checkered ground, lit by a sun and a point
    /// light; the ground is material 0.
    fn new(spheres: &[([f32; 3], f32, u32)], materials: Vec<Material>) -> Self {
        let mut mesh = shapes::ground_square([0.0, 0.0, 0.0], 4.0);
        let mut triangle_materials = vec![0u32, 0];
        for &(centre, radius, material) in spheres {
            let sphere = shapes::uv_sphere(centre, radius, 24);
            triangle_materials.extend(vec![material; sphere.triangle_count()]);
            mesh.append(&sphere);
        }
        TestScene {
            mesh,
            triangle_materials,
            triangle_instances: Vec::new(),
            materials,
            texcoords: Vec::new(),
            textures: Vec::new(),
            tangents: Vec::new(),
            colours: Vec::new(),
            lights: vec![
                Light::Directional {
                    direction: Vec3::new(-0.5, -1.0, -0.2),
                    intensity: Vec3::splat(0.8),
                },
                Light::Point {
                    position: Vec3::new(2.0, 3.0, 2.0),
                    intensity: Vec3::splat(6.0),
                },
            ],
            camera: Camera::orbit(Vec3::new(0.0, 0.8, 0.0), 5.0, 30.0, 25.0, 45.0),
            shading: ShadingParams {
                ambient: 0.1,
                surface_offset: 1e-4,
            },
            width: WIDTH,
            height: HEIGHT,
            samples: 1,
            sky_light: false,
            environment: None,
            build: BuildParams::default(),
        }
    }

    fn surfaces(&self) -> Surfaces<'_> {
        Surfaces {
            triangle_materials: &self.triangle_materials,
            triangle_instances: &self.triangle_instances,
            materials: &self.materials,
            texcoords: &self.texcoords,
            textures: &self.textures,
            tangents: &self.tangents,
            colours: &self.colours,
        }
    }

    fn render_gpu(
        &self,
        ctx: &Context,
        through: StructureKind,
        bounces: u32,
    ) -> (Vec<u8>, Vec<BounceStats>) {
        self.render_gpu_animated(ctx, (through, bounces), &self.mesh, &|_, _| Ok(()))
    }

    /// As [`Self::render_gpu`], with `uploaded` in the scene's buffers and `animate` recorded
    /// before the build (it makes this scene's vertices from them).
    fn render_gpu_animated(
        &self,
        ctx: &Context,
        (through, bounces): (StructureKind, u32),
        uploaded: &Mesh,
        animate: &dyn Fn(&mut Recorder, &SceneGpu) -> canopy::vk::Result<()>,
    ) -> (Vec<u8>, Vec<BounceStats>) {
        let image = self.render_readback(ctx, (through, bounces), uploaded, animate, &[]);
        (image.rgba8().to_vec(), image.stats())
    }

    /// The frame's readback, with `channels` converted beside the image.
    fn render_readback(
        &self,
        ctx: &Context,
        (through, bounces): (StructureKind, u32),
        uploaded: &Mesh,
        animate: &dyn Fn(&mut Recorder, &SceneGpu) -> canopy::vk::Result<()>,
        channels: &[OutputChannel],
    ) -> ImageReadback {
        let mut scene = SceneGpu::from_mesh(ctx, uploaded, &self.surfaces(), &self.lights).unwrap();
        scene
            .set_environment(ctx, self.environment.as_ref())
            .unwrap();
        let n = scene.triangle_count;
        let params = RenderParams {
            bounces,
            samples: self.samples,
            sky_light: self.sky_light,
            ..RenderParams::default()
        };
        let mut renderer = Renderer::new(
            ctx,
            self.width,
            self.height,
            self.lights.len() as u32,
            params,
        )
        .unwrap();
        renderer.set_output_channels(ctx, channels).unwrap();
        let image = renderer.readback(ctx).unwrap();
        // Built on the GPU through the same calls `canopy render` makes.
        let size = StructureSize {
            triangles: n,
            vertices: scene.vertex_count,
        };
        let mut structure = through
            .create(ctx, &self.build, size, 1)
            .unwrap()
            .into_rays()
            .unwrap();
        let input = scene.input();
        let view = self.camera.view(self.width, self.height);
        structure.set_view(ctx, &view).unwrap();
        submit_until_complete(ctx, structure.as_mut(), |rec, structure| {
            animate(rec, &scene)?;
            structure.record_build(rec, &input, 0)?;
            let tree = structure.traversable(&input);
            renderer.record(
                rec,
                &scene,
                tree.as_ref(),
                &self.camera,
                &self.shading,
                &image,
            )
        })
        .unwrap();
        assert_valid(ctx);
        image
    }

    /// The scene as the CPU renderer takes it.
    fn cpu(&self) -> CpuScene<'_> {
        CpuScene {
            positions: &self.mesh.positions,
            normals: &self.mesh.normals,
            triangles: &self.mesh.triangles,
            surfaces: self.surfaces(),
            lights: &self.lights,
            environment: self.environment.as_ref(),
        }
    }

    fn render_cpu(&self, bounces: u32) -> Vec<u8> {
        self.cpu().render(
            &self.camera,
            self.width,
            self.height,
            &self.shading,
            &RenderParams {
                bounces,
                samples: self.samples,
                sky_light: self.sky_light,
                ..RenderParams::default()
            },
        )
    }

    /// The material each pixel's camera ray hits first (None: the sky).
    fn primary_materials(&self) -> Vec<Option<u32>> {
        (0..HEIGHT)
            .flat_map(|y| (0..WIDTH).map(move |x| (x, y)))
            .map(|(x, y)| {
                let ray = self.camera.primary_ray(x, y, WIDTH, HEIGHT);
                let hit = closest_hit_brute_force(&self.mesh.positions, &self.mesh.triangles, &ray);
                hit.is_hit()
                    .then(|| self.triangle_materials[hit.triangle as usize])
            })
            .collect()
    }
}

/// Tolerance: a pixel matches when every channel is within 2 of the CPU's (pow, division and
/// normalisation round differently on the GPU); at most 1% of pixels may differ more, where a
/// ray grazes a silhouette, a shadow edge or a checker edge (directly or after a reflection or
/// refraction, which magnifies direction differences of an ulp) and the two pick different
/// triangles. Returns (pixels off by more than 2, mean channel difference, largest difference).
fn compare_images(gpu: &[u8], cpu: &[u8]) -> (usize, f64, u8) {
    let mut off = 0;
    let mut total = 0u64;
    let mut worst_all = 0;
    for (g, c) in gpu.chunks(4).zip(cpu.chunks(4)) {
        let worst = (0..3).map(|i| g[i].abs_diff(c[i])).max().unwrap();
        worst_all = worst_all.max(worst);
        off += (worst > 2) as usize;
        total += (0..3).map(|i| g[i].abs_diff(c[i]) as u64).sum::<u64>();
    }
    (off, total as f64 / (gpu.len() / 4 * 3) as f64, worst_all)
}

fn assert_close(gpu: &[u8], cpu: &[u8], label: &str) {
    let (off, mean, worst) = compare_images(gpu, cpu);
    println!(
        "{label}: {off} pixels off by more than 2, mean difference {mean:.4}, largest {worst}"
    );
    let pixels = (WIDTH * HEIGHT) as usize;
    assert!(
        off * 100 <= pixels,
        "{label}: {off} of {pixels} pixels differ by more than 2"
    );
    assert!(mean < 0.5, "{label}: mean channel difference {mean}");
}

#[test]
fn sphere_over_ground_matches_cpu_render() {
    let ctx = context();
    let scene = TestScene::new(
        &[([0.0, 1.0, 0.0], 1.0, 1)],
        vec![
            Material::checker([0.8, 0.8, 0.8], 0.5),
            Material::diffuse([0.9, 0.3, 0.2]),
        ],
    );
    let (gpu, stats) = scene.render_gpu(&ctx, StructureKind::Lbvh, 2);
    assert_close(&gpu, &scene.render_cpu(2), "diffuse sphere");
    let pixels = WIDTH * HEIGHT;
    assert_eq!(stats.len(), 3);
    assert_eq!(stats[0].rays, pixels);
    assert!(stats[0].shadow_rays > pixels / 2);
    assert_eq!(stats[1].rays, 0, "diffuse surfaces spawn no rays");

    // Not blank: sky, a lit and a shadowed sphere, checkered ground and a cast shadow.
    let mut colours: Vec<[u8; 4]> = gpu.chunks(4).map(|p| [p[0], p[1], p[2], p[3]]).collect();
    colours.sort();
    colours.dedup();
    assert!(
        colours.len() > 200,
        "only {} distinct colours",
        colours.len()
    );
    let pixels = pixels as usize;
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

const MIRROR: u32 = 1;
const GLASS: u32 = 2;

/// A mirror sphere and a glass sphere side by side over the checkered ground.
fn mirror_and_glass() -> TestScene {
    TestScene::new(
        &[
            ([-1.1, 1.0, 0.0], 1.0, MIRROR),
            ([1.1, 1.0, 0.3], 1.0, GLASS),
        ],
        vec![
            Material::checker([0.8, 0.8, 0.8], 0.5),
            Material::mirror([0.9, 0.9, 0.9]),
            Material::glass(1.5, [1.0, 1.0, 1.0]),
        ],
    )
}

#[test]
fn samples_per_pixel_match_the_cpu_repeat_exactly_and_converge() {
    let ctx = context();
    let mut scene = mirror_and_glass();
    scene.samples = 4;
    let (gpu, _) = scene.render_gpu(&ctx, StructureKind::Lbvh, 2);
    assert_close(&gpu, &scene.render_cpu(2), "4 samples per pixel");
    let (again, _) = scene.render_gpu(&ctx, StructureKind::Lbvh, 2);
    assert!(gpu == again, "the same frame gave other bytes");
    // Against 64 samples, the mean error falls as the samples grow (at a quarter of the
    // pixels: the reference is 64 frames' work).
    let image = |samples: u32| {
        let mut scene = mirror_and_glass();
        (scene.width, scene.height, scene.samples) = (WIDTH / 2, HEIGHT / 2, samples);
        scene.render_gpu(&ctx, StructureKind::Lbvh, 2).0
    };
    let reference = image(64);
    let errors: Vec<f64> = [1, 4, 16]
        .into_iter()
        .map(|n| compare_images(&image(n), &reference).1)
        .collect();
    println!("mean channel error against 64 samples, at 1, 4, 16: {errors:?}");
    assert!(
        errors[0] > errors[1] && errors[1] > errors[2],
        "errors {errors:?} do not fall"
    );
}

/// A small environment: a blue sky brightening towards the zenith over a brown ground, a
/// bright warm sun up and to the +x side, and a red patch on the horizon at -z.
pub fn test_environment() -> Environment {
    let (width, height) = (64u32, 32u32);
    let texels = (0..width * height)
        .map(|i| {
            let (x, y) = (i % width, i / width);
            let up = 1.0 - (y as f32 + 0.5) / height as f32 * 2.0;
            let mut c = if up > 0.0 {
                [0.3 + 0.3 * up, 0.5 + 0.3 * up, 1.0 + 0.5 * up]
            } else {
                [0.3, 0.22, 0.15]
            };
            if (44..48).contains(&x) && (8..11).contains(&y) {
                c = [40.0, 36.0, 30.0];
            }
            if (30..34).contains(&x) && (14..17).contains(&y) {
                c = [3.0, 0.2, 0.1];
            }
            c
        })
        .collect();
    Environment {
        width,
        height,
        texels,
        intensity: 0.8,
        rotation_degrees: 20.0,
    }
}

#[test]
fn an_environment_is_the_sky_in_mirrors_and_glass_as_on_the_cpu() {
    let ctx = context();
    let mut scene = mirror_and_glass();
    scene.environment = Some(test_environment());
    let (gpu, _) = scene.render_gpu(&ctx, StructureKind::Lbvh, 2);
    assert_close(
        &gpu,
        &scene.render_cpu(2),
        "mirror and glass under an environment",
    );
    let procedural = mirror_and_glass().render_cpu(2);
    let (off, _, _) = compare_images(&gpu, &procedural);
    assert!(
        off > (WIDTH * HEIGHT / 4) as usize,
        "only {off} pixels show the environment"
    );
}

#[test]
fn sky_light_from_an_environment_matches_the_cpu() {
    let ctx = context();
    let mut scene = TestScene::new(
        &[([0.0, 0.8, 0.0], 0.8, 1)],
        vec![
            Material::checker([0.75, 0.75, 0.72], 0.5),
            Material::diffuse([0.8, 0.8, 0.8]),
        ],
    );
    scene.environment = Some(test_environment());
    scene.sky_light = true;
    scene.samples = 4;
    let (gpu, _) = scene.render_gpu(&ctx, StructureKind::Lbvh, 1);
    assert_close(&gpu, &scene.render_cpu(1), "sky light, 4 samples");
    scene.sky_light = false;
    let ambient = scene.render_cpu(1);
    let (off, _, _) = compare_images(&gpu, &ambient);
    assert!(
        off > (WIDTH * HEIGHT / 10) as usize,
        "only {off} pixels show the sky light"
    );
}

/// A square standing between the camera and a sphere, its material cut out (alpha mask) by a
/// texture whose alpha is a checker of 4 x 4 texels repeated twice, over the ground: camera
/// rays see the sphere through its holes, and the lights cast them onto the ground.
fn cutout_scene(cut: bool) -> TestScene {
    let square = if cut {
        Material::diffuse([0.3, 0.9, 0.3])
            .with_base_colour(TextureRef::new(0, 0).with_transform([0.0; 2], 0.0, [2.0, 2.0]))
            .with_cutout(1.0, 0.5)
    } else {
        Material::diffuse([0.3, 0.9, 0.3])
    };
    let mut scene = TestScene::new(
        &[([0.0, 0.8, -0.8], 0.8, 1)],
        vec![
            Material::checker([0.75, 0.75, 0.72], 0.5),
            Material::diffuse([0.9, 0.2, 0.1]),
            square,
        ],
    );
    scene.texcoords = vec![[0.0; 4]; scene.mesh.positions.len()];
    scene.mesh.append(&Mesh {
        positions: vec![
            [-1.2, 0.1, 0.6],
            [1.2, 0.1, 0.6],
            [1.2, 2.0, 0.6],
            [-1.2, 2.0, 0.6],
        ],
        normals: vec![[0.0, 0.0, 1.0]; 4],
        triangles: vec![[0, 1, 2], [0, 2, 3]],
    });
    scene.texcoords.extend([
        [0.0, 1.0, 0.0, 0.0],
        [1.0, 1.0, 0.0, 0.0],
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
    ]);
    scene.triangle_materials.extend([2, 2]);
    scene.textures = vec![Texture {
        width: 4,
        height: 4,
        texels: (0..16u32)
            .map(|i| {
                if (i % 4 + i / 4) % 2 == 0 {
                    0xffff_ffff
                } else {
                    0x00ff_ffff
                }
            })
            .collect(),
        levels: 1,
        sampler: Sampler {
            filter: Filter::Nearest,
            ..Sampler::default()
        },
    }];
    scene
}

#[test]
fn cutouts_let_camera_and_shadow_rays_through_in_every_structure() {
    let ctx = context();
    let mut scene = cutout_scene(true);
    let cpu = scene.render_cpu(1);
    for kind in traceable() {
        let (gpu, _) = scene.render_gpu(&ctx, kind, 1);
        assert_close(&gpu, &cpu, &format!("{kind:?}, cut out"));
    }
    // The LBVH read as its 8-wide tree has a traversal kernel of its own.
    scene.build.lbvh.layout = BvhLayout::Wide;
    let (gpu, _) = scene.render_gpu(&ctx, StructureKind::Lbvh, 1);
    assert_close(&gpu, &cpu, "wide LBVH, cut out");
    let (off, _, _) = compare_images(&cpu, &cutout_scene(false).render_cpu(1));
    assert!(
        off > (WIDTH * HEIGHT / 20) as usize,
        "only {off} pixels show the holes"
    );
}

#[test]
fn mirror_and_glass_match_cpu_render_through_lbvh_and_kdtree() {
    let ctx = context();
    let scene = mirror_and_glass();
    for bounces in [0, 3] {
        let cpu = scene.render_cpu(bounces);
        for through in traceable() {
            let (gpu, stats) = scene.render_gpu(&ctx, through, bounces);
            assert_close(&gpu, &cpu, &format!("{through:?}, {bounces} bounces"));
            assert_eq!(stats.len(), bounces as usize + 1);
            for (b, s) in stats.iter().enumerate() {
                assert_eq!(
                    (s.dropped_rays, s.dropped_shadow_rays),
                    (0, 0),
                    "bounce {b}"
                );
            }
            if bounces > 0 {
                // Rays reflected off both spheres and refracted into the glass, and rays
                // leaving the glass at the next bounce.
                assert!(stats[1].rays > 0 && stats[2].rays > 0, "{stats:?}");
            }
        }
    }
}

#[test]
fn mirror_reflects_and_glass_refracts() {
    let ctx = context();
    let scene = mirror_and_glass();
    let (bounced, _) = scene.render_gpu(&ctx, StructureKind::Lbvh, 2);
    let (unbounced, _) = scene.render_gpu(&ctx, StructureKind::Lbvh, 0);
    let on = scene.primary_materials();
    let pixels_of = |material: u32| -> Vec<usize> {
        (0..on.len()).filter(|&i| on[i] == Some(material)).collect()
    };
    let rgb = |image: &[u8], i: usize| [image[4 * i], image[4 * i + 1], image[4 * i + 2]];
    for material in [MIRROR, GLASS] {
        let pixels = pixels_of(material);
        assert!(
            pixels.len() > 400,
            "material {material} on {} pixels",
            pixels.len()
        );
        // Without bounces the spheres show the sky along the scattered rays; with them, the
        // ground's checker, the other sphere and the lit ground: many pixels change, and the
        // sphere shows many colours.
        let changed = pixels
            .iter()
            .filter(|&&i| {
                let (a, b) = (rgb(&bounced, i), rgb(&unbounced, i));
                (0..3).any(|k| a[k].abs_diff(b[k]) > 20)
            })
            .count();
        println!(
            "material {material}: {changed} of {} pixels change",
            pixels.len()
        );
        assert!(
            changed * 8 > pixels.len(),
            "material {material}: only {changed} of {} pixels change with bounces",
            pixels.len()
        );
        let mut colours: Vec<[u8; 3]> = pixels.iter().map(|&i| rgb(&bounced, i)).collect();
        colours.sort();
        colours.dedup();
        println!("material {material}: {} colours", colours.len());
        assert!(
            colours.len() > 50,
            "material {material}: {} colours",
            colours.len()
        );
    }
    // The mirror's lower half reflects the checkered ground: both dark and light squares, grey
    // (unlike the blue sky), and nothing of an albedo of its own.
    let mirror = pixels_of(MIRROR);
    let grey = |p: [u8; 3]| p[0].abs_diff(p[2]) < 12 && p[0].abs_diff(p[1]) < 12;
    let dark = mirror
        .iter()
        .filter(|&&i| grey(rgb(&bounced, i)) && rgb(&bounced, i)[0] < 110)
        .count();
    let light = mirror
        .iter()
        .filter(|&&i| grey(rgb(&bounced, i)) && rgb(&bounced, i)[0] > 150)
        .count();
    let blue = mirror
        .iter()
        .filter(|&&i| {
            let p = rgb(&bounced, i);
            p[2] > p[0] + 30
        })
        .count();
    println!("mirror: {dark} dark, {light} light, {blue} sky-blue pixels");
    assert!(
        dark > 20 && light > 20 && blue > 20,
        "mirror: {dark} dark, {light} light, {blue} sky-blue pixels"
    );
}

#[test]
fn bad_render_input_is_rejected() {
    let ctx = context();
    let too_many = RenderParams {
        bounces: MAX_BOUNCES + 1,
        ..RenderParams::default()
    };
    let error = Renderer::new(&ctx, 8, 8, 1, too_many)
        .err()
        .expect("refused");
    assert!(error.to_string().contains("bounces"), "{error}");
    let no_room = RenderParams {
        bounces: 1,
        secondary_rays_per_pixel: 0,
        ..RenderParams::default()
    };
    assert!(Renderer::new(&ctx, 8, 8, 1, no_room).is_err());
    for samples in [0, canopy::render::MAX_SAMPLES + 1] {
        let error = Renderer::new(
            &ctx,
            8,
            8,
            1,
            RenderParams {
                samples,
                ..RenderParams::default()
            },
        )
        .err()
        .expect("refused");
        assert!(error.to_string().contains("samples"), "{error}");
    }
    let mesh = shapes::ground_square([0.0; 3], 1.0);
    let light = [Light::Directional {
        direction: Vec3::NEG_Y,
        intensity: Vec3::ONE,
    }];
    for (material, expected) in [
        (Material::glass(f32::NAN, [1.0; 3]), "index of refraction"),
        (Material::glass(0.0, [1.0; 3]), "index of refraction"),
        (Material::mirror([f32::INFINITY, 0.0, 0.0]), "colour"),
        (Material::diffuse([-1.0, 0.0, 0.0]), "colour"),
        (
            Material {
                kind: 7,
                ..Material::diffuse([1.0; 3])
            },
            "kind",
        ),
    ] {
        let error = SceneGpu::from_mesh(
            &ctx,
            &mesh,
            &Surfaces::untextured(&[0, 0], &[material]),
            &light,
        )
        .err()
        .expect("refused");
        assert!(error.to_string().contains(expected), "{error}");
    }
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
        ctx.submit_and_wait(|rec| scene.record(rec, &positions, &normals, time))
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
            // u, as on the CPU (ground corners point up, sphere normals away from the centre).
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
            } else if let Some((centre, radius)) = scene.sphere_of(i) {
                (Vec3::from(expected) - Vec3::from(centre)) / radius
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

/// Under a pretended limit of 64 workgroups per dimension, a 640x480 frame (4,800 workgroups
/// of camera rays: a 3D grid) with bounces renders exactly the image of an unfolded run,
/// through the LBVH (built on the GPU) and through a kd-tree.
#[test]
fn folded_grids_render_the_same_frame() {
    let folded = common::folding_context();
    let plain = context();
    let mut scene = mirror_and_glass();
    (scene.width, scene.height) = (640, 480);
    let limit = common::FOLDING_LIMIT;
    assert!(scene.width * scene.height / 64 > limit * limit);
    for through in traceable() {
        let (expected, expected_stats) = scene.render_gpu(&plain, through, 2);
        let (got, stats) = scene.render_gpu(&folded, through, 2);
        assert!(
            got == expected,
            "{through:?}: folded and unfolded frames differ"
        );
        assert_eq!(
            stats.iter().map(|s| s.rays).collect::<Vec<_>>(),
            expected_stats.iter().map(|s| s.rays).collect::<Vec<_>>(),
            "{through:?}: ray counts per bounce"
        );
    }
}

/// Shadow acne far from the origin: a lit plane, tilted so that its points' large x
/// coordinates carry rounding error across it, alone under the sun at x = 1, 1e4 and 1e6. No
/// shadow ray may hit the plane it leaves, so every pixel of it must have the one lit colour; a ray
/// that re-hits its own triangle leaves a pixel with the ambient light only.
#[test]
fn lit_plane_has_no_shadow_acne_far_from_the_origin() {
    let ctx = context();
    for x in [1.0f32, 1e4, 1e6] {
        let plane = shapes::ground_square([0.0, 0.0, 0.0], 50.0).transformed(
            glam::Mat4::from_translation(Vec3::new(x, 0.0, 0.0))
                * glam::Mat4::from_rotation_z(30f32.to_radians()),
        );
        let scene = TestScene {
            triangle_materials: vec![0; plane.triangle_count()],
            triangle_instances: Vec::new(),
            mesh: plane,
            materials: vec![Material::diffuse([0.8, 0.8, 0.8])],
            texcoords: Vec::new(),
            textures: Vec::new(),
            tangents: Vec::new(),
            colours: Vec::new(),
            lights: vec![Light::Directional {
                direction: Vec3::new(-0.5, -1.0, -0.2),
                intensity: Vec3::splat(0.8),
            }],
            camera: Camera::orbit(Vec3::new(x, 0.0, 0.0), 3.0, 30.0, 50.0, 45.0),
            shading: ShadingParams {
                ambient: 0.1,
                surface_offset: 1e-4,
            },
            width: WIDTH,
            height: HEIGHT,
            samples: 1,
            sky_light: false,
            environment: None,
            build: BuildParams::default(),
        };
        let (gpu, _) = scene.render_gpu(&ctx, StructureKind::Lbvh, 1);
        let cpu = scene.render_cpu(1);
        for (image, label) in [(&gpu, "GPU"), (&cpu, "CPU")] {
            // The plane is grey; what is not grey is the sky beyond its far edge.
            let greys: Vec<u8> = image
                .chunks(4)
                .filter(|p| p[0] == p[1] && p[1] == p[2])
                .map(|p| p[0])
                .collect();
            let lit = greys.iter().copied().max().unwrap_or(0);
            assert!(
                greys.len() * 2 > image.len() / 4,
                "x = {x}: the plane is missing"
            );
            let dark = greys.iter().filter(|&&g| g + 2 < lit).count();
            assert_eq!(
                dark, 0,
                "x = {x}: {dark} {label} pixels darker than the lit plane's {lit}"
            );
        }
    }
}

/// Zero vertex normals shade with each triangle's own normal (flat shading, as
/// `canopy render --shading flat` asks): the GPU agrees with the CPU, and the facets show.
#[test]
fn zero_normals_shade_flat_as_on_the_cpu() {
    let ctx = context();
    let materials = vec![
        Material::checker([0.8, 0.8, 0.8], 0.5),
        Material::diffuse([0.9, 0.3, 0.2]),
    ];
    let smooth = TestScene::new(&[([0.0, 1.0, 0.0], 1.0, 1)], materials.clone());
    let mut flat = TestScene::new(&[([0.0, 1.0, 0.0], 1.0, 1)], materials);
    flat.mesh.flatten_normals();
    let (gpu, _) = flat.render_gpu(&ctx, StructureKind::Lbvh, 1);
    assert_close(&gpu, &flat.render_cpu(1), "flat sphere");
    let (smooth_gpu, _) = smooth.render_gpu(&ctx, StructureKind::Lbvh, 1);
    let differ = gpu
        .chunks(4)
        .zip(smooth_gpu.chunks(4))
        .filter(|(a, b)| a.iter().zip(*b).any(|(x, y)| x.abs_diff(*y) > 4))
        .count();
    assert!(
        differ > 200,
        "flat and smooth differ in only {differ} pixels"
    );
}

/// A skinned character posed on the GPU (skinning kernel and normals from the posed
/// triangles) renders as the CPU renders the CPU's pose of it.
#[test]
fn skinned_character_matches_cpu_render() {
    use canopy::scene::animated::normals::{SurfaceNormals, ring_normals, rings};
    use canopy::scene::animated::skin::Skinner;
    use canopy::scene::rig::{ClipTime, Rig};
    use glam::Mat4;

    let ctx = context();
    let rig = Rig::load(&common::test_data("gltf/CesiumMan.glb")).unwrap();
    let at = ClipTime {
        clip: Some(0),
        looping: true,
    };
    let time = 0.7;
    // Placed standing on the ground, about 2 units tall.
    let posed = rig.posed_positions(&rig.pose(at, time, Mat4::IDENTITY));
    let (lo, hi) = posed
        .iter()
        .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), &p| {
            (lo.min(Vec3::from(p)), hi.max(Vec3::from(p)))
        });
    let scale = 2.0 / (hi.y - lo.y);
    let root = Mat4::from_scale(Vec3::splat(scale))
        * Mat4::from_translation(-Vec3::new((lo.x + hi.x) / 2.0, lo.y, (lo.z + hi.z) / 2.0));
    let skinner = Skinner::new(&ctx, rig.clone(), at, root).unwrap();
    let triangles = rig.rest.mesh.triangles.clone();
    let positions = rig.posed_positions(&skinner.pose(time));
    let ring = rings(&rig.rest.mesh.positions, &triangles);
    let normals = ring_normals(&positions, &triangles, (&ring.0, &ring.1));
    let character = Mesh {
        positions,
        normals,
        triangles,
    };
    // Its own material, textured, and the checkered ground.
    let mut materials = rig.rest.materials.clone();
    assert!(materials[0].base_colour_texture.is_some());
    materials.push(Material::checker([0.8, 0.8, 0.8], 0.5));
    let mut scene = TestScene::new(&[], materials);
    scene.camera = Camera::orbit(Vec3::new(0.0, 1.0, 0.0), 4.0, 30.0, 15.0, 45.0);
    scene.triangle_materials = rig.rest.triangle_materials.clone();
    scene.triangle_materials.extend([1, 1]);
    scene.texcoords = rig.rest.texcoords.clone();
    scene.texcoords.extend([[0.0; 4]; 4]);
    scene.textures = rig.rest.textures.clone();
    let mut mesh = character;
    mesh.append(&scene.mesh);
    scene.mesh = mesh;
    // The GPU starts from the rest positions, and zero normals.
    let mut uploaded = scene.mesh.clone();
    uploaded.positions[..rig.rest.mesh.positions.len()].copy_from_slice(&rig.rest.mesh.positions);
    uploaded.normals.iter_mut().for_each(|n| *n = [0.0; 3]);
    let surface =
        SurfaceNormals::new(&ctx, &rig.rest.mesh.positions, &rig.rest.mesh.triangles).unwrap();
    let animate = |rec: &mut Recorder, gpu: &SceneGpu| {
        skinner.record(rec, time, &gpu.positions)?;
        surface.record(rec, &gpu.positions, &gpu.triangles, &gpu.normals)
    };
    let (gpu, _) = scene.render_gpu_animated(&ctx, (StructureKind::Lbvh, 1), &uploaded, &animate);
    assert_close(&gpu, &scene.render_cpu(1), "skinned, textured CesiumMan");
    assert_texture_shows(&mut scene, &gpu, 50);
}

/// That `image` (of `scene`) shows its textures: at least 1 in `share` of its pixels differs
/// by more than 8 in a channel from the CPU's image of the scene without them.
fn assert_texture_shows(scene: &mut TestScene, image: &[u8], share: usize) {
    for material in &mut scene.materials {
        *material = material
            .with_base_colour(TextureRef::NONE)
            .with_emission([0.0; 3], TextureRef::NONE);
    }
    let differing = pixels_differing(image, &scene.render_cpu(1));
    assert!(
        differing * share > (scene.width * scene.height) as usize,
        "only {differing} pixels show the textures"
    );
}

/// A loaded mesh file on its stage ([`MeshStage`](canopy::render::presets::MeshStage)), seen
/// from the front and a little above.
fn stage_scene(loaded: MaterialMesh) -> TestScene {
    use canopy::render::presets::{MeshLook, MeshStage};
    let stage = MeshStage::new(loaded, &MeshLook::default());
    let mut scene = TestScene::new(&[], stage.materials.clone());
    scene.mesh = stage.mesh.clone();
    scene.triangle_materials = stage.triangle_materials.clone();
    scene.triangle_instances = stage.triangle_instances.clone();
    scene.texcoords = stage.texcoords.clone();
    scene.textures = stage.textures.clone();
    scene.tangents = stage.tangents.clone();
    scene.colours = stage.colours.clone();
    scene.lights = stage.lights.clone();
    scene.camera = Camera::orbit(stage.centre, 2.2 * stage.radius, 15.0, 10.0, 45.0);
    scene
}

/// How many pixels of `a` and `b` differ by more than 8 in a channel.
fn pixels_differing(a: &[u8], b: &[u8]) -> usize {
    a.chunks(4)
        .zip(b.chunks(4))
        .filter(|(a, b)| (0..3).any(|c| a[c].abs_diff(b[c]) > 8))
        .count()
}

#[test]
fn textured_model_matches_cpu_render() {
    let ctx = context();
    let folder = TempFolder::new("textured-render");
    let loaded = MaterialMesh::load(&crate::textures::textured_quad(&folder.0)).unwrap();
    let mut scene = stage_scene(loaded);
    let (gpu, _) = scene.render_gpu(&ctx, StructureKind::Lbvh, 1);
    assert_close(&gpu, &scene.render_cpu(1), "textured square");
    assert_texture_shows(&mut scene, &gpu, 4);
}

/// A ground 40 units wide under a low camera looking to its far edge, textured with a black
/// and white 8x8 checker repeated 40 times a side (8 texels a unit), read nearest within a
/// level and through `mip_filter` across them.
fn receding_checker(mip_filter: MipFilter) -> TestScene {
    let mut scene =
        TestScene::new(
            &[],
            vec![Material::diffuse([1.0; 3]).with_base_colour(
                TextureRef::new(0, 0).with_transform([0.0, 0.0], 0.0, [40.0, 40.0]),
            )],
        );
    scene.mesh = Mesh {
        positions: vec![
            [-20.0, 0.0, -20.0],
            [20.0, 0.0, -20.0],
            [20.0, 0.0, 20.0],
            [-20.0, 0.0, 20.0],
        ],
        normals: vec![[0.0, 1.0, 0.0]; 4],
        triangles: vec![[0, 2, 1], [0, 3, 2]],
    };
    scene.triangle_materials = vec![0, 0];
    scene.texcoords = vec![
        [0.0, 0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0, 0.0],
        [1.0, 1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
    ];
    let texels = (0..64u32)
        .map(|i| {
            if (i % 8 + i / 8) % 2 == 0 {
                0xff00_0000
            } else {
                0xffff_ffff
            }
        })
        .collect();
    let sampler = Sampler {
        filter: Filter::Nearest,
        min_filter: Filter::Nearest,
        mip_filter,
        ..Sampler::default()
    };
    scene.textures = vec![
        Texture {
            width: 8,
            height: 8,
            texels,
            levels: 1,
            sampler,
        }
        .with_mip_levels(true),
    ];
    scene.camera = Camera::orbit(Vec3::new(0.0, 0.0, 12.0), 3.0, 0.0, 12.0, 45.0);
    scene
}

/// The mean difference of green between horizontally neighbouring pixels in rows
/// `rows` of `image`: how much a texture flickers from pixel to pixel there.
fn neighbour_contrast(image: &[u8], rows: std::ops::Range<u32>) -> f64 {
    let mut sum = 0u64;
    for y in rows.clone() {
        for x in 1..WIDTH {
            let at = |x: u32| image[((y * WIDTH + x) * 4 + 1) as usize];
            sum += at(x).abs_diff(at(x - 1)) as u64;
        }
    }
    sum as f64 / ((rows.end - rows.start) * (WIDTH - 1)) as f64
}

#[test]
fn distant_textures_read_mip_levels_as_on_the_cpu() {
    let ctx = context();
    let [trilinear, _, level_0] =
        [MipFilter::Linear, MipFilter::Nearest, MipFilter::None].map(|mip_filter| {
            let scene = receding_checker(mip_filter);
            let (gpu, _) = scene.render_gpu(&ctx, StructureKind::Lbvh, 0);
            let label = format!("receding checker, {mip_filter:?} across levels");
            assert_close(&gpu, &scene.render_cpu(0), &label);
            gpu
        });
    // Far away (just below the horizon, where a pixel covers many texels) level 0 flickers
    // between black and white from pixel to pixel; the mip levels average the checker to
    // grey. Near the camera (the bottom rows, a few pixels a texel) they agree.
    let far = 28..40;
    let (aliased, filtered) = (
        neighbour_contrast(&level_0, far.clone()),
        neighbour_contrast(&trilinear, far),
    );
    println!("far rows: {aliased:.1} at level 0, {filtered:.1} with mip levels");
    assert!(aliased > 30.0, "level 0 does not alias: {aliased:.1}");
    assert!(
        filtered * 4.0 < aliased,
        "{filtered:.1} against {aliased:.1}"
    );
    let near = ((HEIGHT - 8) * WIDTH * 4) as usize;
    let differing = pixels_differing(&trilinear[near..], &level_0[near..]);
    assert!(
        differing * 10 < (WIDTH * 8) as usize,
        "{differing} near pixels differ"
    );
}

#[test]
fn a_normal_map_and_vertex_colours_shade_as_on_the_cpu() {
    use crate::textures::{Attribute, normal_mapped_quad};
    let ctx = context();
    let folder = TempFolder::new("normal-map-render");
    let colours: [[u8; 4]; 4] = [
        [255, 128, 128, 255],
        [128, 255, 128, 255],
        [255; 4],
        [255; 4],
    ];
    let colour = Attribute {
        semantic: "COLOR_0",
        kind: "VEC4",
        component: 5121,
        bytes: colours.as_flattened().to_vec(),
    };
    let path = normal_mapped_quad(
        &folder.0,
        "bumpy.gltf",
        1.0,
        r#", "metallicFactor": 0"#,
        &[colour],
    );
    let mut scene = stage_scene(MaterialMesh::load(&path).unwrap());
    assert!(!scene.colours.is_empty() && !scene.tangents.is_empty());
    let (gpu, _) = scene.render_gpu(&ctx, StructureKind::Lbvh, 1);
    assert_close(&gpu, &scene.render_cpu(1), "normal-mapped square");
    // Without the normal map the square shades otherwise, as on the CPU.
    for material in &mut scene.materials {
        *material = material.with_normal_map(TextureRef::NONE, 1.0);
    }
    let (flat, _) = scene.render_gpu(&ctx, StructureKind::Lbvh, 1);
    assert_close(
        &flat,
        &scene.render_cpu(1),
        "the square without its normal map",
    );
    let differing = pixels_differing(&gpu, &flat);
    println!("{differing} pixels differ with and without the normal map");
    assert!(
        differing * 20 > (WIDTH * HEIGHT) as usize,
        "{differing} pixels differ"
    );
    // Nor do the vertex colours go unseen.
    scene.colours.clear();
    let white = scene.render_cpu(1);
    assert!(pixels_differing(&flat, &white) * 20 > (WIDTH * HEIGHT) as usize);
}

/// The normal-mapped square of `pbr` (JSON members of its `pbrMetallicRoughness`), its
/// scene at `samples` per pixel.
fn metal_scene(folder: &std::path::Path, name: &str, pbr: &str, samples: u32) -> TestScene {
    let path = crate::textures::normal_mapped_quad(folder, name, 1.0, pbr, &[]);
    let mut scene = stage_scene(MaterialMesh::load(&path).unwrap());
    scene.samples = samples;
    scene
}

#[test]
fn a_metallic_textured_square_reflects_as_on_the_cpu() {
    let ctx = context();
    let folder = TempFolder::new("metal-render");
    let metal = metal_scene(
        &folder.0,
        "metal.gltf",
        r#", "metallicFactor": 1, "roughnessFactor": 0, "metallicRoughnessTexture": {"index": 2}"#,
        1,
    );
    assert_eq!(metal.materials[0].metallic_roughness_texture.texture, 1);
    let (gpu, stats) = metal.render_gpu(&ctx, StructureKind::Lbvh, 2);
    assert!(stats.iter().all(|s| s.dropped_rays == 0), "{stats:?}");
    assert_close(&gpu, &metal.render_cpu(2), "metallic square");
    let plain = metal_scene(&folder.0, "plain.gltf", r#", "metallicFactor": 0"#, 1);
    let differing = pixels_differing(&gpu, &plain.render_cpu(2));
    println!("{differing} pixels differ from the square that is not metal");
    assert!(
        differing * 20 > (WIDTH * HEIGHT) as usize,
        "{differing} pixels differ"
    );
}

#[test]
fn an_occlusion_texture_darkens_the_ambient_term_as_on_the_cpu() {
    let ctx = context();
    let folder = TempFolder::new("occlusion-render");
    // The metallic-roughness texture (texture 1) has no red: full occlusion.
    let mut occluded = metal_scene(
        &folder.0,
        "occluded.gltf",
        r#", "metallicFactor": 0, "metallicRoughnessTexture": {"index": 2}"#,
        1,
    );
    let open = occluded.render_cpu(1);
    for material in &mut occluded.materials {
        *material = material.with_occlusion(TextureRef::new(1, 0), 1.0);
    }
    let (gpu, _) = occluded.render_gpu(&ctx, StructureKind::Lbvh, 1);
    assert_close(&gpu, &occluded.render_cpu(1), "occluded square");
    let differing = pixels_differing(&gpu, &open);
    println!("{differing} pixels differ with and without the occlusion texture");
    assert!(
        differing * 20 > (WIDTH * HEIGHT) as usize,
        "{differing} pixels differ"
    );
}

#[test]
fn roughness_blurs_reflections_with_samples_as_on_the_cpu() {
    let ctx = context();
    let folder = TempFolder::new("rough-render");
    let pbr = |roughness: f32| format!(r#", "metallicFactor": 1, "roughnessFactor": {roughness}"#);
    let rough = metal_scene(&folder.0, "rough.gltf", &pbr(0.7), 4);
    let sharp = metal_scene(&folder.0, "sharp.gltf", &pbr(0.0), 4);
    let (gpu, _) = rough.render_gpu(&ctx, StructureKind::Lbvh, 2);
    assert_close(&gpu, &rough.render_cpu(2), "rough metal at 4 samples");
    let (gpu_sharp, _) = sharp.render_gpu(&ctx, StructureKind::Lbvh, 2);
    assert_close(&gpu_sharp, &sharp.render_cpu(2), "sharp metal at 4 samples");
    let differing = pixels_differing(&gpu, &gpu_sharp);
    println!("{differing} pixels differ between rough and sharp");
    assert!(
        differing * 20 > (WIDTH * HEIGHT) as usize,
        "{differing} pixels differ"
    );
    // At one sample per pixel a rough reflection is the mirror's.
    let one = |mut scene: TestScene| {
        scene.samples = 1;
        scene.render_cpu(2)
    };
    assert!(
        one(rough) == one(sharp),
        "one sample: rough differs from sharp"
    );
}

/// Every source as 32-bit values (the object and instance ids as integers).
fn exact_channels() -> Vec<OutputChannel> {
    let exact = |source| match source {
        ChannelSource::ObjectId | ChannelSource::InstanceId => ChannelEncoding::U32,
        _ => ChannelEncoding::F32,
    };
    let channels = ChannelSource::ALL.map(|source| OutputChannel::new(source, exact(source)));
    channels.into()
}

/// The linear radiance and [`PixelAovs`] of every pixel, from a readback of
/// [`exact_channels`].
fn linear_and_aovs(image: &ImageReadback) -> (Vec<[f32; 3]>, Vec<PixelAovs>) {
    let planes: Vec<Vec<f32>> = image
        .channels()
        .map(|(_, plane)| bytemuck::pod_collect_to_vec(plane))
        .collect();
    assert_eq!(planes.len(), 16);
    let pixels = planes[0].len();
    let at = |c: usize, i: usize| planes[c][i];
    let triple = |c: usize, i: usize| [at(c, i), at(c + 1, i), at(c + 2, i)];
    let radiance = (0..pixels).map(|i| triple(0, i)).collect();
    let aovs = (0..pixels)
        .map(|i| PixelAovs {
            coverage: at(3, i),
            depth: at(4, i),
            normal: triple(5, i),
            albedo: triple(8, i),
            position: triple(11, i),
            object_id: at(14, i).to_bits(),
            instance_id: at(15, i).to_bits(),
        })
        .collect();
    (radiance, aovs)
}

/// File channels: each pixel's linear radiance resolves to its image pixel, and what its camera
/// ray hit (depth, normal, albedo, position, material, coverage) is what the CPU finds.
#[test]
fn file_channels_match_the_image_and_the_cpu() {
    let ctx = context();
    let scene = mirror_and_glass();
    let image = scene.render_readback(
        &ctx,
        (StructureKind::Lbvh, 2),
        &scene.mesh,
        &|_, _| Ok(()),
        &exact_channels(),
    );
    let (radiance, gpu) = linear_and_aovs(&image);
    let srgb = |c: f32| (srgb_encode(c.clamp(0.0, 1.0)) * 255.0).round() as i32;
    for (pixel, (linear, rgba)) in radiance.iter().zip(image.rgba8().chunks(4)).enumerate() {
        for c in 0..3 {
            assert!(
                (srgb(linear[c]) - rgba[c] as i32).abs() <= 1,
                "pixel {pixel}: linear {linear:?}, image {rgba:?}"
            );
        }
    }
    let cpu = scene.cpu().primary_aovs(&scene.camera, WIDTH, HEIGHT, 1);
    let (mut differing, mut hits) = (0, 0);
    for (pixel, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
        if g.coverage != c.coverage || g.object_id != c.object_id || g.instance_id != c.instance_id
        {
            differing += 1;
            continue;
        }
        if c.coverage == 0.0 {
            assert_eq!(g.depth, f32::INFINITY, "pixel {pixel}: the sky's depth");
            continue;
        }
        hits += 1;
        let close = |a: [f32; 3], b: [f32; 3], tolerance: f32| {
            (Vec3::from(a) - Vec3::from(b)).length() <= tolerance
        };
        assert!(
            (g.depth - c.depth).abs() <= 1e-4 * c.depth,
            "pixel {pixel}: depth {g:?} vs {c:?}"
        );
        assert!(
            close(g.normal, c.normal, 1e-3),
            "pixel {pixel}: normal {g:?} vs {c:?}"
        );
        assert!(
            close(g.albedo, c.albedo, 1e-5),
            "pixel {pixel}: albedo {g:?} vs {c:?}"
        );
        assert!(
            close(g.position, c.position, 1e-4),
            "pixel {pixel}: position {g:?} vs {c:?}"
        );
    }
    let pixels = (WIDTH * HEIGHT) as usize;
    assert!(
        differing * 100 <= pixels,
        "{differing} pixels hit another surface than on the CPU"
    );
    assert!(hits > pixels / 2, "only {hits} pixels hit the scene");
    // Every material of the scene shows as an object.
    let mut ids: Vec<u32> = gpu.iter().map(|a| a.object_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids, vec![0, MIRROR, GLASS, u32::MAX]);
}

/// The instance id channel of a glTF file of two nodes sharing a mesh, on its stage: each
/// pixel's id is what the CPU finds, and the two nodes (indices 1 and 2 in the file) and the
/// ground (the id after the file's nodes) each show with their own.
#[test]
fn instance_ids_match_the_cpu_and_tell_nodes_apart() {
    let ctx = context();
    let folder = TempFolder::new("instances");
    let path = folder.0.join("two.glb");
    std::fs::write(&path, common::files::two_squares_glb()).unwrap();
    let loaded = MaterialMesh::load(&path).unwrap();
    assert_eq!(
        loaded.instances,
        [
            Some("root".into()),
            Some("left".into()),
            Some("right".into())
        ]
    );
    let mut scene = stage_scene(loaded);
    scene.camera = Camera::orbit(Vec3::new(0.0, -0.2, 0.0), 3.0, 0.0, 10.0, 45.0);
    let image = scene.render_readback(
        &ctx,
        (StructureKind::Lbvh, 0),
        &scene.mesh,
        &|_, _| Ok(()),
        &exact_channels(),
    );
    let gpu = linear_and_aovs(&image).1;
    let cpu = scene.cpu().primary_aovs(&scene.camera, WIDTH, HEIGHT, 1);
    let differing = gpu
        .iter()
        .zip(&cpu)
        .filter(|(g, c)| g.instance_id != c.instance_id)
        .count();
    assert!(
        differing * 100 <= gpu.len(),
        "{differing} pixels differ from the CPU's instance"
    );
    let mut ids: Vec<u32> = gpu.iter().map(|a| a.instance_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids, vec![1, 2, 3, u32::MAX]);
}

/// Every encoding `channels.comp` writes equals its CPU reference (`channels::encode_plane`)
/// over the same frame's linear values: 16-bit floats, 16-bit display values (sRGB radiance,
/// clamped coverage and normals), and the readback holds exactly the planes' bytes beside the
/// image and counters.
#[test]
fn file_channel_encodings_match_the_cpu_reference() {
    use ChannelEncoding::*;
    use ChannelSource::*;
    let ctx = context();
    let scene = mirror_and_glass();
    let frame = |channels: &[OutputChannel]| {
        scene.render_readback(
            &ctx,
            (StructureKind::Lbvh, 2),
            &scene.mesh,
            &|_, _| Ok(()),
            channels,
        )
    };
    let exact = frame(&exact_channels());
    let (radiance, aovs) = linear_and_aovs(&exact);
    let encoded: Vec<OutputChannel> = [
        (Red, F16),
        (Blue, F16),
        (Depth, F16),
        (NormalY, F16),
        (PositionZ, F16),
        (Red, Display16),
        (Green, Display16),
        (Blue, Display16),
        (Coverage, Display16),
        (NormalX, Display16),
        (ObjectId, U32),
        (Depth, F32),
    ]
    .map(|(source, encoding)| OutputChannel::new(source, encoding))
    .into();
    let image = frame(&encoded);
    let pixels = (WIDTH * HEIGHT) as usize;
    for (channel, plane) in image.channels() {
        let reference = encode_plane(channel, &radiance, &aovs);
        assert_eq!(plane.len(), pixels * channel.encoding.bytes_per_pixel());
        let differing = plane
            .iter()
            .zip(&reference)
            .enumerate()
            .filter(|(_, (g, c))| g != c)
            .map(|(i, _)| i)
            .collect::<Vec<_>>();
        // The display values' sRGB curve may round one step apart where the GPU's pow and
        // the CPU's differ in the last bit.
        let allowed = match channel.encoding {
            Display16 => pixels / 100,
            _ => 0,
        };
        assert!(
            differing.len() <= allowed,
            "{channel:?}: {} bytes differ from the CPU reference, first at {:?}",
            differing.len(),
            differing.first()
        );
    }
    let planes: usize = encoded.iter().map(|c| c.encoding.plane_bytes(pixels)).sum();
    let unconverted = frame(&[]).bytes();
    assert_eq!(image.bytes() - unconverted, planes as u64);
    assert_valid(&ctx);
}

#[test]
fn meshes_deformed_on_the_gpu_drop_their_normal_maps() {
    use canopy::render::presets::{MeshLook, Refinement, Subject};
    use canopy::scene::animated::MeshInput;
    let ctx = context();
    let folder = TempFolder::new("deformed-normal-map");
    let colour = crate::textures::Attribute {
        semantic: "COLOR_0",
        kind: "VEC3",
        component: 5126,
        bytes: bytemuck::cast_slice(&[[0.5f32, 1.0, 1.0]; 4]).to_vec(),
    };
    let path = crate::textures::normal_mapped_quad(&folder.0, "bumpy.gltf", 1.0, "", &[colour]);
    let loaded = MaterialMesh::load(&path).unwrap();
    assert!(loaded.materials[0].normal_texture.is_some() && !loaded.tangents.is_empty());
    // Refined every frame on the GPU: no tangents follow the vertices, so the normal texture
    // is not read (a warning says so); the vertex colours, refined as the texture
    // coordinates are, stay.
    let refinement = Refinement {
        levels: 1,
        displace: None,
    };
    let subject = Subject::animated(
        &ctx,
        MeshInput::Still(loaded.clone()),
        &MeshLook::default(),
        refinement,
        1,
    )
    .unwrap();
    assert!(subject.scene.tangents.is_none());
    assert!(subject.scene.colours.is_some());
    // The same mesh kept still reads it.
    let still = Subject::mesh(&ctx, loaded, &MeshLook::default()).unwrap();
    assert!(still.scene.tangents.is_some());
    assert_valid(&ctx);
}
