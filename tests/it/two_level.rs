//! Two levels (`accel::bvh::instances`): rays through instances of meshes hit what brute force
//! hits in the same scene with every instance's triangles copied out in instance order, for
//! rotated, scaled, mirrored and thousands of instances; a rigid instance moves without its
//! mesh's tree being built again; a refitted mesh is seen through its instances; masks hide
//! instances; the work counts add the top level's to the mesh's; bad instances are refused with
//! errors that name them; a glTF file placing a mesh many times renders through two levels as
//! flattened; trees over boxes hold each box in a leaf; and the instances' world boxes hold
//! their meshes, folded past the grid limit.

use crate::common;

use canopy::accel::bvh::instances::{Instance, InstanceTriangle, TwoLevelBvh};
use canopy::accel::bvh::lbvh::{LbvhParams, LbvhStructure};
use canopy::accel::{RayStructure, submit_until_complete};
use canopy::geom::ray::{Hit, MISS, Query, Ray, RayWork};
use canopy::scene::Mesh;
use canopy::trace::Tracer;
use canopy::vk::{Context, Count, MemoryKind, Slice};
use common::{
    DeviceMesh, Rng, assert_hits_match_brute_force, assert_valid, context, random_mesh,
    random_rays, trace,
};

/// A mesh's tree, built once.
fn mesh_tree(ctx: &Context, mesh: &DeviceMesh) -> LbvhStructure {
    common::lbvh_over(ctx, LbvhParams::default(), mesh)
}

/// The top tree over `instances` of `trees`, built and waited for.
fn built(
    ctx: &Context,
    two_level: &mut TwoLevelBvh,
    trees: &[&LbvhStructure],
    instances: &[Instance],
) {
    let meshes: Vec<_> = trees.iter().map(|t| t.bvh()).collect();
    ctx.submit_and_wait(|rec| two_level.record_build(rec, &meshes, instances))
        .unwrap();
    assert_valid(ctx);
}

/// `p` through the transform `m`, rounded once from double precision.
fn apply(m: &[[f32; 4]; 3], p: [f32; 3]) -> [f32; 3] {
    std::array::from_fn(|r| {
        ((0..3).map(|c| m[r][c] as f64 * p[c] as f64).sum::<f64>() + m[r][3] as f64) as f32
    })
}

/// The scene with every instance's mesh copied out in instance order, transformed; instances
/// rays cannot see (`visible` false) keep their place in the numbering as triangles of zero
/// area, which nothing hits.
fn flattened(meshes: &[Mesh], instances: &[Instance], visible: impl Fn(&Instance) -> bool) -> Mesh {
    let mut flat = Mesh::default();
    for instance in instances {
        let mesh = &meshes[instance.mesh as usize];
        let base = flat.positions.len() as u32;
        flat.positions.extend(mesh.positions.iter().map(|&p| {
            if visible(instance) {
                apply(&instance.transform, p)
            } else {
                [0.0; 3]
            }
        }));
        flat.triangles
            .extend(mesh.triangles.iter().map(|t| t.map(|v| base + v)));
    }
    flat
}

/// A random rotation (about a random axis), scale (per axis, from 0.3 to 2, each side mirrored
/// with odds 1 in 4) and translation within `spread`.
fn random_transform(rng: &mut Rng, spread: f32) -> [[f32; 4]; 3] {
    let axis = loop {
        let v: [f32; 3] = std::array::from_fn(|_| rng.f32_in(-1.0, 1.0));
        let length = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if length > 0.1 {
            break v.map(|x| x / length);
        }
    };
    let (s, c) = rng.f32_in(0.0, std::f32::consts::TAU).sin_cos();
    let [x, y, z] = axis;
    // Rodrigues' rotation matrix.
    let rotation = [
        [
            c + x * x * (1.0 - c),
            x * y * (1.0 - c) - z * s,
            x * z * (1.0 - c) + y * s,
        ],
        [
            y * x * (1.0 - c) + z * s,
            c + y * y * (1.0 - c),
            y * z * (1.0 - c) - x * s,
        ],
        [
            z * x * (1.0 - c) - y * s,
            z * y * (1.0 - c) + x * s,
            c + z * z * (1.0 - c),
        ],
    ];
    let scale: [f32; 3] = std::array::from_fn(|_| {
        let size = rng.f32_in(0.3, 2.0);
        if rng.below(4) == 0 { -size } else { size }
    });
    std::array::from_fn(|r| {
        let mut row = [0.0; 4];
        for k in 0..3 {
            row[k] = rotation[r][k] * scale[k];
        }
        row[3] = rng.f32_in(-spread, spread);
        row
    })
}

