//! `FrameSequence`: frames rendered two in flight and handed to a sink in order; a kd-tree
//! whose lists overflow is grown and its frames rendered again (the frame in flight behind
//! too), giving the images of a build that never overflowed; a sink can stop the sequence.

use crate::common;

use canopy::accel::StructureKind;
use canopy::accel::kdtree::build::KdBuildParams;
use canopy::render::presets::Subject;
use canopy::sequence::{Flow, FrameSequence, SequenceConfig};
use canopy::vk::{Context, Error};
use common::{assert_valid, context, cramped_kd_params};

const FRAMES: [u32; 4] = [0, 5, 10, 15];

fn config(structure: StructureKind, kdtree: KdBuildParams) -> SequenceConfig {
    SequenceConfig {
        structure,
        build: canopy::accel::BuildParams {
            kdtree,
            ..Default::default()
        },
        width: 64,
        height: 48,
        ..SequenceConfig::default()
    }
}

/// The frames each sink call received and their images, and the frames rendered again.
fn render(ctx: &Context, subject: &Subject, config: SequenceConfig) -> (Vec<(u32, Vec<u8>)>, u32) {
    let mut sequence = FrameSequence::new(ctx, subject, config).unwrap();
    let mut received = Vec::new();
    sequence
        .render(&FRAMES, |finished| {
            received.push((finished.frame, finished.image.rgba8().to_vec()));
            Ok::<_, Error>(Flow::Continue)
        })
        .unwrap();
    assert_valid(ctx);
    (received, sequence.rerendered())
}

#[test]
fn overflowing_kd_tree_lists_grow_and_frames_render_again_two_in_flight() {
    let ctx = context();
    let subject = Subject::default_scene(&ctx, 3000).unwrap();
    let roomy = config(StructureKind::KdTree, KdBuildParams::default());
    let (expected, rerendered) = render(&ctx, &subject, roomy);
    assert_eq!(rerendered, 0);
    // Lists far too small: the first frame's build overflows while the second is in flight.
    let cramped = config(StructureKind::KdTree, cramped_kd_params());
    let (got, rerendered) = render(&ctx, &subject, cramped);
    assert!(rerendered > 0, "no build overflowed");
    let frames: Vec<u32> = got.iter().map(|(f, _)| *f).collect();
    assert_eq!(frames, FRAMES, "every frame once, in order");
    for ((frame, image), (_, want)) in got.iter().zip(&expected) {
        assert!(
            image == want,
            "frame {frame} differs from the roomy build's"
        );
    }
    // The LBVH sees the same scene.
    let (lbvh, _) = render(
        &ctx,
        &subject,
        config(StructureKind::Lbvh, KdBuildParams::default()),
    );
    for ((frame, image), (_, kd)) in lbvh.iter().zip(&expected) {
        let off = image
            .chunks(4)
            .zip(kd.chunks(4))
            .filter(|(a, b)| a.iter().zip(*b).any(|(x, y)| x.abs_diff(*y) > 2))
            .count();
        assert!(
            off * 100 <= image.len() / 4,
            "frame {frame}: {off} pixels differ"
        );
    }
}

#[test]
fn a_sink_stops_the_sequence() {
    let ctx = context();
    let subject = Subject::default_scene(&ctx, 1000).unwrap();
    let mut sequence = FrameSequence::new(
        &ctx,
        &subject,
        config(StructureKind::Lbvh, KdBuildParams::default()),
    )
    .unwrap();
    let mut received = Vec::new();
    sequence
        .render(&FRAMES, |finished| {
            received.push(finished.frame);
            Ok::<_, Error>(if received.len() == 2 {
                Flow::Stop
            } else {
                Flow::Continue
            })
        })
        .unwrap();
    assert_eq!(received, [0, 5]);
    let failed = sequence.render(&FRAMES, |_| {
        Err(Error::InvalidInput("a sink's own error".into()))
    });
    assert!(matches!(failed, Err(Error::InvalidInput(_))));
    assert_valid(&ctx);
}
