//! Animated input on the GPU: glTF skinning and morph targets against the CPU's posing of the
//! same samples on real skinned models and on a small hand-made file for each interpolation;
//! vertex-animation sequences streamed from disk, and bad ones; Loop subdivision, normals and
//! displacement against their CPU references; animated meshes through every structure.

use crate::common;

use canopy::accel::StructureKind;
use canopy::render::FrameSource;
use canopy::render::presets::{MeshLook, MeshShading, Refinement, Subject};
use canopy::scene::Mesh;
use canopy::scene::animated::files::{FileStream, FrameFiles};
use canopy::scene::animated::normals::{SurfaceNormals, ring_normals, rings};
use canopy::scene::animated::skin::Skinner;
use canopy::scene::animated::subdivide::Subdivider;
use canopy::scene::animated::subdivision::LoopSubdivision;
use canopy::scene::animated::{MeshInput, OpenOptions};
use canopy::scene::rig::{ClipTime, Rig};
use canopy::sequence::{DEFAULT_FRAMES_IN_FLIGHT, Flow, FrameSequence, SequenceConfig};
use canopy::vk::{Context, MemoryKind};
use common::files::{TempFolder, glb};
use common::{assert_valid, context, test_data};
use glam::{Mat4, Vec3};

/// Poses `rig` on the GPU at `time` and returns the positions.
fn gpu_pose(ctx: &Context, skinner: &Skinner, time: f32) -> Vec<[f32; 3]> {
    let n = skinner.vertex_count();
    let out = ctx
        .create_buffer("posed", 12 * n as u64, MemoryKind::Device)
        .unwrap();
    ctx.submit_and_wait(|rec| skinner.record(rec, time, &out))
        .unwrap();
    ctx.download(&out, 0, n as usize).unwrap()
}

/// The largest distance between two position lists, relative to the extent of `reference`.
fn relative_error(gpu: &[[f32; 3]], reference: &[[f32; 3]]) -> f32 {
    assert_eq!(gpu.len(), reference.len());
    let (mut lo, mut hi) = (Vec3::INFINITY, Vec3::NEG_INFINITY);
    for p in reference {
        lo = lo.min(Vec3::from(*p));
        hi = hi.max(Vec3::from(*p));
    }
    let scale = (hi - lo).length().max(f32::MIN_POSITIVE);
    gpu.iter()
        .zip(reference)
        .map(|(a, b)| (Vec3::from(*a) - Vec3::from(*b)).length() / scale)
        .fold(0.0, f32::max)
}

/// The skinned models: the GPU's pose equals the CPU's at several times of every clip, and
/// two times of a clip pose the model differently.
#[test]
fn skinned_models_match_the_cpu_pose() {
    let ctx = context();
    for (file, clips) in [
        ("gltf/RiggedSimple.glb", 1),
        ("gltf/Fox.glb", 3),
        ("gltf/CesiumMan.glb", 1),
    ] {
        let rig = Rig::load(&test_data(file)).unwrap();
        assert_eq!(rig.clips.len(), clips, "{file}");
        for clip in 0..clips {
            let at = ClipTime {
                clip: Some(clip),
                looping: true,
            };
            let root = Mat4::from_scale(Vec3::splat(0.5));
            let skinner = Skinner::new(&ctx, rig.clone(), at, root).unwrap();
            let duration = rig.clips[clip].duration;
            let mut previous: Option<Vec<[f32; 3]>> = None;
            for k in 0..4 {
                let time = duration * (0.1 + 0.27 * k as f32);
                let gpu = gpu_pose(&ctx, &skinner, time);
                let cpu = rig.posed_positions(&skinner.pose(time));
                let error = relative_error(&gpu, &cpu);
                assert!(error < 1e-5, "{file} clip {clip} at {time} s: {error}");
                if let Some(previous) = &previous {
                    assert!(
                        relative_error(&gpu, previous) > 1e-3,
                        "{file} clip {clip}: the pose at {time} s equals the one before"
                    );
                }
                previous = Some(gpu);
            }
        }
    }
    assert_valid(&ctx);
}

