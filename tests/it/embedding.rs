//! What an application embedding canopy meets: its device's features checked by name, its own
//! buffers wrapped (refused without the usage canopy needs, never freed by canopy). The whole
//! embedding, an application's own device and command buffer, is `examples/embed.rs`, run
//! by `tests/examples.rs`.

use crate::common;

use canopy::vk::raw as vk;
use canopy::vk::{Error, FeatureSupport};
use common::{assert_valid, context};

fn full_support() -> FeatureSupport {
    FeatureSupport {
        shader_int64: true,
        buffer_device_address: true,
        shader_buffer_int64_atomics: true,
        scalar_block_layout: true,
        host_query_reset: true,
        timeline_semaphore: true,
        vulkan_memory_model: true,
        vulkan_memory_model_device_scope: true,
        synchronization2: true,
        maintenance4: true,
        full_subgroups: false,
    }
}

#[test]
fn a_device_without_a_required_feature_is_refused_with_the_feature_named() {
    assert!(full_support().check("a device").is_ok());
    let lacking = FeatureSupport {
        shader_buffer_int64_atomics: false,
        maintenance4: false,
        ..full_support()
    };
    match lacking.check("a device") {
        Err(Error::MissingFeature { device, what }) => {
            assert_eq!(device, "a device");
            assert_eq!(what, "the features shaderBufferInt64Atomics, maintenance4");
        }
        other => panic!("expected a missing feature error, got {other:?}"),
    }
    // The device the tests run on has them all.
    let ctx = context();
    let support = FeatureSupport::of(ctx.instance(), ctx.physical_device());
    assert_eq!(support.missing(), Vec::<&str>::new());
}

#[test]
fn an_application_buffer_is_wrapped_checked_and_never_freed() {
    let ctx = context();
    let owned = ctx
        .create_buffer_with("application data", &[1u32, 2, 3, 4])
        .unwrap();
    let storage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_SRC;
    match ctx.wrap_buffer("app", owned.raw(), owned.size(), storage) {
        Err(Error::InvalidInput(message)) => {
            assert!(message.contains("SHADER_DEVICE_ADDRESS"), "{message}");
            assert!(!message.contains("STORAGE_BUFFER"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let usage = storage | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS;
    let view = ctx
        .wrap_buffer("app", owned.raw(), owned.size(), usage)
        .unwrap();
    assert_eq!(view.address(), owned.address());
    assert_eq!(ctx.download::<u32>(&view, 0, 4).unwrap(), [1, 2, 3, 4]);
    let live = ctx.device_memory().live;
    drop(view);
    assert_eq!(ctx.device_memory().live, live, "a view holds no memory");
    // The buffer is still alive after its view is gone (the validation layer would report a
    // use after destroy).
    assert_eq!(ctx.download::<u32>(&owned, 0, 4).unwrap(), [1, 2, 3, 4]);
    assert_valid(&ctx);
}
