//! A render farm's job through the library: frames 0..8 of the default scene on two devices at
//! once (the same device twice where there is one), PNG files into a folder, the frames
//! written already skipped, so a rerun after a crash renders only the missing ones.
//!
//! `cargo run --release --example farm -- [OUT_FOLDER]` (default: `target/farm`).

use canopy::export::{OutputNaming, Shard, WriterOptions, parse_frames};
use canopy::job::{
    FramePlan, ImageOutput, JobError, JobOutputs, JobSetup, RenderJob, ResumeMode, StopFlag,
};
use canopy::render::presets::Subject;
use canopy::sequence::SequenceConfig;
use canopy::vk::{ContextOptions, Validation};
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or("target/farm".into()));
    let naming = OutputNaming::parse(&out, None)?;
    let frames = parse_frames("0..8")?;
    let plan = FramePlan::new(
        &frames,
        Shard::WHOLE,
        Some(&naming),
        ResumeMode::SkipExisting,
    )?;
    // The validation layer where it is installed: a validation error fails the example.
    let device = ContextOptions {
        validation: Validation::IfAvailable,
        ..ContextOptions::default()
    };
    let subject = |ctx: &_| Ok(Subject::default_scene(ctx, 20_000)?);
    let config = |_: &_| {
        let (width, height) = (320, 180);
        Ok(SequenceConfig {
            width,
            height,
            ..SequenceConfig::default()
        })
    };
    let report = RenderJob::<_, JobError> {
        frames: &plan,
        devices: &[device.clone(), device],
        setup: JobSetup::new(&subject, &config),
        outputs: JobOutputs {
            images: Some(ImageOutput {
                naming,
                options: WriterOptions::default(),
            }),
            ..JobOutputs::default()
        },
    }
    .run(&StopFlag::new(), |_| {});
    report.outcome?;
    let skipped = plan.skipped().len();
    println!("{} written, {skipped} skipped", report.written.len());
    Ok(())
}
