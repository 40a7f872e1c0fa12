//! Animated input on the GPU: glTF skinning and morph targets against the CPU's posing of the
//! same samples on real skinned models and on small hand-made files for each interpolation.

mod common;

use canopy::scene::animated::skin::Skinner;
use canopy::scene::rig::{ClipTime, Rig};
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
/// (1,1,0) over 2 s, leaving with tangent (0,1,0) per second).
fn rigged_triangle() -> Vec<u8> {
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
    let json = format!(
        r#"{{
        "asset": {{"version": "2.0"}},
        "scene": 0,
        "scenes": [{{"nodes": [0, 1]}}],
        "nodes": [
            {{"mesh": 0, "skin": 0}},
            {{"children": [2]}},
            {{"translation": [1, 0, 0]}}
        ],
        "skins": [{{"joints": [1, 2], "inverseBindMatrices": 6}}],
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
    std::fs::write(&path, rigged_triangle()).unwrap();
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
    let bind = canopy::scene::Mesh::load(&path).unwrap();
    assert_positions(
        &rig.posed_positions(&rig.pose(still, 3.0, Mat4::IDENTITY)),
        &bind.positions,
        "rest pose",
    );
    assert_valid(&ctx);
}