/// Closest and any hits of `rays` through `tree`.
fn hits(ctx: &Context, tree: &TwoLevelBvh, rays: &[Ray]) -> (Vec<Hit>, Vec<Hit>) {
    (
        trace(ctx, tree, rays, Query::Closest),
        trace(ctx, tree, rays, Query::Any),
    )
}

#[test]
fn rays_through_instances_hit_what_the_flattened_scene_is_hit_at() {
    let ctx = context();
    let mut rng = Rng::new(4401);
    let meshes: Vec<Mesh> = [1, 2, 60, 400]
        .iter()
        .map(|&n| random_mesh(&mut rng, n, 1.0, 0.4))
        .collect();
    let device: Vec<DeviceMesh> = meshes.iter().map(|m| DeviceMesh::new(&ctx, m)).collect();
    let trees: Vec<LbvhStructure> = device.iter().map(|m| mesh_tree(&ctx, m)).collect();
    let tree_refs: Vec<&LbvhStructure> = trees.iter().collect();
    let mut two_level = TwoLevelBvh::new(&ctx, 3000).unwrap();
    // One instance, a few, and thousands (of small meshes, so that brute force stays quick).
    for (count, spread, kinds) in [(1, 0.0, 4), (7, 3.0, 4), (3000, 40.0, 2)] {
        let label = format!("{count} instances");
        let instances: Vec<Instance> = (0..count)
            .map(|i| {
                let transform = if i == 0 {
                    Instance::IDENTITY
                } else {
                    random_transform(&mut rng, spread)
                };
                Instance::new(((i * 7 + 3) % kinds) as u32, transform)
            })
            .collect();
        built(&ctx, &mut two_level, &tree_refs, &instances);
        let flat = flattened(&meshes, &instances, |_| true);
        assert_eq!(
            two_level.triangle_count() as usize,
            flat.triangles.len(),
            "{label}"
        );
        let rays = random_rays(&mut rng, &flat, 1500);
        let (closest, any) = hits(&ctx, &two_level, &rays);
        assert_hits_match_brute_force(&flat, &rays, &closest, &any, &label);
    }
}

#[test]
fn a_rigid_instance_moves_without_its_mesh_tree_being_built_again() {
    let ctx = context();
    let mut rng = Rng::new(4402);
    let mesh = random_mesh(&mut rng, 300, 1.0, 0.3);
    let device = DeviceMesh::new(&ctx, &mesh);
    let tree = mesh_tree(&ctx, &device);
    let (nodes_before, leaves_before) = tree.bvh().download(&ctx).unwrap();
    let mut two_level = TwoLevelBvh::new(&ctx, 4).unwrap();
    let mut instances = vec![
        Instance::new(0, random_transform(&mut rng, 2.0)),
        Instance::new(0, random_transform(&mut rng, 2.0)),
    ];
    for frame in 0..3 {
        // The second instance moves every frame; the first stays.
        instances[1].transform = random_transform(&mut rng, 2.0);
        built(&ctx, &mut two_level, &[&tree], &instances);
        let meshes = std::slice::from_ref(&mesh);
        let flat = flattened(meshes, &instances, |_| true);
        let rays = random_rays(&mut rng, &flat, 1000);
        let (closest, any) = hits(&ctx, &two_level, &rays);
        assert_hits_match_brute_force(&flat, &rays, &closest, &any, &format!("frame {frame}"));
    }
    assert_eq!(
        tree.bvh().download(&ctx).unwrap(),
        (nodes_before, leaves_before),
        "the mesh's tree is untouched"
    );
}

