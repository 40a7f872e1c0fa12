//! The driver's own ray tracing, beside canopy's traversals on the same rays: a top-level
//! acceleration structure holding one instance of a [`NativeBlasBuilder`]'s bottom-level
//! structure, and a ray-tracing pipeline (`glsl/native/raygen.rgen`, `closest_hit.rchit`,
//! `miss.rmiss`) that reads canopy's [`Ray`] records and writes its [`Hit`] records, closest or
//! any hit. The NVIDIA driver offers ray-tracing pipelines (not ray queries) even on GPUs
//! without RT cores, so `canopy bench render --native` and `canopy bench lbvh` compare build
//! and trace times with it on the same GPU. Only devices with
//! [`DeviceCaps::ray_tracing_pipeline`](crate::vk::DeviceCaps::ray_tracing_pipeline) have it.

use super::NativeBlasBuilder;
use crate::geom::ray::{Hit, Query, Ray};
use crate::shaders;
use crate::vk::raw as vk;
use crate::vk::{Buffer, Context, Error, Kernel, MemoryKind, Recorder, Result, Slice};

/// Push constants of `raygen.rgen`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NativeRaygenPush {
    /// Ray per query.
    pub rays_address: u64,
    /// Out: hit per query.
    pub hits_address: u64,
    /// The top-level acceleration structure.
    pub structure_address: u64,
    /// Queries.
    pub count: u32,
    /// 1 for any-hit queries.
    pub any_hit: u32,
}

/// Launches per row of a trace: larger batches are laid out in rows.
const LAUNCH_WIDTH: u32 = 1 << 14;

/// Bytes of one `VkAccelerationStructureInstanceKHR`.
const INSTANCE_BYTES: u64 = 64;

/// Rays traced through the driver's structure over a mesh.
pub struct NativeTracer {
    device: ash::Device,
    loader: ash::khr::acceleration_structure::Device,
    pipelines: ash::khr::ray_tracing_pipeline::Device,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    /// Raygen, miss and hit regions of `binding_table`.
    regions: [vk::StridedDeviceAddressRegionKHR; 3],
    binding_table: Buffer,
    top: vk::AccelerationStructureKHR,
    top_address: u64,
    top_storage: Buffer,
    top_scratch: Buffer,
    top_scratch_address: u64,
    instances: Buffer,
    max_invocations: u64,
}

fn vulkan(call: &'static str) -> impl Fn(vk::Result) -> Error {
    move |result| Error::Vulkan { call, result }
}

/// The top-level geometry: `instances` (one instance, tightly packed).
fn instance_geometry<'a>(instances: u64) -> vk::AccelerationStructureGeometryKHR<'a> {
    let data = vk::AccelerationStructureGeometryInstancesDataKHR::default()
        .array_of_pointers(false)
        .data(vk::DeviceOrHostAddressConstKHR {
            device_address: instances,
        });
    vk::AccelerationStructureGeometryKHR::default()
        .geometry_type(vk::GeometryTypeKHR::INSTANCES)
        .geometry(vk::AccelerationStructureGeometryDataKHR { instances: data })
}

fn top_build_info<'a>(
    geometries: &'a [vk::AccelerationStructureGeometryKHR<'a>],
) -> vk::AccelerationStructureBuildGeometryInfoKHR<'a> {
    vk::AccelerationStructureBuildGeometryInfoKHR::default()
        .ty(vk::AccelerationStructureTypeKHR::TOP_LEVEL)
        .flags(vk::BuildAccelerationStructureFlagsKHR::PREFER_FAST_BUILD)
        .mode(vk::BuildAccelerationStructureModeKHR::BUILD)
        .geometries(geometries)
}

