//! The test harness itself: a Khronos validation error must fail a test (tests call
//! `common::assert_valid`, which relies on `Context::check_validation`), and a device that is
//! not there must be a clear error, not a panic.

use crate::common;

use canopy::vk::{Context, ContextOptions, Error, MemoryKind, Validation};

/// A context with the validation layer, or `None` (test skipped) under
/// `CANOPY_VALIDATION=off`, the switch for machines without the layer.
fn validated_context() -> Option<Context> {
    let _ = env_logger::builder().is_test(true).try_init();
    if std::env::var("CANOPY_VALIDATION").as_deref() == Ok("off") {
        eprintln!("CANOPY_VALIDATION=off: skipped");
        return None;
    }
    let ctx = Context::new(&ContextOptions {
        device: None,
        validation: Validation::Required,
        ..Default::default()
    })
    .expect("creating a Vulkan context with validation (run tools/setup.sh)");
    assert!(ctx.validation_enabled());
    Some(ctx)
}

#[test]
fn a_validation_error_fails_the_check() {
    let Some(ctx) = validated_context() else {
        return;
    };
    let buffer = ctx.create_buffer("target", 64, MemoryKind::Device).unwrap();
    // vkCmdFillBuffer needs dstOffset to be a multiple of 4 (VUID-vkCmdFillBuffer-dstOffset-00025).
    // The layer flags it; lavapipe still writes inside the buffer, so nothing crashes.
    ctx.submit_and_wait(|rec| {
        unsafe {
            ctx.device()
                .cmd_fill_buffer(rec.command_buffer(), buffer.raw(), 2, 8, 0)
        };
        Ok(())
    })
    .unwrap();
    match ctx.check_validation() {
        Err(Error::Validation(messages)) => {
            assert!(!messages.is_empty());
            let all = messages.join("\n");
            assert!(all.contains("dstOffset"), "unexpected messages:\n{all}");
            // The message reads as the harness prints it.
            let shown = Error::Validation(messages).to_string();
            assert!(shown.starts_with("Vulkan validation reported"), "{shown}");
        }
        other => panic!("expected a validation error, got {other:?}"),
    }
    // Taking the errors clears them.
    assert!(ctx.check_validation().is_ok());
}

#[test]
fn valid_work_passes_the_check() {
    let Some(ctx) = validated_context() else {
        return;
    };
    let buffer = ctx.create_buffer("target", 64, MemoryKind::Device).unwrap();
    ctx.submit_and_wait(|rec| {
        rec.fill(&buffer, 4, 8, 7);
        Ok(())
    })
    .unwrap();
    assert_eq!(ctx.download::<u32>(&buffer, 4, 2).unwrap(), [7, 7]);
    common::assert_valid(&ctx);
}

fn context_on(device: &str) -> canopy::vk::Result<Context> {
    Context::new(&ContextOptions {
        device: Some(device.into()),
        validation: Validation::Off,
        ..Default::default()
    })
}

#[test]
fn an_unknown_device_is_an_error_listing_the_devices() {
    for wanted in ["no-such-device", "999"] {
        let message = match context_on(wanted) {
            Ok(ctx) => panic!("'{wanted}' selected {}", ctx.caps().name),
            Err(e) => e.to_string(),
        };
        assert!(message.contains(wanted), "{message}");
        assert!(message.contains("available: 0: "), "{message}");
    }
}

#[test]
fn a_device_can_be_picked_by_index_and_by_name() {
    let devices = canopy::vk::list_devices().unwrap();
    assert!(!devices.is_empty());
    let by_index = context_on("0").unwrap();
    assert_eq!(by_index.caps().name, devices[0].0);
    // A case-insensitive substring of the name.
    let part: String = devices[0].0.chars().take(4).collect();
    let by_name = context_on(&part.to_uppercase()).unwrap();
    assert!(
        by_name
            .caps()
            .name
            .to_lowercase()
            .contains(&part.to_lowercase())
    );
}