/// A hand-made skinned, morphing triangle: vertices (0,0,0), (1,0,0), (0,1,0); joint 0 at the
/// origin with joint 1 its child at (1,0,0) (inverse bind matrices of that rest pose, so the
/// rest pose is the bind pose); vertex 0 weighs 0.75 on joint 0 (`JOINTS_0`) and 0.25 on joint
/// 1 (`JOINTS_1`), vertex 1 half on each, vertex 2 all on joint 1; one morph target moving
/// every vertex by (0,0,1). Three clips: "steps" (STEP translations of joint 1 at 0, 1, 2 s:
/// (1,0,0), (1,2,0), (1,4,0)), "linear" (joint 0 turning 90 degrees about z and the morph
/// weight going 0 to 1 over a second), "cubic" (a cubic spline of joint 1 from (1,0,0) to
/// (1,1,0) over 2 s, leaving with tangent (0,1,0) per second). A camera, "front", looks down
/// -z from (0.5, 0.5, 4). With `second_skin`, the triangle is instanced once more by a node
/// with a skin of its own over two more joints at rest, which no clip moves.
fn rigged_triangle(second_skin: bool) -> Vec<u8> {
    let mut bin: Vec<u8> = Vec::new();
    let mut put = |data: &[u8]| {
        let offset = bin.len();
        bin.extend(data);
        bin.resize(bin.len().next_multiple_of(4), 0);
        offset
    };
    let f32s = |v: &[f32]| bytemuck::cast_slice::<f32, u8>(v).to_vec();
    let positions = put(&f32s(&[0., 0., 0., 1., 0., 0., 0., 1., 0.]));
    let joints0 = put(bytemuck::cast_slice::<u16, u8>(&[
        0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0,
    ]));
    let weights0 = put(&f32s(&[0.75, 0., 0., 0., 0.5, 0.5, 0., 0., 1., 0., 0., 0.]));
    let joints1 = put(bytemuck::cast_slice::<u16, u8>(&[
        1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ]));
    let weights1 = put(&f32s(&[0.25, 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0.]));
    let morph = put(&f32s(&[0., 0., 1., 0., 0., 1., 0., 0., 1.]));
    let mut inverse_bind = Mat4::IDENTITY.to_cols_array().to_vec();
    inverse_bind.extend(Mat4::from_translation(Vec3::new(-1.0, 0.0, 0.0)).to_cols_array());
    let inverse_bind = put(&f32s(&inverse_bind));
    let times3 = put(&f32s(&[0., 1., 2.]));
    let steps = put(&f32s(&[1., 0., 0., 1., 2., 0., 1., 4., 0.]));
    let times2 = put(&f32s(&[0., 1.]));
    let half_turn = std::f32::consts::FRAC_1_SQRT_2;
    let turns = put(&f32s(&[0., 0., 0., 1., 0., 0., half_turn, half_turn]));
    let weights = put(&f32s(&[0., 1.]));
    let spline_times = put(&f32s(&[0., 2.]));
    let spline = put(&f32s(&[
        0., 0., 0., 1., 0., 0., 0., 1., 0., // in, value, out of key 0
        0., 0., 0., 1., 1., 0., 0., 0., 0., // of key 1
    ]));
    let view = |offset: usize, length: usize| {
        format!(r#"{{"buffer": 0, "byteOffset": {offset}, "byteLength": {length}}}"#)
    };
    let views = [
        view(positions, 36),
        view(joints0, 24),
        view(weights0, 48),
        view(joints1, 24),
        view(weights1, 48),
        view(morph, 36),
        view(inverse_bind, 128),
        view(times3, 12),
        view(steps, 36),
        view(times2, 8),
        view(turns, 32),
        view(weights, 8),
        view(spline_times, 8),
        view(spline, 72),
    ]
    .join(",");
    let (roots, more_nodes, more_skins) = if second_skin {
        (
            "0, 1, 3, 4, 6",
            r#",
            {"children": [5]},
            {"translation": [1, 0, 0]},
            {"mesh": 0, "skin": 1}"#,
            r#", {"joints": [4, 5], "inverseBindMatrices": 6}"#,
        )
    } else {
        ("0, 1, 3", "", "")
    };
    let json = format!(
        r#"{{
        "asset": {{"version": "2.0"}},
        "scene": 0,
        "scenes": [{{"nodes": [{roots}]}}],
        "nodes": [
            {{"mesh": 0, "skin": 0}},
            {{"children": [2]}},
            {{"translation": [1, 0, 0]}},
            {{"name": "front", "camera": 0, "translation": [0.5, 0.5, 4]}}{more_nodes}
        ],
        "cameras": [{{"type": "perspective", "perspective": {{"yfov": 0.5, "znear": 0.1}}}}],
        "skins": [{{"joints": [1, 2], "inverseBindMatrices": 6}}{more_skins}],
        "meshes": [{{"primitives": [{{
            "attributes": {{"POSITION": 0, "JOINTS_0": 1, "WEIGHTS_0": 2, "JOINTS_1": 3, "WEIGHTS_1": 4}},
            "targets": [{{"POSITION": 5}}]
        }}], "weights": [0]}}],
        "animations": [
            {{"name": "steps", "samplers": [{{"input": 7, "output": 8, "interpolation": "STEP"}}],
              "channels": [{{"sampler": 0, "target": {{"node": 2, "path": "translation"}}}}]}},
            {{"name": "linear", "samplers": [{{"input": 9, "output": 10}}, {{"input": 9, "output": 11}}],
              "channels": [{{"sampler": 0, "target": {{"node": 1, "path": "rotation"}}}},
                           {{"sampler": 1, "target": {{"node": 0, "path": "weights"}}}}]}},
            {{"name": "cubic", "samplers": [{{"input": 12, "output": 13, "interpolation": "CUBICSPLINE"}}],
              "channels": [{{"sampler": 0, "target": {{"node": 2, "path": "translation"}}}}]}}
        ],
        "buffers": [{{"byteLength": BIN_LENGTH}}],
        "bufferViews": [{views}],
        "accessors": [
            {{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3", "min": [0, 0, 0], "max": [1, 1, 0]}},
            {{"bufferView": 1, "componentType": 5123, "count": 3, "type": "VEC4"}},
            {{"bufferView": 2, "componentType": 5126, "count": 3, "type": "VEC4"}},
            {{"bufferView": 3, "componentType": 5123, "count": 3, "type": "VEC4"}},
            {{"bufferView": 4, "componentType": 5126, "count": 3, "type": "VEC4"}},
            {{"bufferView": 5, "componentType": 5126, "count": 3, "type": "VEC3", "min": [0, 0, 1], "max": [0, 0, 1]}},
            {{"bufferView": 6, "componentType": 5126, "count": 2, "type": "MAT4"}},
            {{"bufferView": 7, "componentType": 5126, "count": 3, "type": "SCALAR", "min": [0], "max": [2]}},
            {{"bufferView": 8, "componentType": 5126, "count": 3, "type": "VEC3"}},
            {{"bufferView": 9, "componentType": 5126, "count": 2, "type": "SCALAR", "min": [0], "max": [1]}},
            {{"bufferView": 10, "componentType": 5126, "count": 2, "type": "VEC4"}},
            {{"bufferView": 11, "componentType": 5126, "count": 2, "type": "SCALAR"}},
            {{"bufferView": 12, "componentType": 5126, "count": 2, "type": "SCALAR", "min": [0], "max": [2]}},
            {{"bufferView": 13, "componentType": 5126, "count": 6, "type": "VEC3"}}
        ]
    }}"#
    );
    glb(&json, &bin)
}

/// Asserts that `got` equals `expected` within 1e-5.
fn assert_positions(got: &[[f32; 3]], expected: &[[f32; 3]], label: &str) {
    for (v, (a, b)) in got.iter().zip(expected).enumerate() {
        assert!(
            (Vec3::from(*a) - Vec3::from(*b)).length() < 1e-5,
            "{label}: vertex {v} at {a:?}, expected {b:?}"
        );
    }
    assert_eq!(got.len(), expected.len(), "{label}");
}

/// Each interpolation mode (step, linear with slerp, cubic spline), the morph weights and
/// eight influences, on the GPU and the CPU, against positions worked out by hand; a clip
/// loops or holds its end.
#[test]
fn interpolation_modes_pose_a_hand_made_rig() {
    let ctx = context();
    let folder = TempFolder::new("rigged-triangle");
    let path = folder.0.join("rigged.glb");
    std::fs::write(&path, rigged_triangle(false)).unwrap();
    let rig = Rig::load(&path).unwrap();
    assert_eq!(rig.influences, 8);
    assert_eq!(rig.clips.len(), 3);
    let rest = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
    let (s, c) = std::f32::consts::FRAC_PI_4.sin_cos();
    let turned = |p: [f32; 3], lift: f32| [c * p[0] - s * p[1], s * p[0] + c * p[1], p[2] + lift];
    // (clip, looping, time, expected)
    let cases: Vec<(&str, bool, f32, [[f32; 3]; 3])> = vec![
        ("steps", false, 0.0, rest),
        ("steps", false, 0.999, rest),
        (
            "steps",
            false,
            1.5,
            [[0.0, 0.5, 0.0], [1.0, 1.0, 0.0], [0.0, 3.0, 0.0]],
        ),
        (
            "steps",
            false,
            2.5,
            [[0.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 5.0, 0.0]],
        ),
        (
            "steps",
            true,
            3.5,
            [[0.0, 0.5, 0.0], [1.0, 1.0, 0.0], [0.0, 3.0, 0.0]],
        ),
        ("linear", false, 0.5, rest.map(|p| turned(p, 0.5))),
        (
            "linear",
            false,
            7.0,
            [[0.0, 0.0, 1.0], [0.0, 1.0, 1.0], [-1.0, 0.0, 1.0]],
        ),
        (
            "cubic",
            false,
            1.0,
            [[0.0, 0.1875, 0.0], [1.0, 0.375, 0.0], [0.0, 1.75, 0.0]],
        ),
        ("cubic", false, 0.0, rest),
    ];
    for (name, looping, time, expected) in cases {
        let at = ClipTime {
            clip: rig.find_clip(name),
            looping,
        };
        let label = format!("{name} at {time} s (looping {looping})");
        let cpu = rig.posed_positions(&rig.pose(at, time, Mat4::IDENTITY));
        assert_positions(&cpu, &expected, &format!("CPU {label}"));
        let skinner = Skinner::new(&ctx, rig.clone(), at, Mat4::IDENTITY).unwrap();
        assert_positions(
            &gpu_pose(&ctx, &skinner, time),
            &expected,
            &format!("GPU {label}"),
        );
    }
    // Without a clip the rig rests in its bind pose, which is the static loader's mesh.
    let still = ClipTime {
        clip: None,
        looping: false,
    };
    let bind = Mesh::load(&path).unwrap();
    assert_positions(
        &rig.posed_positions(&rig.pose(still, 3.0, Mat4::IDENTITY)),
        &bind.positions,
        "rest pose",
    );
    assert_valid(&ctx);
}

/// The cloth sequence's folder in the tests' data (its first four frames).
fn cloth() -> std::path::PathBuf {
    test_data("sequences/vellum-cloth")
}

/// A folder of numbered files and a printf pattern name the same sequence; a stream hands
/// the GPU each file's positions, in order, out of order, held past the end and looping.
#[test]
fn cloth_sequence_streams_its_files_to_the_gpu() {
    let ctx = context();
    let by_folder = FrameFiles::open(&cloth()).unwrap();
    let by_pattern = FrameFiles::open(&cloth().join("frame_%04d.obj")).unwrap();
    assert_eq!(by_folder.len(), 4);
    assert_eq!(by_folder.first_number(), 0);
    for n in 0..4 {
        assert_eq!(by_folder.path(n), by_pattern.path(n));
    }
    let meshes: Vec<Mesh> = (0..4)
        .map(|n| Mesh::load(by_folder.path(n)).unwrap())
        .collect();
    assert_ne!(meshes[0].positions, meshes[3].positions, "the cloth moves");
    for looping in [false, true] {
        let stream = FileStream::new(
            &ctx,
            by_folder.clone(),
            &meshes[0],
            Mat4::IDENTITY,
            looping,
            2,
        )
        .unwrap();
        let out = ctx
            .create_buffer(
                "frame",
                12 * stream.vertex_count() as u64,
                MemoryKind::Device,
            )
            .unwrap();
        for (slot, frame) in [0u32, 1, 2, 3, 1, 2, 6, 6, 0].into_iter().enumerate() {
            ctx.submit_and_wait(|rec| stream.record(rec, frame, slot % 2, &out))
                .unwrap();
            let got: Vec<[f32; 3]> = ctx.download(&out, 0, meshes[0].positions.len()).unwrap();
            let file = if looping { frame % 4 } else { frame.min(3) } as usize;
            assert!(
                got == meshes[file].positions,
                "frame {frame} (looping {looping}) is not file {file}"
            );
        }
    }
    assert_valid(&ctx);
}

/// A sequence with a missing frame, a frame of another topology or a malformed frame is an
/// error naming the file, before any frame is made.
#[test]
fn bad_sequences_name_the_file() {
    let folder = TempFolder::new("bad-sequence");
    let frame = |n: u32| folder.0.join(format!("frame_{n:04}.obj"));
    for n in [0, 1, 3] {
        std::fs::copy(cloth().join(format!("frame_{n:04}.obj")), frame(n)).unwrap();
    }
    let error = FrameFiles::open(&folder.0).unwrap_err().to_string();
    assert!(
        error.contains("frame_0002.obj") && error.contains("missing"),
        "{error}"
    );

    std::fs::remove_file(frame(3)).unwrap();
    let text = std::fs::read_to_string(frame(1)).unwrap();
    let open = |spec: &std::path::Path| {
        MeshInput::open(spec, &OpenOptions::default())
            .and_then(|input| input.bounds(Mat4::IDENTITY))
    };
    // A face joining other vertices.
    let first_face = text.find("\nf ").unwrap() + 1;
    let line_end = first_face + text[first_face..].find('\n').unwrap();
    let changed = format!("{}f 1 2 3{}", &text[..first_face], &text[line_end..]);
    std::fs::write(frame(1), changed).unwrap();
    let error = open(&folder.0).expect_err("a changed topology").to_string();
    assert!(
        error.contains("frame_0001.obj") && error.contains("topology"),
        "{error}"
    );
    // Fewer vertices.
    let first_vertex = text.find("v ").unwrap();
    let vertex_end = first_vertex + text[first_vertex..].find('\n').unwrap() + 1;
    let fewer = format!("{}{}", &text[..first_vertex], &text[vertex_end..]);
    std::fs::write(frame(1), fewer).unwrap();
    let error = open(&folder.0).expect_err("a vertex fewer").to_string();
    assert!(error.contains("frame_0001.obj"), "{error}");
    // Not a mesh at all.
    std::fs::write(frame(1), "v 1 2\nf 1 2 3\n").unwrap();
    let error = open(&folder.0).expect_err("a malformed frame").to_string();
    assert!(
        error.contains("frame_0001.obj") && error.contains("line 1"),
        "{error}"
    );
    // Streamed, the good frame arrives and the bad one is an error naming its file, even
    // though the readers read it ahead.
    let ctx = context();
    let first = Mesh::load(&frame(0)).unwrap();
    let files = FrameFiles::open(&folder.0).unwrap();
    let stream = FileStream::new(&ctx, files, &first, Mat4::IDENTITY, false, 2).unwrap();
    assert_eq!(stream.positions(0).unwrap(), first.positions);
    let error = stream.positions(1).unwrap_err().to_string();
    assert!(error.contains("frame_0001.obj"), "{error}");
    drop(stream);
    // No sequence at all.
    let error = open(&folder.0.join("other_%02d.ply"))
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("no files"), "{error}");
}

