//! Offline animation export: canopy's deforming default scene, its kd-tree rebuilt from
//! scratch every frame on the GPU through the library's frame sequence (three frames in flight),
//! each finished frame written as a numbered PNG by worker threads.
//!
//! `cargo run --release --example sequence -- [FRAMES] [OUT_FOLDER]` (defaults: 8,
//! `target/sequence`).

use canopy::accel::StructureKind;
use canopy::export::ImageSequence;
use canopy::render::presets::Subject;
use canopy::sequence::{Flow, FrameSequence, SequenceConfig};
use canopy::vk::{Context, ContextOptions, Validation};
use std::error::Error;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let frames: u32 = args.next().map_or(Ok(8), |n| n.parse())?;
    let out = PathBuf::from(args.next().unwrap_or("target/sequence".into()));
    std::fs::create_dir_all(&out)?;

    // The validation layer where it is installed: a validation error fails the example.
    let ctx = Context::new(&ContextOptions {
        validation: Validation::IfAvailable,
        ..ContextOptions::default()
    })?;
    let subject = Subject::default_scene(&ctx, 20_000)?;
    let config = SequenceConfig {
        structure: StructureKind::KdTree,
        width: 320,
        height: 180,
        ..SequenceConfig::default()
    };
    let mut writer = ImageSequence::new(&out, config.width, config.height);
    let mut sequence = FrameSequence::new(&ctx, &subject, config)?;
    let numbers: Vec<u32> = (0..frames).collect();
    sequence.render(&numbers, |finished| {
        writer.submit(finished.frame, finished.image.rgba8().to_vec());
        let flow = if writer.failed() {
            Flow::Stop
        } else {
            Flow::Continue
        };
        Ok::<_, canopy::vk::Error>(flow)
    })?;
    let (written, failure) = writer.finish();
    if let Some(failure) = failure {
        return Err(failure.into());
    }
    println!(
        "{} frames of {} triangles written to {} ({} rendered again after their lists grew)",
        written.len(),
        subject.scene.triangle_count,
        out.display(),
        sequence.rerendered()
    );
    ctx.check_validation()?;
    Ok(())
}
