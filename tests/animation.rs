//! Animated input on the GPU: glTF skinning and morph targets against the CPU's posing of the
//! same samples on real skinned models and on small hand-made files for each interpolation.

mod common;

use canopy::scene::animated::skin::Skinner;
use canopy::scene::rig::{ClipTime, Rig};
use canopy::vk::{Context, MemoryKind};
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