/// Loop subdivision on the GPU equals the CPU's stencils, level after level, on a skinned
/// character's control mesh; the refined mesh has 4^N times the triangles.
#[test]
fn loop_subdivision_on_the_gpu_matches_the_cpu() {
    let ctx = context();
    let rig = Rig::load(&test_data("gltf/CesiumMan.glb")).unwrap();
    let control = &rig.rest.mesh;
    for levels in 1..=2u32 {
        let subdivision =
            LoopSubdivision::new(&control.triangles, control.positions.len() as u32, levels)
                .unwrap();
        assert_eq!(
            subdivision.triangles.len(),
            control.triangles.len() << (2 * levels)
        );
        let subdivider = Subdivider::new(&ctx, &subdivision).unwrap();
        let input = ctx
            .create_buffer_with("control", &control.positions)
            .unwrap();
        let n = subdivider.refined_vertex_count();
        let out = ctx
            .create_buffer("refined", 12 * n as u64, MemoryKind::Device)
            .unwrap();
        ctx.submit_and_wait(|rec| subdivider.record(rec, &input, &out))
            .unwrap();
        let gpu: Vec<[f32; 3]> = ctx.download(&out, 0, n as usize).unwrap();
        let cpu = subdivision.apply(&control.positions);
        let error = relative_error(&gpu, &cpu);
        assert!(error < 1e-5, "{levels} levels: {error}");
    }
    assert_valid(&ctx);
}