#[test]
fn a_refitted_mesh_is_seen_through_its_instances() {
    let ctx = context();
    let mut rng = Rng::new(4403);
    let mesh = random_mesh(&mut rng, 500, 1.0, 0.3);
    let moved = Mesh {
        positions: mesh
            .positions
            .iter()
            .map(|p| [p[0], p[1] + (p[0] * 2.0).sin() * 0.5, p[2] * 1.5])
            .collect(),
        ..mesh.clone()
    };
    let (old, new) = (DeviceMesh::new(&ctx, &mesh), DeviceMesh::new(&ctx, &moved));
    let mut tree = mesh_tree(&ctx, &old);
    let mut two_level = TwoLevelBvh::new(&ctx, 8).unwrap();
    let instances: Vec<Instance> = (0..8)
        .map(|_| Instance::new(0, random_transform(&mut rng, 3.0)))
        .collect();
    built(&ctx, &mut two_level, &[&tree], &instances);
    // The mesh deforms: its tree is refitted, and the top tree built again over the new
    // boxes, in one command buffer.
    ctx.submit_and_wait(|rec| {
        tree.record_refit(rec, &new.input())?;
        two_level.record_build(rec, &[tree.bvh()], &instances)
    })
    .unwrap();
    assert_valid(&ctx);
    let flat = flattened(std::slice::from_ref(&moved), &instances, |_| true);
    let rays = random_rays(&mut rng, &flat, 1500);
    let (closest, any) = hits(&ctx, &two_level, &rays);
    assert_hits_match_brute_force(&flat, &rays, &closest, &any, "refitted");
}

#[test]
fn masks_hide_instances_and_ids_locate_their_instance() {
    let ctx = context();
    let mut rng = Rng::new(4404);
    let meshes = vec![
        random_mesh(&mut rng, 50, 1.0, 0.4),
        random_mesh(&mut rng, 80, 1.0, 0.4),
    ];
    let device: Vec<DeviceMesh> = meshes.iter().map(|m| DeviceMesh::new(&ctx, m)).collect();
    let trees: Vec<LbvhStructure> = device.iter().map(|m| mesh_tree(&ctx, m)).collect();
    let mut two_level = TwoLevelBvh::new(&ctx, 6).unwrap();
    let mut instances: Vec<Instance> = (0..6)
        .map(|i| Instance::new(i % 2, random_transform(&mut rng, 2.0)))
        .collect();
    for (i, instance) in instances.iter_mut().enumerate() {
        instance.mask = [1, 2, 3, 0, 2, 1][i];
    }
    built(&ctx, &mut two_level, &[&trees[0], &trees[1]], &instances);
    for ray_mask in [1u32, 2, u32::MAX] {
        two_level.set_ray_mask(ray_mask);
        let sees = |i: &Instance| i.mask & ray_mask != 0;
        let flat = flattened(&meshes, &instances, sees);
        // Rays aimed at the instances this mask sees.
        let seen: Vec<Instance> = instances.iter().copied().filter(sees).collect();
        let rays = random_rays(&mut rng, &flattened(&meshes, &seen, |_| true), 1500);
        let (closest, any) = hits(&ctx, &two_level, &rays);
        assert_hits_match_brute_force(
            &flat,
            &rays,
            &closest,
            &any,
            &format!("ray mask {ray_mask}"),
        );
    }
    // Instance 2 holds mesh 0's 50 triangles from 50 + 80 = 130 on.
    assert_eq!(
        two_level.locate(130 + 7),
        Some(InstanceTriangle {
            instance: 2,
            triangle: 7
        })
    );
    assert_eq!(
        two_level.locate(0),
        Some(InstanceTriangle {
            instance: 0,
            triangle: 0
        })
    );
    assert_eq!(two_level.locate(two_level.triangle_count()), None);
    assert_eq!(two_level.locate(MISS), None);
}

