//! canopy inside a Vulkan application: the application creates its own instance, device,
//! buffers and command buffer with ash, writes its triangles and rays with its own transfer
//! pass, hands its device and buffers to canopy, and records canopy's LBVH build and a trace
//! into its own command buffer between its own passes; its last pass copies canopy's hits
//! into its own readback buffer. One submission. The hits are checked against brute force,
//! and every object the application made is destroyed by the application, after canopy is
//! gone (with the validation layer on, a double destroy or a leak is an error).
//!
//! `cargo run --release --example embed`; exits non-zero on a wrong hit or a validation error.

use ash::vk;
use canopy::accel::bvh::Bvh;
use canopy::accel::bvh::lbvh::{LbvhBuilder, LbvhParams};
use canopy::geom::TriangleInput;
use canopy::geom::ray::{Hit, Query, Ray, closest_hit_brute_force};
use canopy::trace::Tracer;
use canopy::vk::{Context, Count, ExternalDevice, Recorder, RequiredFeatures, Slice};
use std::error::Error;
use std::ffi::{CStr, c_void};
use std::sync::atomic::{AtomicU32, Ordering};

const VALIDATION: &CStr = c"VK_LAYER_KHRONOS_validation";

/// Validation errors the layer reported.
static VALIDATION_ERRORS: AtomicU32 = AtomicU32::new(0);

unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user: *mut c_void,
) -> vk::Bool32 {
    if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) {
        VALIDATION_ERRORS.fetch_add(1, Ordering::Relaxed);
        let message = unsafe { (*data).message_as_c_str() }.unwrap_or_default();
        eprintln!("validation: {}", message.to_string_lossy());
    }
    vk::FALSE
}

/// The application's own buffer and its memory.
struct AppBuffer {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    size: u64,
    usage: vk::BufferUsageFlags,
}

impl AppBuffer {
    fn new(
        instance: &ash::Instance,
        physical: vk::PhysicalDevice,
        device: &ash::Device,
        size: u64,
        usage: vk::BufferUsageFlags,
        properties: vk::MemoryPropertyFlags,
    ) -> Result<Self, Box<dyn Error>> {
        let info = vk::BufferCreateInfo::default().size(size).usage(usage);
        let buffer = unsafe { device.create_buffer(&info, None)? };
        let needs = unsafe { device.get_buffer_memory_requirements(buffer) };
        let types = unsafe { instance.get_physical_device_memory_properties(physical) };
        let type_index = (0..types.memory_type_count)
            .find(|&i| {
                needs.memory_type_bits & (1 << i) != 0
                    && types.memory_types[i as usize]
                        .property_flags
                        .contains(properties)
            })
            .ok_or("no memory type for the application's buffer")?;
        let mut flags =
            vk::MemoryAllocateFlagsInfo::default().flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
        let allocate = vk::MemoryAllocateInfo::default()
            .allocation_size(needs.size)
            .memory_type_index(type_index)
            .push_next(&mut flags);
        let memory = unsafe { device.allocate_memory(&allocate, None)? };
        unsafe { device.bind_buffer_memory(buffer, memory, 0)? };
        Ok(Self {
            buffer,
            memory,
            size,
            usage,
        })
    }

    fn destroy(&self, device: &ash::Device) {
        unsafe {
            device.destroy_buffer(self.buffer, None);
            device.free_memory(self.memory, None);
        }
    }
}

/// A grid of `n` x `n` quads (two triangles each) in the plane z = 0, gently waved.
fn grid(n: u32) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    let side = n + 1;
    let positions = (0..side * side)
        .map(|i| {
            let (x, y) = ((i % side) as f32 / n as f32, (i / side) as f32 / n as f32);
            [x, y, 0.05 * (6.0 * x).sin() * (5.0 * y).cos()]
        })
        .collect();
    let triangles = (0..n * n)
        .flat_map(|q| {
            let (x, y) = (q % n, q / n);
            let v = y * side + x;
            [[v, v + 1, v + side], [v + 1, v + side + 1, v + side]]
        })
        .collect();
    (positions, triangles)
}

/// Rays from above the grid, straight down, some of them outside it.
fn rays(count: u32) -> Vec<Ray> {
    (0..count)
        .map(|i| {
            let (x, y) = ((i % 64) as f32 / 50.0 - 0.1, (i / 64) as f32 / 50.0 - 0.1);
            Ray {
                origin: [x, y, 1.0],
                tmin: 0.0,
                direction: [0.0, 0.0, -1.0],
                tmax: f32::INFINITY,
            }
        })
        .collect()
}