/// The GPU's normals of posed triangles equal the CPU's (shared across a seam's copies of a
/// vertex), and displacement moves each vertex along its normal by its height.
#[test]
fn normals_and_displacement_match_the_cpu() {
    let ctx = context();
    let rig = Rig::load(&test_data("gltf/CesiumMan.glb")).unwrap();
    let at = ClipTime {
        clip: Some(0),
        looping: true,
    };
    let skinner = Skinner::new(&ctx, rig.clone(), at, Mat4::IDENTITY).unwrap();
    let triangles = &rig.rest.mesh.triangles;
    let positions = rig.posed_positions(&skinner.pose(0.4));
    let surface = SurfaceNormals::new(&ctx, &rig.rest.mesh.positions, triangles).unwrap();
    let n = positions.len();
    let positions_gpu = ctx.create_buffer_with("posed", &positions).unwrap();
    let triangles_gpu = ctx.create_buffer_with("triangles", triangles).unwrap();
    let heights: Vec<f32> = (0..n).map(|v| (v % 7) as f32 / 7.0 - 0.5).collect();
    let heights_gpu = ctx.create_buffer_with("heights", &heights).unwrap();
    let normals_gpu = ctx
        .create_buffer("normals", 12 * n as u64, MemoryKind::Device)
        .unwrap();
    let displaced_gpu = ctx
        .create_buffer("displaced", 12 * n as u64, MemoryKind::Device)
        .unwrap();
    ctx.submit_and_wait(|rec| {
        surface.record(rec, &positions_gpu, &triangles_gpu, &normals_gpu)?;
        surface.record_displacement(
            rec,
            &positions_gpu,
            &triangles_gpu,
            &heights_gpu,
            0.1,
            &displaced_gpu,
        )
    })
    .unwrap();
    let normals: Vec<[f32; 3]> = ctx.download(&normals_gpu, 0, n).unwrap();
    let displaced: Vec<[f32; 3]> = ctx.download(&displaced_gpu, 0, n).unwrap();
    let ring = rings(&rig.rest.mesh.positions, triangles);
    let expected = ring_normals(&positions, triangles, (&ring.0, &ring.1));
    let mut seams = 0;
    for v in 0..n {
        let (got, want) = (Vec3::from(normals[v]), Vec3::from(expected[v]));
        assert!((got - want).length() < 1e-4, "vertex {v}: {got} vs {want}");
        let moved = Vec3::from(positions[v]) + 0.1 * heights[v] * want;
        assert!(
            (Vec3::from(displaced[v]) - moved).length() < 1e-5,
            "vertex {v} displaced"
        );
        // Copies of a vertex along a seam share the normal.
        if let Some(w) = (0..v).find(|&w| rig.rest.mesh.positions[w] == rig.rest.mesh.positions[v])
        {
            seams += 1;
            assert_eq!(
                normals[w], normals[v],
                "vertices {w} and {v} at one rest position"
            );
        }
    }
    assert!(seams > 0, "CesiumMan has seams");
    assert_valid(&ctx);
}