#[test]
fn work_counts_add_the_top_level_to_the_mesh_s() {
    let ctx = context();
    let mut rng = Rng::new(4405);
    let mesh = random_mesh(&mut rng, 700, 1.0, 0.3);
    let device = DeviceMesh::new(&ctx, &mesh);
    let tree = mesh_tree(&ctx, &device);
    let mut two_level = TwoLevelBvh::new(&ctx, 1).unwrap();
    built(
        &ctx,
        &mut two_level,
        &[&tree],
        &[Instance::new(0, Instance::IDENTITY)],
    );
    let rays = random_rays(&mut rng, &mesh, 1000);
    let counted = |structure: &dyn canopy::accel::Traversable| -> (Vec<Hit>, Vec<RayWork>) {
        let tracer = Tracer::new(&ctx).unwrap();
        let ray_buffer = ctx.create_buffer_with("rays", &rays).unwrap();
        let n = rays.len() as u64;
        let hits = ctx
            .create_buffer("hits", 16 * n, MemoryKind::Device)
            .unwrap();
        let work = ctx
            .create_buffer("work", 8 * n, MemoryKind::Device)
            .unwrap();
        ctx.submit_and_wait(|rec| {
            tracer.record_counted(
                rec,
                structure,
                Query::Closest,
                Slice::whole(&ray_buffer),
                Slice::whole(&hits),
                Slice::whole(&work),
                Count::Host(rays.len() as u32),
            )
        })
        .unwrap();
        assert_valid(&ctx);
        (
            ctx.download(&hits, 0, rays.len()).unwrap(),
            ctx.download(&work, 0, rays.len()).unwrap(),
        )
    };
    let (mesh_hits, mesh_work) = counted(tree.bvh());
    let (two_level_hits, two_level_work) = counted(&two_level);
    assert_eq!(
        two_level_hits, mesh_hits,
        "an identity instance hits what its mesh does"
    );
    let (lo, hi) = mesh.bounds().unwrap();
    let mut entered = 0;
    for (i, ray) in rays.iter().enumerate() {
        let (mesh, both) = (mesh_work[i], two_level_work[i]);
        // The top tree of one instance is its root; a ray that enters the instance's box
        // tests the instance's leaf (a primitive of the top tree) and walks the mesh.
        if both.primitives_tested == 0 {
            assert_eq!(
                both,
                RayWork {
                    nodes_visited: 1,
                    primitives_tested: 0
                },
                "ray {i}"
            );
            let outside = ray
                .origin
                .iter()
                .enumerate()
                .any(|(a, &o)| o < lo[a] || o > hi[a]);
            assert!(
                outside || mesh_hits[i].triangle == MISS,
                "ray {i} starts inside and misses the box"
            );
        } else {
            entered += 1;
            let expected = RayWork {
                nodes_visited: mesh.nodes_visited + 1,
                primitives_tested: mesh.primitives_tested + 1,
            };
            assert_eq!(both, expected, "ray {i}");
        }
    }
    assert!(
        entered * 2 > rays.len(),
        "{entered} rays entered the instance"
    );
}

#[test]
fn bad_instances_are_refused_with_errors_that_name_them() {
    let ctx = context();
    let mut rng = Rng::new(4406);
    let mesh = random_mesh(&mut rng, 10, 1.0, 0.3);
    let device = DeviceMesh::new(&ctx, &mesh);
    let tree = mesh_tree(&ctx, &device);
    let mut two_level = TwoLevelBvh::new(&ctx, 2).unwrap();
    let good = Instance::new(0, Instance::IDENTITY);
    let mut singular = good;
    singular.transform[1] = [0.0; 4];
    let mut not_a_number = good;
    not_a_number.transform[2][3] = f32::NAN;
    let cases = [
        (vec![good, singular], "instance 1: its transform"),
        (vec![not_a_number], "instance 0: its transform"),
        (
            vec![good, Instance::new(1, Instance::IDENTITY)],
            "instance 1: mesh 1 out of range (1 meshes)",
        ),
        (vec![good; 3], "3 instances into one for 2"),
    ];
    for (instances, expected) in cases {
        let error = ctx
            .submit_and_wait(|rec| two_level.record_build(rec, &[tree.bvh()], &instances))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(expected),
            "{error:?} should say {expected:?}"
        );
    }
    // The tree is still usable after the refusals.
    built(&ctx, &mut two_level, &[&tree], &[good]);
    let rays = random_rays(&mut rng, &mesh, 300);
    let (closest, any) = hits(&ctx, &two_level, &rays);
    assert_hits_match_brute_force(&mesh, &rays, &closest, &any, "after refusals");
}

