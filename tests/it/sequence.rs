//! `FrameSequence`: frames rendered several in flight and handed to a sink in order; a
//! kd-tree whose lists overflow is grown and its frames rendered again (the frames in flight
//! behind too), giving the images of a build that never overflowed, however many are in
//! flight; the frames in flight fit the readback budget; a sink can stop the sequence; a
//! source's limit on frames in flight is kept.

use crate::common;

use canopy::accel::StructureKind;
use canopy::accel::kdtree::build::KdBuildParams;
use canopy::render::presets::Subject;
use canopy::render::{Camera, FrameSource, SceneGpu, ShadingParams};
use canopy::scene::animated::FrameTime;
use canopy::sequence::{DEFAULT_FRAMES_IN_FLIGHT, Flow, FrameSequence, SequenceConfig};
use canopy::vk::{Context, Error, Recorder};
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

/// The frames each sink call received and their images, the frames rendered again, and the
/// most frames in flight as a frame was handed on.
fn render(
    ctx: &Context,
    subject: &Subject,
    config: SequenceConfig,
) -> (Vec<(u32, Vec<u8>)>, u32, usize) {
    let mut sequence = FrameSequence::new(ctx, subject, config).unwrap();
    let mut received = Vec::new();
    let mut most_in_flight = 0;
    sequence
        .render(&FRAMES, |finished| {
            received.push((finished.frame, finished.image.rgba8().to_vec()));
            most_in_flight = most_in_flight.max(finished.in_flight);
            Ok::<_, Error>(Flow::Continue)
        })
        .unwrap();
    assert_valid(ctx);
    (received, sequence.rerendered(), most_in_flight)
}

#[test]
fn overflowing_kd_tree_lists_grow_and_frames_render_again_whatever_is_in_flight() {
    let ctx = context();
    let subject = Subject::default_scene(&ctx, 3000).unwrap();
    let roomy = config(StructureKind::KdTree, KdBuildParams::default());
    let (expected, rerendered, in_flight) = render(&ctx, &subject, roomy);
    assert_eq!((rerendered, in_flight), (0, DEFAULT_FRAMES_IN_FLIGHT));
    // Lists far too small: the first frame's build overflows while those after it are in
    // flight (none, or two).
    for frames_in_flight in [1, DEFAULT_FRAMES_IN_FLIGHT] {
        let cramped = SequenceConfig {
            frames_in_flight,
            ..config(StructureKind::KdTree, cramped_kd_params())
        };
        let (got, rerendered, in_flight) = render(&ctx, &subject, cramped);
        assert!(rerendered > 0, "no build overflowed");
        assert_eq!(in_flight, frames_in_flight);
        let frames: Vec<u32> = got.iter().map(|(f, _)| *f).collect();
        assert_eq!(frames, FRAMES, "every frame once, in order");
        for ((frame, image), (_, want)) in got.iter().zip(&expected) {
            assert!(
                image == want,
                "frame {frame} differs from the roomy build's ({frames_in_flight} in flight)"
            );
        }
    }
    // The LBVH sees the same scene.
    let (lbvh, ..) = render(
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

/// Fewer frames stay in flight where as many readbacks as asked for would exceed the
/// readback budget, but not fewer than two (nor more than asked for); the images are the same.
#[test]
fn the_frames_in_flight_fit_the_readback_budget() {
    let ctx = context();
    let subject = Subject::default_scene(&ctx, 3000).unwrap();
    let lbvh = config(StructureKind::Lbvh, KdBuildParams::default());
    let (expected, _, in_flight) = render(&ctx, &subject, lbvh.clone());
    assert_eq!(in_flight, DEFAULT_FRAMES_IN_FLIGHT);
    let frame_bytes = FrameSequence::new(&ctx, &subject, lbvh.clone())
        .unwrap()
        .readback_bytes();
    for (frames_in_flight, budget, kept) in [
        (3, 3 * frame_bytes, 3),
        (3, 3 * frame_bytes - 1, 2),
        (3, 0, 2),
        (5, 4 * frame_bytes, 4),
        (1, 0, 1),
    ] {
        let config = SequenceConfig {
            frames_in_flight,
            readback_budget: budget,
            ..lbvh.clone()
        };
        let sequence = FrameSequence::new(&ctx, &subject, config.clone()).unwrap();
        assert_eq!(
            sequence.frames_in_flight(),
            kept,
            "{frames_in_flight} within {budget}"
        );
        drop(sequence);
        let (got, _, in_flight) = render(&ctx, &subject, config);
        assert_eq!(in_flight, kept, "{frames_in_flight} within {budget}");
        assert!(
            got == expected,
            "{frames_in_flight} within {budget}: other images"
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

/// The default scene as a source that can be recorded for `.1` frames in flight at most.
struct Limited<'a>(&'a Subject, usize);

impl FrameSource for Limited<'_> {
    fn scene(&self) -> &SceneGpu {
        self.0.scene()
    }

    fn record_frame(&self, rec: &mut Recorder, at: FrameTime) -> canopy::vk::Result<()> {
        self.0.record_frame(rec, at)
    }

    fn camera(&self, time: f32, aspect: f32) -> Camera {
        self.0.camera(time, aspect)
    }

    fn shading(&self) -> ShadingParams {
        self.0.shading()
    }

    fn max_frames_in_flight(&self) -> Option<usize> {
        Some(self.1)
    }
}

/// A sequence keeping more frames in flight than its source can be recorded for, or none, is
/// refused; one within the source's limit renders.
#[test]
fn a_source_limits_the_frames_in_flight() {
    let ctx = context();
    let subject = Subject::default_scene(&ctx, 1000).unwrap();
    let source = Limited(&subject, 2);
    let with = |frames_in_flight| SequenceConfig {
        frames_in_flight,
        ..config(StructureKind::Lbvh, KdBuildParams::default())
    };
    for refused in [0, 3] {
        let made = FrameSequence::new(&ctx, &source, with(refused));
        assert!(
            matches!(made, Err(Error::InvalidInput(_))),
            "{refused} frames in flight"
        );
    }
    let mut sequence = FrameSequence::new(&ctx, &source, with(2)).unwrap();
    let mut received = Vec::new();
    sequence
        .render(&FRAMES, |finished| {
            received.push((finished.frame, finished.in_flight));
            Ok::<_, Error>(Flow::Continue)
        })
        .unwrap();
    assert_eq!(received, [(0, 2), (5, 2), (10, 2), (15, 1)]);
    assert_valid(&ctx);
}