/// Every structure canopy traces renders an animated character (refined and displaced) and
/// the cloth sequence through the frame sequence, three frames in flight; frames differ.
#[test]
fn animated_meshes_render_through_every_structure() {
    let ctx = context();
    let look = MeshLook {
        shading: MeshShading::Auto,
        ..MeshLook::default()
    };
    let subjects = [
        (
            "CesiumMan, 1 level, displaced",
            MeshInput::open(
                &test_data("gltf/CesiumMan.glb"),
                &OpenOptions {
                    looping: true,
                    ..OpenOptions::default()
                },
            )
            .unwrap(),
            Refinement {
                levels: 1,
                displace: Some(0.02),
            },
        ),
        (
            "cloth",
            MeshInput::open(&cloth(), &OpenOptions::default()).unwrap(),
            Refinement::default(),
        ),
    ];
    for (label, input, refinement) in subjects {
        let subject =
            Subject::animated(&ctx, input, &look, refinement, DEFAULT_FRAMES_IN_FLIGHT).unwrap();
        for structure in StructureKind::ALL.into_iter().filter(|k| k.traceable()) {
            let config = SequenceConfig {
                structure,
                width: 96,
                height: 72,
                ..SequenceConfig::default()
            };
            let mut sequence = FrameSequence::new(&ctx, &subject, config).unwrap();
            let mut images = Vec::new();
            sequence
                .render(&[0, 3], |finished| {
                    images.push(finished.image.rgba8().to_vec());
                    Ok::<_, canopy::vk::Error>(Flow::Continue)
                })
                .unwrap();
            assert_eq!(images.len(), 2, "{label} through {structure:?}");
            assert_ne!(
                images[0], images[1],
                "{label} through {structure:?}: frames equal"
            );
        }
    }
    assert_valid(&ctx);
}