/// `canopy bench instances` at a small size: the top tree's rebuild is timed with its stages,
/// and every kind of rays hits as often through the two levels as through the flattened tree.
#[test]
fn the_instances_benchmark_times_the_top_tree_and_traces_both_ways() {
    use canopy::bench::instances::{InstancesConfig, run};
    let ctx = common::folding_context();
    let config = InstancesConfig {
        instances: 300,
        meshes: 7,
        rings: 5,
        ray_side: 24,
        repeats: 2,
    };
    let report = run(&ctx, &config).unwrap();
    assert_valid(&ctx);
    assert_eq!((report.instances, report.meshes), (300, 7));
    // 4 r (r - 1) triangles a rock; 300 rocks.
    assert_eq!(report.triangles, 300 * 80);
    assert_eq!(report.top_build.runs, 2);
    assert!(
        report.top_build.stage_ms("two-level: boxes") > 0.0,
        "{:?}",
        report.top_build
    );
    assert!(
        report.top_build.stage_ms("lbvh: tree") > 0.0,
        "{:?}",
        report.top_build
    );
    assert_eq!(
        report.traversal.len(),
        3,
        "camera, shadow and reflected rays"
    );
    for trace in &report.traversal {
        let (flat, two) = (&trace.flattened, &trace.two_level);
        assert_eq!((two.rays, two.work.rays), (flat.rays, flat.work.rays));
        // The same hits, but for a ray grazing an edge, which rounding may decide apart
        // in the two spaces.
        assert!(
            two.hits.abs_diff(flat.hits) <= 2,
            "{:?} rays: {} and {}",
            flat.rays,
            two.hits,
            flat.hits
        );
        assert!(trace.time_ratio.is_some_and(|r| r > 0.0 && r.is_finite()));
    }
    assert!(
        report.traversal[0].flattened.hits > 24 * 24 / 10,
        "the camera sees the rocks"
    );
}

/// A GLB placing a sphere 27 times through `EXT_mesh_gpu_instancing` (node 0: turned, scaled
/// and moved copies on a grid), once more through a second node sharing its mesh (node 1),
/// and a cube once (node 2).
fn placed_spheres_glb() -> Vec<u8> {
    use canopy::scene::shapes::{cube, uv_sphere};
    let sphere = uv_sphere([0.0; 3], 0.4, 6);
    let block = cube([-0.5, -0.5, -0.5], 1.0);
    let mut translations = Vec::new();
    let mut rotations = Vec::new();
    let mut scales = Vec::new();
    for i in 0..27u32 {
        let at = [i % 3, i / 3 % 3, i / 9].map(|k| k as f32 * 1.2);
        translations.push(at);
        let q = glam::Quat::from_rotation_y(i as f32 * 0.4) * glam::Quat::from_rotation_x(0.3);
        rotations.push(q.to_array());
        scales.push([
            1.0 + 0.05 * i as f32,
            1.0,
            if i % 4 == 0 { -0.8 } else { 0.8 },
        ]);
    }
    let mut bin: Vec<u8> = Vec::new();
    let mut views = Vec::new();
    let mut push = |bytes: &[u8]| {
        views.push(format!(
            r#"{{"buffer": 0, "byteOffset": {}, "byteLength": {}}}"#,
            bin.len(),
            bytes.len()
        ));
        bin.extend_from_slice(bytes);
    };
    push(bytemuck::cast_slice(&sphere.positions));
    push(bytemuck::cast_slice(&sphere.triangles));
    push(bytemuck::cast_slice(&block.positions));
    push(bytemuck::cast_slice(&block.triangles));
    push(bytemuck::cast_slice(&translations));
    push(bytemuck::cast_slice(&rotations));
    push(bytemuck::cast_slice(&scales));
    let bounds = |m: &Mesh| {
        let (lo, hi) = m.bounds().unwrap();
        format!(r#""min": {lo:?}, "max": {hi:?}"#)
    };
    let json = format!(
        r#"{{
        "asset": {{"version": "2.0"}},
        "extensionsUsed": ["EXT_mesh_gpu_instancing"],
        "scene": 0,
        "scenes": [{{"nodes": [0, 1, 2]}}],
        "nodes": [
            {{"mesh": 0, "extensions": {{"EXT_mesh_gpu_instancing":
                {{"attributes": {{"TRANSLATION": 4, "ROTATION": 5, "SCALE": 6}}}}}}}},
            {{"mesh": 0, "translation": [-1.5, 0.5, 1.0]}},
            {{"mesh": 1, "translation": [1.2, -1.6, 1.2], "scale": [3, 0.4, 3]}}
        ],
        "meshes": [
            {{"primitives": [{{"attributes": {{"POSITION": 0}}, "indices": 1}}]}},
            {{"primitives": [{{"attributes": {{"POSITION": 2}}, "indices": 3}}]}}
        ],
        "buffers": [{{"byteLength": BIN_LENGTH}}],
        "bufferViews": [{}],
        "accessors": [
            {{"bufferView": 0, "componentType": 5126, "count": {}, "type": "VEC3", {}}},
            {{"bufferView": 1, "componentType": 5125, "count": {}, "type": "SCALAR"}},
            {{"bufferView": 2, "componentType": 5126, "count": {}, "type": "VEC3", {}}},
            {{"bufferView": 3, "componentType": 5125, "count": {}, "type": "SCALAR"}},
            {{"bufferView": 4, "componentType": 5126, "count": 27, "type": "VEC3"}},
            {{"bufferView": 5, "componentType": 5126, "count": 27, "type": "VEC4"}},
            {{"bufferView": 6, "componentType": 5126, "count": 27, "type": "VEC3"}}
        ]
    }}"#,
        views.join(", "),
        sphere.positions.len(),
        bounds(&sphere),
        3 * sphere.triangles.len(),
        block.positions.len(),
        bounds(&block),
        3 * block.triangles.len(),
    );
    common::files::glb(&json, &bin)
}