fn main() -> Result<(), Box<dyn Error>> {
    // The application's instance, with the validation layer where it is installed.
    let entry = unsafe { ash::Entry::load()? };
    let layers = unsafe { entry.enumerate_instance_layer_properties()? };
    let validate = layers
        .iter()
        .any(|l| l.layer_name_as_c_str() == Ok(VALIDATION));
    let layer_names = if validate {
        vec![VALIDATION.as_ptr()]
    } else {
        Vec::new()
    };
    let extensions = if validate {
        vec![ash::ext::debug_utils::NAME.as_ptr()]
    } else {
        Vec::new()
    };
    let app = vk::ApplicationInfo::default()
        .application_name(c"canopy embed example")
        .api_version(vk::API_VERSION_1_3);
    let instance_info = vk::InstanceCreateInfo::default()
        .application_info(&app)
        .enabled_layer_names(&layer_names)
        .enabled_extension_names(&extensions);
    let instance = unsafe { entry.create_instance(&instance_info, None)? };
    let debug = ash::ext::debug_utils::Instance::new(&entry, &instance);
    let messenger = validate
        .then(|| {
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR)
                .message_type(vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION)
                .pfn_user_callback(Some(on_message));
            unsafe { debug.create_debug_utils_messenger(&info, None) }
        })
        .transpose()?;

    // Its device: the first with Vulkan 1.3 and a compute queue, canopy's features chained
    // into its own create info.
    let physical = unsafe { instance.enumerate_physical_devices()? }
        .into_iter()
        .find(|&p| unsafe { instance.get_physical_device_properties(p) }.api_version >= vk::API_VERSION_1_3)
        .ok_or("no Vulkan 1.3 device")?;
    let family = unsafe { instance.get_physical_device_queue_family_properties(physical) }
        .iter()
        .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
        .ok_or("no compute queue")? as u32;
    let mut features = RequiredFeatures::for_device(&instance, physical)?;
    let priorities = [1.0];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(family)
        .queue_priorities(&priorities)];
    let device_info = features.chain(vk::DeviceCreateInfo::default().queue_create_infos(&queues));
    let device = unsafe { instance.create_device(physical, &device_info, None)? };
    let queue = unsafe { device.get_device_queue(family, 0) };

    // Its buffers: triangles and rays on the device, written from a staging buffer by its own
    // transfer pass; hits on the device, read back into its own host-visible buffer.
    let (positions, triangles) = grid(48);
    let rays = rays(64 * 64);
    let (ray_count, triangle_count) = (rays.len() as u32, triangles.len() as u32);
    let bytes = |data: &[u8]| data.len() as u64;
    let sizes = [
        bytes(bytemuck::cast_slice(&positions)),
        bytes(bytemuck::cast_slice(&triangles)),
        bytes(bytemuck::cast_slice(&rays)),
    ];
    let storage = vk::BufferUsageFlags::STORAGE_BUFFER
        | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS
        | vk::BufferUsageFlags::TRANSFER_SRC
        | vk::BufferUsageFlags::TRANSFER_DST;
    let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    let local = vk::MemoryPropertyFlags::DEVICE_LOCAL;
    let make = |size, usage, properties| {
        AppBuffer::new(&instance, physical, &device, size, usage, properties)
    };
    let staging = make(sizes.iter().sum(), vk::BufferUsageFlags::TRANSFER_SRC, host)?;
    let device_buffers = [
        make(sizes[0], storage, local)?,
        make(sizes[1], storage, local)?,
        make(sizes[2], storage, local)?,
    ];
    let hits_size = ray_count as u64 * size_of::<Hit>() as u64;
    let hits = make(hits_size, storage, local)?;
    let readback = make(hits_size, vk::BufferUsageFlags::TRANSFER_DST, host)?;
    unsafe {
        let mapped = device.map_memory(
            staging.memory,
            0,
            vk::WHOLE_SIZE,
            vk::MemoryMapFlags::empty(),
        )?;
        let target = std::slice::from_raw_parts_mut(mapped.cast::<u8>(), staging.size as usize);
        let all = [
            bytemuck::cast_slice(&positions),
            bytemuck::cast_slice(&triangles),
            bytemuck::cast_slice(&rays),
        ]
        .concat();
        target.copy_from_slice(&all);
        device.unmap_memory(staging.memory);
    }

    // canopy on the application's device, its buffers wrapped (not owned).
    let results = {
        let ctx = Context::from_external(ExternalDevice {
            entry: entry.clone(),
            instance: instance.clone(),
            physical_device: physical,
            device: device.clone(),
            queue,
            queue_family_index: family,
        })?;
        let wrap = |name, b: &AppBuffer| ctx.wrap_buffer(name, b.buffer, b.size, b.usage);
        let [app_positions, app_triangles, app_rays] = &device_buffers;
        let (positions_view, triangles_view) = (
            wrap("positions", app_positions)?,
            wrap("triangles", app_triangles)?,
        );
        let (rays_view, hits_view) = (wrap("rays", app_rays)?, wrap("hits", &hits)?);
        let builder = LbvhBuilder::new(&ctx, LbvhParams::default(), triangle_count)?;
        let mut bvh = Bvh::new(&ctx, triangle_count)?;
        let tracer = Tracer::new(&ctx)?;

        // The application's command buffer.
        let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(family);
        let pool = unsafe { device.create_command_pool(&pool_info, None)? };
        let allocate = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .command_buffer_count(1);
        let cmd = unsafe { device.allocate_command_buffers(&allocate)? }[0];
        unsafe {
            device.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())?;
            // The application's own pass: upload its triangles and rays.
            let mut offset = 0;
            for (target, size) in device_buffers.iter().zip(sizes) {
                let region = vk::BufferCopy::default().src_offset(offset).size(size);
                device.cmd_copy_buffer(cmd, staging.buffer, target.buffer, &[region]);
                offset += size;
            }
            memory_barrier(
                &device,
                cmd,
                (
                    vk::PipelineStageFlags2::COPY,
                    vk::AccessFlags2::TRANSFER_WRITE,
                ),
                (
                    vk::PipelineStageFlags2::COMPUTE_SHADER,
                    vk::AccessFlags2::SHADER_STORAGE_READ,
                ),
            );
        }
        // canopy's build and trace, recorded into the same command buffer.
        {
            let mut rec = Recorder::new(&ctx, cmd);
            let input = TriangleInput::whole(&positions_view, &triangles_view, triangle_count);
            builder.record(&mut rec, &input, &mut bvh)?;
            let (rays, hits) = (Slice::whole(&rays_view), Slice::whole(&hits_view));
            tracer.record(
                &mut rec,
                &bvh,
                Query::Closest,
                rays,
                hits,
                Count::Host(ray_count),
            )?;
        }
        unsafe {
            // The application's last pass reads canopy's hits.
            memory_barrier(
                &device,
                cmd,
                (
                    vk::PipelineStageFlags2::COMPUTE_SHADER,
                    vk::AccessFlags2::SHADER_STORAGE_WRITE,
                ),
                (
                    vk::PipelineStageFlags2::COPY,
                    vk::AccessFlags2::TRANSFER_READ,
                ),
            );
            let region = vk::BufferCopy::default().size(hits_size);
            device.cmd_copy_buffer(cmd, hits.buffer, readback.buffer, &[region]);
            memory_barrier(
                &device,
                cmd,
                (
                    vk::PipelineStageFlags2::COPY,
                    vk::AccessFlags2::TRANSFER_WRITE,
                ),
                (vk::PipelineStageFlags2::HOST, vk::AccessFlags2::HOST_READ),
            );
            device.end_command_buffer(cmd)?;
            let fence = device.create_fence(&vk::FenceCreateInfo::default(), None)?;
            let cmds = [cmd];
            let submit = vk::SubmitInfo::default().command_buffers(&cmds);
            device.queue_submit(queue, &[submit], fence)?;
            device.wait_for_fences(&[fence], true, u64::MAX)?;
            device.destroy_fence(fence, None);
            device.destroy_command_pool(pool, None);
            let mapped = device.map_memory(
                readback.memory,
                0,
                vk::WHOLE_SIZE,
                vk::MemoryMapFlags::empty(),
            )?;
            let bytes = std::slice::from_raw_parts(mapped.cast::<u8>(), hits_size as usize);
            let results: Vec<Hit> = bytemuck::pod_collect_to_vec(bytes);
            device.unmap_memory(readback.memory);
            results
        }
        // canopy's objects (its context, builder, tree, tracer and the views) drop here,
        // before the application destroys what it owns.
    };

    let mut wrong = 0;
    for (ray, got) in rays.iter().zip(&results) {
        let expected = closest_hit_brute_force(&positions, &triangles, ray);
        let same = got.triangle == expected.triangle
            || (got.t - expected.t).abs() <= 1e-5 * expected.t.abs().max(1.0);
        wrong += !same as u32;
    }
    let hit_count = results.iter().filter(|h| h.is_hit()).count();

    // The application destroys everything it made.
    for buffer in device_buffers.iter().chain([&staging, &hits, &readback]) {
        buffer.destroy(&device);
    }
    unsafe {
        device.destroy_device(None);
        if let Some(messenger) = messenger {
            debug.destroy_debug_utils_messenger(messenger, None);
        }
        instance.destroy_instance(None);
    }
    let errors = VALIDATION_ERRORS.load(Ordering::Relaxed);
    println!(
        "{ray_count} rays, {hit_count} hits, {wrong} differing from brute force, {errors} validation errors{}",
        if validate {
            ""
        } else {
            " (validation layer not installed)"
        }
    );
    if wrong > 0 || errors > 0 {
        return Err("the embedded build and trace went wrong".into());
    }
    Ok(())
}

/// One memory barrier in the application's command buffer.
fn memory_barrier(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    (src_stage, src_access): (vk::PipelineStageFlags2, vk::AccessFlags2),
    (dst_stage, dst_access): (vk::PipelineStageFlags2, vk::AccessFlags2),
) {
    let barrier = [vk::MemoryBarrier2::default()
        .src_stage_mask(src_stage)
        .src_access_mask(src_access)
        .dst_stage_mask(dst_stage)
        .dst_access_mask(dst_access)];
    let dependency = vk::DependencyInfo::default().memory_barriers(&barrier);
    unsafe { device.cmd_pipeline_barrier2(cmd, &dependency) };
}