/// A glTF camera is read with its node and field of view, and a subject seen through it looks
/// from the node's placed position down its -z axis.
#[test]
fn a_gltf_camera_places_the_view() {
    let ctx = context();
    let folder = TempFolder::new("rigged-camera");
    let path = folder.0.join("rigged.glb");
    std::fs::write(&path, rigged_triangle(false)).unwrap();
    let input = MeshInput::open(
        &path,
        &OpenOptions {
            clip: Some("steps".into()),
            posed: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    let MeshInput::Rig(rig, _) = &input else {
        panic!("an animated glTF file is posed");
    };
    assert_eq!(rig.cameras.len(), 1);
    let camera = &rig.cameras[0];
    assert_eq!(camera.name.as_deref(), Some("front"));
    assert_eq!((camera.node, camera.yfov), (3, 0.5));
    let mut subject = Subject::animated(
        &ctx,
        input,
        &MeshLook::default(),
        Refinement::default(),
        DEFAULT_FRAMES_IN_FLIGHT,
    )
    .unwrap();
    subject.gltf_camera = Some((3, 0.5));
    let view = subject.camera(0.0, 1.5);
    let forward = (view.target - view.position).normalize();
    assert!((forward - Vec3::NEG_Z).length() < 1e-5, "{forward}");
    assert!((view.fov_y_degrees - 0.5f32.to_degrees()).abs() < 1e-4);
    // The mesh is placed in the unit sphere and the camera moves with it, by the same matrix:
    // over every frame the triangle spans x 0..1 and y 0..5 (the steps clip's last key), so
    // the placement is a move by -(0.5, 2.5, 0) and a scale by 1 / 2.55.
    let centre = Vec3::new(0.5, 2.5, 0.0);
    let half_diagonal = Vec3::new(1.0, 5.0, 0.0).length() / 2.0;
    let placed = (Vec3::new(0.5, 0.5, 4.0) - centre) / half_diagonal;
    assert!(
        (view.position - placed).length() < 1e-4,
        "{} vs {placed}",
        view.position
    );
    assert_valid(&ctx);
}

/// Two skins pose their own instances: a clip moving one skin's joints leaves the other's
/// instance at rest, on the GPU as on the CPU.
#[test]
fn each_skin_poses_its_own_instance() {
    let ctx = context();
    let folder = TempFolder::new("rigged-pair");
    let path = folder.0.join("pair.glb");
    std::fs::write(&path, rigged_triangle(true)).unwrap();
    let rig = Rig::load(&path).unwrap();
    assert_eq!(rig.rest.mesh.positions.len(), 6);
    assert_eq!(rig.palette_len(), 4);
    let at = ClipTime {
        clip: rig.find_clip("steps"),
        looping: false,
    };
    let expected = [
        [0.0, 0.5, 0.0],
        [1.0, 1.0, 0.0],
        [0.0, 3.0, 0.0],
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
    ];
    let skinner = Skinner::new(&ctx, rig.clone(), at, Mat4::IDENTITY).unwrap();
    assert_positions(&gpu_pose(&ctx, &skinner, 1.5), &expected, "GPU");
    assert_positions(&rig.posed_positions(&skinner.pose(1.5)), &expected, "CPU");
    assert_valid(&ctx);
}