/// A glTF file placing a mesh many times is read as the meshes and their copies, and renders
/// through two levels (each mesh's tree built once, the top tree every frame) as through one
/// tree over every copy.
#[test]
fn a_file_placing_a_mesh_many_times_renders_through_two_levels_as_flattened() {
    use canopy::render::presets::{MeshLook, MeshShading, Subject};
    use canopy::scene::MaterialMesh;
    use canopy::sequence::{Flow, FrameSequence, SequenceConfig};
    let ctx = context();
    let folder = common::files::TempFolder::new("placed");
    let path = folder.0.join("spheres.glb");
    std::fs::write(&path, placed_spheres_glb()).unwrap();
    let loaded = MaterialMesh::load(&path).unwrap();
    let placements = loaded
        .placements
        .clone()
        .expect("the sphere is placed 28 times");
    assert_eq!(placements.meshes.len(), 2);
    let copies: Vec<u32> = placements.copies.iter().map(|c| c.0).collect();
    assert_eq!(copies, [vec![0; 28], vec![1]].concat());
    // Each copy, placed, is the copied-out mesh's slice of triangles.
    let mut first = 0;
    for &(mesh, placement) in &placements.copies {
        let mesh = &placements.meshes[mesh as usize];
        for (t, triangle) in mesh.triangles.iter().enumerate() {
            let flat = loaded.mesh.triangles[first + t];
            // A mirrored copy's triangles are wound the other way.
            let flat = if placement.determinant() < 0.0 {
                [flat[0], flat[2], flat[1]]
            } else {
                flat
            };
            for (v, f) in triangle.iter().zip(flat) {
                let placed = placement.transform_point3(mesh.positions[*v as usize].into());
                let copied = glam::Vec3::from(loaded.mesh.positions[f as usize]);
                assert!(
                    placed.distance(copied) < 1e-5,
                    "triangle {}: {placed} {copied}",
                    first + t
                );
            }
        }
        first += mesh.triangle_count();
    }
    assert_eq!(first, loaded.mesh.triangle_count());

    // Smooth normals, so that shading reads each hit's weights.
    let look = MeshLook {
        shading: MeshShading::Smooth,
        ..MeshLook::default()
    };
    let subject = Subject::mesh(&ctx, loaded, &look).unwrap();
    let frame = |two_levels: bool| -> (Vec<u8>, bool) {
        let config = SequenceConfig {
            width: 96,
            height: 72,
            two_levels,
            ..SequenceConfig::default()
        };
        let mut sequence = FrameSequence::new(&ctx, &subject, config).unwrap();
        let mut image = (Vec::new(), false);
        sequence
            .render(&[0, 1], |finished| {
                let stages = finished.profiler.results()?;
                image = (
                    finished.image.rgba8().to_vec(),
                    stages.iter().any(|(name, _)| name == "two-level: boxes"),
                );
                Ok::<_, canopy::vk::Error>(Flow::Continue)
            })
            .unwrap();
        assert_valid(&ctx);
        image
    };
    let (two_levels, through_two) = frame(true);
    let (flattened, through_one) = frame(false);
    assert!(
        through_two && !through_one,
        "the top tree is built only for two levels"
    );
    // The same image, but for pixels whose ray grazes an edge, which the two spaces may
    // round apart.
    let differing = two_levels
        .chunks(4)
        .zip(flattened.chunks(4))
        .filter(|(a, b)| a.iter().zip(*b).any(|(x, y)| x.abs_diff(*y) > 8))
        .count();
    assert!(differing <= 96 * 72 / 1000, "{differing} pixels differ");
    // Not an empty picture: a sixth of the pixels or more are not the corner's (the sky's).
    let sky = &two_levels[..4];
    let seen = two_levels.chunks(4).filter(|p| p != &sky).count();
    assert!(seen * 6 > 96 * 72, "{seen} pixels show something");
}

