//! `canopy info`: the Vulkan devices present, and what canopy reads off the selected one.

use super::CliError;
use canopy::vk::raw;
use canopy::vk::{Context, ContextOptions, list_devices};

fn type_name(t: raw::PhysicalDeviceType) -> &'static str {
    match t {
        raw::PhysicalDeviceType::DISCRETE_GPU => "discrete GPU",
        raw::PhysicalDeviceType::INTEGRATED_GPU => "integrated GPU",
        raw::PhysicalDeviceType::VIRTUAL_GPU => "virtual GPU",
        raw::PhysicalDeviceType::CPU => "CPU",
        _ => "other",
    }
}

fn subgroup_op_names(ops: raw::SubgroupFeatureFlags) -> String {
    use raw::SubgroupFeatureFlags as F;
    let names = [
        (F::BASIC, "basic"),
        (F::VOTE, "vote"),
        (F::ARITHMETIC, "arithmetic"),
        (F::BALLOT, "ballot"),
        (F::SHUFFLE, "shuffle"),
        (F::SHUFFLE_RELATIVE, "shuffle-relative"),
        (F::CLUSTERED, "clustered"),
        (F::QUAD, "quad"),
        (F::ROTATE_KHR, "rotate"),
        (F::ROTATE_CLUSTERED_KHR, "rotate-clustered"),
        (F::PARTITIONED_NV, "partitioned"),
    ];
    let list: Vec<&str> = names
        .iter()
        .filter(|(flag, _)| ops.contains(*flag))
        .map(|(_, name)| *name)
        .collect();
    if list.is_empty() {
        "none".into()
    } else {
        list.join(", ")
    }
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

const GIB: f64 = (1u64 << 30) as f64;

/// Prints the device list and the selected device's capabilities; returns its context.
pub fn run(options: &ContextOptions) -> Result<Context, CliError> {
    let devices = list_devices()?;
    println!("Vulkan devices:");
    for (i, (name, t)) in devices.iter().enumerate() {
        println!("  {i}: {name}  [{}]", type_name(*t));
    }
    if devices.is_empty() {
        println!("  (none)");
    }

    let ctx = super::context(options)?;
    let caps = ctx.caps();
    // The same rule Context::new applies: an index if one was given, else the first device of
    // that name (identical GPUs share a name; selection by name picks the first).
    let requested = options
        .device
        .clone()
        .or_else(|| std::env::var("CANOPY_DEVICE").ok())
        .and_then(|d| d.parse::<usize>().ok());
    let index = requested.or_else(|| devices.iter().position(|d| d.0 == caps.name));
    let index = index.map_or_else(|| "?".to_string(), |i| i.to_string());

    let v = caps.api_version;
    let rows: Vec<(&str, String)> = vec![
        ("driver", caps.driver.clone()),
        (
            "Vulkan API",
            format!(
                "{}.{}.{}",
                raw::api_version_major(v),
                raw::api_version_minor(v),
                raw::api_version_patch(v)
            ),
        ),
        ("device type", type_name(caps.device_type).into()),
        (
            "subgroup size",
            format!(
                "{} (range {}..={})",
                caps.subgroup_size, caps.subgroup_size_range.0, caps.subgroup_size_range.1
            ),
        ),
        ("subgroup operations", subgroup_op_names(caps.subgroup_ops)),
        ("full subgroups", yes_no(caps.full_subgroups).into()),
        (
            "shared memory",
            format!("{} KiB per workgroup", caps.max_shared_memory / 1024),
        ),
        (
            "max workgroup size",
            format!("{} invocations", caps.max_workgroup_size),
        ),
        (
            "workgroup count",
            format!(
                "{} per dimension (larger grids are folded into 2D and 3D)",
                caps.max_workgroup_count
            ),
        ),
        (
            "max storage buffer",
            format!("{} MiB", caps.max_storage_buffer_range >> 20),
        ),
        (
            "timestamp period",
            format!("{} ns", caps.timestamp_period_ns),
        ),
        ("float atomic add", yes_no(caps.float_atomic_add).into()),
        (
            "accel structures",
            yes_no(caps.acceleration_structure).into(),
        ),
        ("validation layer", {
            let on = ctx.validation_enabled();
            (if on { "on" } else { "off" }).into()
        }),
    ];
    println!();
    println!("device {index}: {}", caps.name);
    for (key, value) in rows {
        println!("  {:<21}{value}", format!("{key}:"));
    }
    println!("  memory heaps:");
    for (i, (bytes, device_local)) in caps.heaps.iter().enumerate() {
        let kind = if *device_local {
            "device-local"
        } else {
            "host"
        };
        println!("    {i}: {:.2} GiB {kind}", *bytes as f64 / GIB);
    }
    Ok(ctx)
}