/// One instance of the structure at `address`: identity transform, mask 0xff, opaque, no
/// face culling (`VkAccelerationStructureInstanceKHR`, written as words).
fn instance_words(address: u64) -> [u32; 16] {
    let mut words = [0u32; 16];
    for row in 0..3 {
        words[row * 4 + row] = 1.0f32.to_bits();
    }
    words[12] = 0xff << 24;
    let flags = vk::GeometryInstanceFlagsKHR::TRIANGLE_FACING_CULL_DISABLE
        | vk::GeometryInstanceFlagsKHR::FORCE_OPAQUE;
    words[13] = flags.as_raw() << 24;
    words[14] = address as u32;
    words[15] = (address >> 32) as u32;
    words
}

fn shader_module(device: &ash::Device, kernel: &Kernel) -> Result<vk::ShaderModule> {
    let words = ash::util::read_spv(&mut std::io::Cursor::new(kernel.spirv))
        .map_err(|e| Error::InvalidInput(format!("SPIR-V of {}: {e}", kernel.name)))?;
    unsafe {
        device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
    }
    .map_err(vulkan("vkCreateShaderModule"))
}

impl NativeTracer {
    /// The driver's ray tracing over the structure `blas` builds; `Ok(None)` on devices
    /// without [`DeviceCaps::ray_tracing_pipeline`](crate::vk::DeviceCaps::ray_tracing_pipeline).
    pub fn new(ctx: &Context, blas: &NativeBlasBuilder) -> Result<Option<Self>> {
        if !ctx.caps().ray_tracing_pipeline {
            return Ok(None);
        }
        let shared = &ctx.shared;
        let device = &shared.device;
        let loader =
            ash::khr::acceleration_structure::Device::new(&shared.instance, &shared.device);
        let pipelines =
            ash::khr::ray_tracing_pipeline::Device::new(&shared.instance, &shared.device);
        let mut rt = vk::PhysicalDeviceRayTracingPipelinePropertiesKHR::default();
        let mut accel = vk::PhysicalDeviceAccelerationStructurePropertiesKHR::default();
        let mut properties = vk::PhysicalDeviceProperties2::default()
            .push_next(&mut rt)
            .push_next(&mut accel);
        unsafe {
            shared
                .instance
                .get_physical_device_properties2(shared.physical_device, &mut properties)
        };

        // The pipeline: raygen, miss, and one triangle hit group with the closest-hit shader.
        let range = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::RAYGEN_KHR)
            .size(std::mem::size_of::<NativeRaygenPush>() as u32)];
        let layout = unsafe {
            device.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&range),
                None,
            )
        }
        .map_err(vulkan("vkCreatePipelineLayout"))?;
        let kernels = [
            (&shaders::NATIVE_RAYGEN, vk::ShaderStageFlags::RAYGEN_KHR),
            (&shaders::NATIVE_MISS, vk::ShaderStageFlags::MISS_KHR),
            (
                &shaders::NATIVE_CLOSEST_HIT,
                vk::ShaderStageFlags::CLOSEST_HIT_KHR,
            ),
        ];
        let mut modules = Vec::new();
        for (kernel, _) in &kernels {
            match shader_module(device, kernel) {
                Ok(module) => modules.push(module),
                Err(e) => {
                    unsafe {
                        modules
                            .iter()
                            .for_each(|&m| device.destroy_shader_module(m, None));
                        device.destroy_pipeline_layout(layout, None);
                    }
                    return Err(e);
                }
            }
        }
        let stages: Vec<_> = kernels
            .iter()
            .zip(&modules)
            .map(|((_, stage), &module)| {
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(*stage)
                    .module(module)
                    .name(c"main")
            })
            .collect();
        let general = |shader: u32| {
            vk::RayTracingShaderGroupCreateInfoKHR::default()
                .ty(vk::RayTracingShaderGroupTypeKHR::GENERAL)
                .general_shader(shader)
                .closest_hit_shader(vk::SHADER_UNUSED_KHR)
                .any_hit_shader(vk::SHADER_UNUSED_KHR)
                .intersection_shader(vk::SHADER_UNUSED_KHR)
        };
        let groups = [
            general(0),
            general(1),
            vk::RayTracingShaderGroupCreateInfoKHR::default()
                .ty(vk::RayTracingShaderGroupTypeKHR::TRIANGLES_HIT_GROUP)
                .general_shader(vk::SHADER_UNUSED_KHR)
                .closest_hit_shader(2)
                .any_hit_shader(vk::SHADER_UNUSED_KHR)
                .intersection_shader(vk::SHADER_UNUSED_KHR),
        ];
        let info = vk::RayTracingPipelineCreateInfoKHR::default()
            .stages(&stages)
            .groups(&groups)
            .max_pipeline_ray_recursion_depth(1)
            .layout(layout);
        let created = unsafe {
            pipelines.create_ray_tracing_pipelines(
                vk::DeferredOperationKHR::null(),
                vk::PipelineCache::null(),
                &[info],
                None,
            )
        };
        unsafe {
            modules
                .iter()
                .for_each(|&m| device.destroy_shader_module(m, None))
        };
        let pipeline = match created {
            Ok(p) => p[0],
            Err((_, result)) => {
                unsafe { device.destroy_pipeline_layout(layout, None) };
                return Err(Error::Vulkan {
                    call: "vkCreateRayTracingPipelinesKHR",
                    result,
                });
            }
        };
        // From here on, drop destroys what was made.
        let mut tracer = Self {
            device: device.clone(),
            loader,
            pipelines,
            layout,
            pipeline,
            regions: [vk::StridedDeviceAddressRegionKHR::default(); 3],
            binding_table: ctx.create_buffer("native binding table", 1, MemoryKind::Upload)?,
            top: vk::AccelerationStructureKHR::null(),
            top_address: 0,
            top_storage: ctx.create_buffer("native tlas", 1, MemoryKind::Device)?,
            top_scratch: ctx.create_buffer("native tlas scratch", 1, MemoryKind::Device)?,
            top_scratch_address: 0,
            instances: ctx.create_buffer("native instances", INSTANCE_BYTES, MemoryKind::Device)?,
            max_invocations: u64::from(rt.max_ray_dispatch_invocation_count),
        };
        tracer.make_binding_table(ctx, &rt)?;
        tracer.make_top_level(ctx, blas, &accel)?;
        Ok(Some(tracer))
    }

    /// The shader binding table: one record per group, each region at the base alignment.
    fn make_binding_table(
        &mut self,
        ctx: &Context,
        rt: &vk::PhysicalDeviceRayTracingPipelinePropertiesKHR<'_>,
    ) -> Result<()> {
        let handle_size = rt.shader_group_handle_size as u64;
        let stride = handle_size.next_multiple_of(rt.shader_group_handle_alignment.max(1) as u64);
        let base = (rt.shader_group_base_alignment.max(1) as u64).max(stride);
        let handles = unsafe {
            self.pipelines.get_ray_tracing_shader_group_handles(
                self.pipeline,
                0,
                3,
                3 * handle_size as usize,
            )
        }
        .map_err(vulkan("vkGetRayTracingShaderGroupHandlesKHR"))?;
        let mut table = ctx.create_buffer("native binding table", 4 * base, MemoryKind::Upload)?;
        let start = table.address().next_multiple_of(base);
        let skip = (start - table.address()) as usize;
        let bytes = table
            .mapped_mut()
            .ok_or_else(|| Error::InvalidInput("binding table is not host visible".into()))?;
        for group in 0..3 {
            let at = skip + group * base as usize;
            let handle = &handles[group * handle_size as usize..][..handle_size as usize];
            bytes[at..at + handle.len()].copy_from_slice(handle);
        }
        for (group, region) in self.regions.iter_mut().enumerate() {
            *region = vk::StridedDeviceAddressRegionKHR::default()
                .device_address(start + group as u64 * base)
                .stride(stride)
                .size(stride);
        }
        self.binding_table = table;
        Ok(())
    }

    /// The top-level structure over one instance of `blas`, its storage, scratch and
    /// instance record.
    fn make_top_level(
        &mut self,
        ctx: &Context,
        blas: &NativeBlasBuilder,
        accel: &vk::PhysicalDeviceAccelerationStructurePropertiesKHR<'_>,
    ) -> Result<()> {
        let blas_address = unsafe {
            self.loader.get_acceleration_structure_device_address(
                &vk::AccelerationStructureDeviceAddressInfoKHR::default()
                    .acceleration_structure(blas.accel),
            )
        };
        ctx.upload(&self.instances, 0, &instance_words(blas_address))?;
        let geometries = [instance_geometry(self.instances.address())];
        let mut sizes = vk::AccelerationStructureBuildSizesInfoKHR::default();
        unsafe {
            self.loader.get_acceleration_structure_build_sizes(
                vk::AccelerationStructureBuildTypeKHR::DEVICE,
                &top_build_info(&geometries),
                &[1],
                &mut sizes,
            )
        };
        let alignment = u64::from(accel.min_acceleration_structure_scratch_offset_alignment).max(1);
        self.top_storage = ctx.create_buffer(
            "native tlas",
            sizes.acceleration_structure_size,
            MemoryKind::AccelerationStructure,
        )?;
        self.top_scratch = ctx.create_buffer(
            "native tlas scratch",
            sizes.build_scratch_size.max(1) + alignment - 1,
            MemoryKind::Device,
        )?;
        self.top_scratch_address = self.top_scratch.address().next_multiple_of(alignment);
        let info = vk::AccelerationStructureCreateInfoKHR::default()
            .buffer(self.top_storage.raw())
            .size(sizes.acceleration_structure_size)
            .ty(vk::AccelerationStructureTypeKHR::TOP_LEVEL);
        self.top = unsafe { self.loader.create_acceleration_structure(&info, None) }
            .map_err(vulkan("vkCreateAccelerationStructureKHR"))?;
        self.top_address = unsafe {
            self.loader.get_acceleration_structure_device_address(
                &vk::AccelerationStructureDeviceAddressInfoKHR::default()
                    .acceleration_structure(self.top),
            )
        };
        Ok(())
    }

    /// Device bytes of the top level and the binding table (the bottom level is the
    /// builder's).
    pub fn bytes(&self) -> u64 {
        self.top_storage.size() + self.top_scratch.size() + self.instances.size()
    }

    /// Records the top-level build over the bottom-level structure (recorded before, with
    /// [`NativeBlasBuilder::record`]), as the stage `native tlas build`, and the barrier that
    /// makes it visible to ray tracing.
    pub fn record_top_level(&self, rec: &mut Recorder) {
        let cmd = rec.command_buffer();
        let geometries = [instance_geometry(self.instances.address())];
        let info = top_build_info(&geometries)
            .dst_acceleration_structure(self.top)
            .scratch_data(vk::DeviceOrHostAddressKHR {
                device_address: self.top_scratch_address,
            });
        let ranges = [vk::AccelerationStructureBuildRangeInfoKHR::default().primitive_count(1)];
        rec.begin_stage("native tlas build");
        unsafe {
            self.loader
                .cmd_build_acceleration_structures(cmd, &[info], &[&ranges])
        };
        rec.end_stage();
        let built = [vk::MemoryBarrier2::default()
            .src_stage_mask(vk::PipelineStageFlags2::ACCELERATION_STRUCTURE_BUILD_KHR)
            .src_access_mask(vk::AccessFlags2::ACCELERATION_STRUCTURE_WRITE_KHR)
            .dst_stage_mask(
                vk::PipelineStageFlags2::RAY_TRACING_SHADER_KHR
                    | vk::PipelineStageFlags2::ACCELERATION_STRUCTURE_BUILD_KHR,
            )
            .dst_access_mask(
                vk::AccessFlags2::ACCELERATION_STRUCTURE_READ_KHR
                    | vk::AccessFlags2::ACCELERATION_STRUCTURE_WRITE_KHR,
            )];
        unsafe {
            rec.context()
                .device()
                .cmd_pipeline_barrier2(cmd, &vk::DependencyInfo::default().memory_barriers(&built))
        };
    }

    /// Records `query` for the first `count` of `rays` into `hits` through the structure
    /// (the top level built before with [`Self::record_top_level`]), as the stage
    /// `native trace`. Compute and transfer writes recorded before are visible to it, and its
    /// hits to later compute, transfer and host reads.
    pub fn record_trace(
        &self,
        rec: &mut Recorder,
        query: Query,
        rays: Slice<Ray>,
        hits: Slice<Hit>,
        count: u32,
    ) -> Result<()> {
        rays.check("native trace rays", count as u64, 16)?;
        hits.check("native trace hits", count as u64, 16)?;
        if count as u64 > self.max_invocations {
            return Err(Error::InvalidInput(format!(
                "{count} rays: the driver traces at most {} in one launch",
                self.max_invocations
            )));
        }
        let device = rec.context().device();
        let cmd = rec.command_buffer();
        let barrier = |src: vk::PipelineStageFlags2, dst: vk::PipelineStageFlags2| {
            [vk::MemoryBarrier2::default()
                .src_stage_mask(src)
                .src_access_mask(vk::AccessFlags2::MEMORY_WRITE)
                .dst_stage_mask(dst)
                .dst_access_mask(vk::AccessFlags2::MEMORY_READ | vk::AccessFlags2::MEMORY_WRITE)]
        };
        let before = barrier(
            vk::PipelineStageFlags2::COMPUTE_SHADER | vk::PipelineStageFlags2::ALL_TRANSFER,
            vk::PipelineStageFlags2::RAY_TRACING_SHADER_KHR,
        );
        let push = NativeRaygenPush {
            rays_address: rays.address(),
            hits_address: hits.address(),
            structure_address: self.top_address,
            count,
            any_hit: (query == Query::Any) as u32,
        };
        let width = count.clamp(1, LAUNCH_WIDTH);
        let height = count.div_ceil(width).max(1);
        let callable = vk::StridedDeviceAddressRegionKHR::default();
        rec.begin_stage("native trace");
        unsafe {
            device.cmd_pipeline_barrier2(
                cmd,
                &vk::DependencyInfo::default().memory_barriers(&before),
            );
            device.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::RAY_TRACING_KHR, self.pipeline);
            device.cmd_push_constants(
                cmd,
                self.layout,
                vk::ShaderStageFlags::RAYGEN_KHR,
                0,
                bytemuck::bytes_of(&push),
            );
            self.pipelines.cmd_trace_rays(
                cmd,
                &self.regions[0],
                &self.regions[1],
                &self.regions[2],
                &callable,
                width,
                height,
                1,
            );
        }
        rec.end_stage();
        let after = barrier(
            vk::PipelineStageFlags2::RAY_TRACING_SHADER_KHR,
            vk::PipelineStageFlags2::COMPUTE_SHADER
                | vk::PipelineStageFlags2::ALL_TRANSFER
                | vk::PipelineStageFlags2::HOST,
        );
        unsafe {
            device
                .cmd_pipeline_barrier2(cmd, &vk::DependencyInfo::default().memory_barriers(&after))
        };
        Ok(())
    }
}

impl Drop for NativeTracer {
    fn drop(&mut self) {
        // The buffers, which keep the device alive, are freed after this as the fields drop.
        if self.binding_table.timed_out() {
            return;
        }
        unsafe {
            self.loader.destroy_acceleration_structure(self.top, None);
            self.device.destroy_pipeline(self.pipeline, None);
            self.device.destroy_pipeline_layout(self.layout, None);
        }
    }
}