/// A tree over boxes (`BoxTreeBuilder`): every box is a leaf whose box is its own, the tree
/// passes the BVH invariants over the boxes (corners given either way round), and a build
/// over more boxes than the builder holds is refused.
#[test]
fn box_trees_hold_each_box_in_a_leaf() {
    use canopy::accel::bvh::Bvh;
    use canopy::accel::bvh::boxes::BoxTreeBuilder;
    use canopy::accel::bvh::cpu::check_invariants;
    let ctx = context();
    let mut rng = Rng::new(4407);
    for count in [1u32, 2, 3, 1000] {
        let boxes: Vec<[[f32; 3]; 2]> = (0..count)
            .map(|i| {
                let centre: [f32; 3] = std::array::from_fn(|_| rng.f32_in(-10.0, 10.0));
                let half: [f32; 3] = std::array::from_fn(|_| rng.f32_in(0.0, 1.0));
                let lo = std::array::from_fn(|k| centre[k] - half[k]);
                let hi = std::array::from_fn(|k| centre[k] + half[k]);
                // Every third box names its corners the other way round.
                if i % 3 == 2 { [hi, lo] } else { [lo, hi] }
            })
            .collect();
        let buffer = ctx.create_buffer_with("boxes", &boxes).unwrap();
        let builder = BoxTreeBuilder::new(&ctx, count).unwrap();
        let mut tree = Bvh::new(&ctx, count).unwrap();
        ctx.submit_and_wait(|rec| builder.record(rec, Slice::whole(&buffer), count, &mut tree))
            .unwrap();
        assert_valid(&ctx);
        let (nodes, leaves) = tree.download(&ctx).unwrap();
        let bounds: Vec<canopy::geom::aabb::Bounds> = boxes
            .iter()
            .map(|[a, b]| {
                (
                    std::array::from_fn(|k| a[k].min(b[k])),
                    std::array::from_fn(|k| a[k].max(b[k])),
                )
            })
            .collect();
        check_invariants(&nodes, &leaves, &bounds).unwrap_or_else(|e| panic!("{count} boxes: {e}"));
        let mut held = leaves.clone();
        held.sort_unstable();
        assert_eq!(
            held,
            (0..count).collect::<Vec<_>>(),
            "{count} boxes, each in one leaf"
        );
    }
    let builder = BoxTreeBuilder::new(&ctx, 4).unwrap();
    let mut tree = Bvh::new(&ctx, 8).unwrap();
    let buffer = ctx
        .create_buffer("boxes", 8 * 24, MemoryKind::Device)
        .unwrap();
    let error = ctx
        .submit_and_wait(|rec| builder.record(rec, Slice::whole(&buffer), 5, &mut tree))
        .unwrap_err()
        .to_string();
    assert!(error.contains("5 boxes with a builder for 4"), "{error}");
}

/// `PlacedMeshes` (what a frame sequence builds for a file placing meshes more than once)
/// traces what brute force hits in the copied-out scene, with the copied-out scene's ids and
/// weights: a mirrored copy (whose copied-out triangles are wound the other way), a copy scaled
/// to nothing (hidden, as its copied-out triangles of zero area are) and an empty mesh among
/// them.
#[test]
fn placed_meshes_trace_as_their_copies_copied_out() {
    use canopy::accel::bvh::instances::PlacedMeshes;
    use canopy::accel::bvh::lbvh::LbvhParams;
    use canopy::scene::Placements;
    use glam::{Mat4, Quat, Vec3};
    let ctx = context();
    let mut rng = Rng::new(4408);
    let rock = random_mesh(&mut rng, 300, 1.0, 0.3);
    let placements = Placements {
        meshes: vec![Mesh::default(), rock],
        copies: vec![
            (1, Mat4::IDENTITY),
            (0, Mat4::from_translation(Vec3::new(5.0, 0.0, 0.0))),
            (
                1,
                Mat4::from_translation(Vec3::new(3.0, 0.5, 0.0))
                    * Mat4::from_scale(Vec3::new(-1.0, 1.0, 1.5)),
            ),
            (1, Mat4::from_scale(Vec3::ZERO)),
            (
                1,
                Mat4::from_rotation_translation(
                    Quat::from_rotation_y(0.7),
                    Vec3::new(0.0, 0.0, 3.0),
                ),
            ),
        ],
    };
    let mut flat = Mesh::default();
    for &(mesh, placement) in &placements.copies {
        flat.append(&placements.meshes[mesh as usize].transformed(placement));
    }
    let device = DeviceMesh::new(&ctx, &flat);
    let mut placed = PlacedMeshes::new(&ctx, LbvhParams::default(), &placements).unwrap();
    for frame in 0..2 {
        submit_until_complete(&ctx, &mut placed, |rec, s| {
            s.record_build(rec, &device.input(), 0)
        })
        .unwrap();
        assert_valid(&ctx);
        assert_eq!(
            placed.two_level().triangle_count() as usize,
            flat.triangle_count()
        );
        let rays = random_rays(&mut rng, &flat, 1500);
        let traversable = placed.traversable(&device.input());
        let closest = trace(&ctx, traversable.as_ref(), &rays, Query::Closest);
        let any = trace(&ctx, traversable.as_ref(), &rays, Query::Any);
        assert_hits_match_brute_force(&flat, &rays, &closest, &any, &format!("frame {frame}"));
    }
}

