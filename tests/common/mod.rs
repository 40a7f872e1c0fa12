//! Shared test helpers: a validated context on the default device (lavapipe in CI), seeded
//! random input, and the sizes every primitive is checked at.
#![allow(dead_code)]

use canopy::vk::{Context, ContextOptions, Validation};

/// A context with the Khronos validation layer required (set `CANOPY_VALIDATION=off` to run
/// without it where the layer is not installed).
pub fn context() -> Context {
    let _ = env_logger::builder().is_test(true).try_init();
    let validation = match std::env::var("CANOPY_VALIDATION").as_deref() {
        Ok("off") => Validation::Off,
        _ => Validation::Required,
    };
    Context::new(&ContextOptions {
        device: None,
        validation,
    })
    .expect("creating a Vulkan context (run tools/setup.sh)")
}

/// Fails the test when validation reported errors.
pub fn assert_valid(ctx: &Context) {
    if let Err(e) = ctx.check_validation() {
        panic!("{e}");
    }
}

#[allow(unused_imports)] // not every test crate draws random input
pub use canopy::cpu::rng::Rng;

/// The sizes each primitive is checked at: 1, 2, subgroup±1, workgroup±1, `tile`±1, 10^5, 10^6.
pub fn sizes(ctx: &Context, tile: u32) -> Vec<u32> {
    let sg = ctx.caps().subgroup_size;
    let wg = canopy::prims::WORKGROUP_SIZE;
    let mut v = vec![
        1,
        2,
        sg - 1,
        sg,
        sg + 1,
        wg - 1,
        wg,
        wg + 1,
        tile - 1,
        tile,
        tile + 1,
        100_000,
        1_000_000,
    ];
    v.sort();
    v.dedup();
    v
}

/// `n` as a count: read by the GPU from `buffer` (which holds `n`) when `indirect`, else
/// passed from the host. Direct and indirect runs of a primitive must agree.
pub fn count_of(buffer: &canopy::vk::Buffer, n: u32, indirect: bool) -> canopy::prims::Count<'_> {
    if indirect {
        canopy::prims::Count::Device {
            buffer,
            offset: 0,
            max: n,
        }
    } else {
        canopy::prims::Count::Host(n)
    }
}
