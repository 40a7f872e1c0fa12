//! `cargo bench --bench render`: whole frames of the default scene at 10K triangles, 320x180,
//! two bounces, through the LBVH and the kd-tree rebuilt every frame, per stage, with the work
//! of a frame and the camera rays traced alone (`canopy::bench::frames`, as `canopy bench
//! render`, whose defaults are 1M triangles at 1920x1080).

mod common;

use canopy::accel::StructureKind;
use canopy::bench::frames::{FrameConfig, measure};
use canopy::render::presets::Subject;

fn main() {
    let ctx = common::context();
    let config = FrameConfig {
        width: 320,
        height: 180,
        repeats: 3,
        ..FrameConfig::default()
    };
    let subject = Subject::default_scene(&ctx, 10_000).expect("the scene is made");
    let reports: Vec<_> = [StructureKind::Lbvh, StructureKind::KdTree]
        .into_iter()
        .map(|structure| {
            let report = measure(&ctx, &subject, "default scene", structure, &config)
                .expect("the frames are rendered");
            print!("{report}");
            report
        })
        .collect();
    common::write_json("render", &reports);
}
