//! Dispatch grids within the device's per-dimension workgroup limit: the folding of large
//! workgroup counts into 2D and 3D grids, the limit override that tests and users set, and
//! the device error for work that no grid holds. The kernels' side (every primitive, builder
//! and the renderer under a pretended limit of 64) is tested beside each of them.

use crate::common;

use canopy::vk::{
    Context, ContextOptions, Error, MIN_WORKGROUP_COUNT_OVERRIDE, Validation, grid_for,
};

/// The Rust mirror of `fold_grid` in glsl/common/dispatch.glsl.
fn groups_of(grid: [u32; 3]) -> u64 {
    grid.iter().map(|&d| d as u64).product()
}

#[test]
fn grids_fold_into_two_and_three_dimensions() {
    assert_eq!(grid_for(0, 64), Some([0, 1, 1]));
    assert_eq!(grid_for(1, 64), Some([1, 1, 1]));
    assert_eq!(grid_for(64, 64), Some([64, 1, 1]));
    assert_eq!(grid_for(65, 64), Some([64, 2, 1]));
    assert_eq!(grid_for(64 * 64, 64), Some([64, 64, 1]));
    assert_eq!(grid_for(64 * 64 + 1, 64), Some([64, 64, 2]));
    assert_eq!(grid_for(64 * 64 * 64, 64), Some([64, 64, 64]));
    assert_eq!(grid_for(64 * 64 * 64 + 1, 64), None);
    assert_eq!(grid_for(70_000, 65_535), Some([65_535, 2, 1]));
    assert_eq!(grid_for(u32::MAX, 65_535), Some([65_535, 65_535, 2]));
    // Every count: the grid covers it, within the limit, with fewer than one row of extras.
    for limit in [8u32, 64, 1000] {
        for groups in (0..200_000u32)
            .step_by(97)
            .chain([limit - 1, limit, limit + 1])
        {
            match grid_for(groups, limit) {
                Some(grid) => {
                    let total = groups_of(grid);
                    assert!(
                        grid.iter().all(|&d| d <= limit),
                        "{groups}/{limit}: {grid:?}"
                    );
                    assert!(total >= groups as u64, "{groups}/{limit}: {grid:?}");
                    let row = grid[0] as u64 * grid[1] as u64;
                    assert!(
                        total - (groups as u64) < row.max(1),
                        "{groups}/{limit}: {grid:?} wastes a layer"
                    );
                }
                None => assert!(groups as u64 > (limit as u64).pow(3)),
            }
        }
    }
}

#[test]
fn work_beyond_any_grid_is_a_device_limit_error() {
    let ctx = common::folding_context();
    let limit = common::FOLDING_LIMIT;
    assert!(ctx.dispatch_grid(limit.pow(3)).is_ok());
    let err = ctx.dispatch_grid(limit.pow(3) + 1).unwrap_err();
    assert!(matches!(err, Error::DeviceLimit { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("maxComputeWorkGroupCount") && text.contains(&ctx.caps().name),
        "{text}"
    );
}

#[test]
fn the_limit_override_is_checked_and_only_lowers_the_limit() {
    let too_small = Context::new(&ContextOptions {
        validation: Validation::Off,
        max_workgroup_count: Some(MIN_WORKGROUP_COUNT_OVERRIDE - 1),
        ..Default::default()
    });
    assert!(matches!(too_small, Err(Error::InvalidInput(_))));
    let device = common::context().caps().max_workgroup_count;
    assert!(device >= 65_535, "Vulkan guarantees 65,535 per dimension");
    let above = Context::new(&ContextOptions {
        validation: Validation::Off,
        max_workgroup_count: Some(u32::MAX),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(above.caps().max_workgroup_count, device);
}

#[test]
fn the_environment_sets_the_limit_for_the_command_line() {
    let run = |value: &str| {
        let folder = common::files::TempFolder::new("info");
        let output = common::files::canopy_in(&folder.0)
            .arg("info")
            .env("CANOPY_MAX_WORKGROUPS", value)
            .output()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned()
                + &String::from_utf8_lossy(&output.stderr),
        )
    };
    let (ok, text) = run("64");
    assert!(ok && text.contains("64 per dimension"), "{text}");
    let (ok, text) = run("lots");
    assert!(!ok && text.contains("CANOPY_MAX_WORKGROUPS"), "{text}");
}