/// The top tree over 20,000 instances, every dispatch grid folded past a pretended limit of 64
/// workgroups a dimension: each instance's world box holds its mesh's root box carried through
/// its transform exactly (in double precision) and is no more than rounding larger, and rays
/// hit what brute force hits in the flattened scene.
#[test]
fn world_boxes_hold_their_meshes_and_fold_past_the_grid_limit() {
    let ctx = common::folding_context();
    let mut rng = Rng::new(4409);
    let meshes = vec![
        random_mesh(&mut rng, 1, 1.0, 0.5),
        random_mesh(&mut rng, 2, 1.0, 0.5),
    ];
    let device: Vec<DeviceMesh> = meshes.iter().map(|m| DeviceMesh::new(&ctx, m)).collect();
    let trees: Vec<LbvhStructure> = device.iter().map(|m| mesh_tree(&ctx, m)).collect();
    let count = 20_000;
    let instances: Vec<Instance> = (0..count)
        .map(|i| Instance::new(i % 2, random_transform(&mut rng, 60.0)))
        .collect();
    let mut two_level = TwoLevelBvh::new(&ctx, count).unwrap();
    built(&ctx, &mut two_level, &[&trees[0], &trees[1]], &instances);
    let roots: Vec<([f64; 3], [f64; 3])> = trees
        .iter()
        .map(|t| {
            let (nodes, _) = t.bvh().download(&ctx).unwrap();
            let root = nodes[0];
            let lo = std::array::from_fn(|k| root.left_min[k].min(root.right_min[k]) as f64);
            let hi = std::array::from_fn(|k| root.left_max[k].max(root.right_max[k]) as f64);
            (lo, hi)
        })
        .collect();
    // The leaves' ids are the instances' indices (every instance has triangles and a mask).
    let boxes = two_level.world_boxes(&ctx).unwrap();
    assert_eq!(boxes.len(), count as usize);
    for (i, (instance, [lo, hi])) in instances.iter().zip(&boxes).enumerate() {
        let (root_lo, root_hi) = roots[instance.mesh as usize];
        let m = instance.transform.map(|row| row.map(f64::from));
        for r in 0..3 {
            let (mut near, mut far) = (m[r][3], m[r][3]);
            for c in 0..3 {
                let (a, b) = (m[r][c] * root_lo[c], m[r][c] * root_hi[c]);
                near += a.min(b);
                far += a.max(b);
            }
            let slack = 1e-5 * (near.abs().max(far.abs()) + 1.0);
            assert!(
                (lo[r] as f64) <= near && (hi[r] as f64) >= far,
                "instance {i}, axis {r}: [{}, {}] does not hold [{near}, {far}]",
                lo[r],
                hi[r]
            );
            assert!(
                near - (lo[r] as f64) <= slack && (hi[r] as f64) - far <= slack,
                "instance {i}, axis {r}: [{}, {}] is wider than [{near}, {far}]",
                lo[r],
                hi[r]
            );
        }
    }
    let flat = flattened(&meshes, &instances, |_| true);
    let rays = random_rays(&mut rng, &flat, 300);
    let (closest, any) = hits(&ctx, &two_level, &rays);
    assert_hits_match_brute_force(&flat, &rays, &closest, &any, "20,000 instances, folded");
}
