//! The driver's own BVH builder, through `VK_KHR_acceleration_structure`: a bottom-level
//! acceleration structure over the same vertex and index buffers canopy's [LBVH] reads.
//!
//! This is a yardstick, not a structure canopy traverses: `canopy bench lbvh` times it right
//! after canopy's LBVH, with GPU timestamps, so both builders are timed on the same device,
//! the same input and in the same run. The build asks for
//! `PREFER_FAST_BUILD`, the driver's counterpart of a per-frame LBVH rebuild.
//!
//! Only devices with [`DeviceCaps::acceleration_structure`] have it;
//! [`NativeBlasBuilder::new`] returns `None` on the others.
//!
//! [`NativeTracer`] traces rays through it with the driver's ray-tracing pipeline, beside
//! canopy's traversals of the same rays.
//!
//! [LBVH]: crate::accel::bvh::lbvh
//! [`DeviceCaps::acceleration_structure`]: crate::vk::DeviceCaps::acceleration_structure

mod tracer;

pub use tracer::{NativeRaygenPush, NativeTracer};

use crate::vk::raw as vk;
use crate::vk::{Buffer, Context, Error, MemoryKind, Recorder, Result};

/// Bytes of one vertex position: three `f32`.
const VERTEX_STRIDE: u64 = 12;
/// Bytes of one triangle: three `u32` indices.
const TRIANGLE_BYTES: u64 = 12;

/// A bottom-level acceleration structure over up to `max_triangles` indexed triangles, built
/// by the driver (`vkCmdBuildAccelerationStructuresKHR`, `PREFER_FAST_BUILD`). Owns the
/// acceleration structure, its storage and the build scratch; destroys them on drop.
pub struct NativeBlasBuilder {
    loader: ash::khr::acceleration_structure::Device,
    accel: vk::AccelerationStructureKHR,
    storage: Buffer,
    scratch: Buffer,
    /// The scratch buffer's address rounded up to the device's scratch alignment.
    scratch_address: u64,
    max_triangles: u32,
    max_vertices: u32,
}

/// The single triangle geometry of every build: positions as three `f32` (stride 12),
/// triangles as three `u32` indices, opaque.
fn geometry<'a>(
    positions: u64,
    vertex_count: u32,
    triangles: u64,
) -> vk::AccelerationStructureGeometryKHR<'a> {
    let data = vk::AccelerationStructureGeometryTrianglesDataKHR::default()
        .vertex_format(vk::Format::R32G32B32_SFLOAT)
        .vertex_data(vk::DeviceOrHostAddressConstKHR {
            device_address: positions,
        })
        .vertex_stride(VERTEX_STRIDE)
        .max_vertex(vertex_count.saturating_sub(1))
        .index_type(vk::IndexType::UINT32)
        .index_data(vk::DeviceOrHostAddressConstKHR {
            device_address: triangles,
        });
    vk::AccelerationStructureGeometryKHR::default()
        .geometry_type(vk::GeometryTypeKHR::TRIANGLES)
        .geometry(vk::AccelerationStructureGeometryDataKHR { triangles: data })
        .flags(vk::GeometryFlagsKHR::OPAQUE)
}

/// A fresh bottom-level build of `geometries` (destination and scratch set by the caller).
fn build_info<'a>(
    geometries: &'a [vk::AccelerationStructureGeometryKHR<'a>],
) -> vk::AccelerationStructureBuildGeometryInfoKHR<'a> {
    vk::AccelerationStructureBuildGeometryInfoKHR::default()
        .ty(vk::AccelerationStructureTypeKHR::BOTTOM_LEVEL)
        .flags(vk::BuildAccelerationStructureFlagsKHR::PREFER_FAST_BUILD)
        .mode(vk::BuildAccelerationStructureModeKHR::BUILD)
        .geometries(geometries)
}

impl NativeBlasBuilder {
    /// Sizes the acceleration structure and scratch for `max_triangles` triangles over
    /// `max_vertices` vertices (driver's build sizes for `PREFER_FAST_BUILD`), allocates them
    /// and creates the acceleration structure. `Ok(None)` when the device lacks
    /// [`DeviceCaps::acceleration_structure`](crate::vk::DeviceCaps::acceleration_structure).
    pub fn new(ctx: &Context, max_triangles: u32, max_vertices: u32) -> Result<Option<Self>> {
        if !ctx.caps().acceleration_structure {
            return Ok(None);
        }
        if max_triangles == 0 || max_vertices == 0 {
            return Err(Error::InvalidInput(format!(
                "native BLAS for {max_triangles} triangles over {max_vertices} vertices"
            )));
        }
        let shared = &ctx.shared;
        let loader =
            ash::khr::acceleration_structure::Device::new(&shared.instance, &shared.device);

        let mut properties = vk::PhysicalDeviceAccelerationStructurePropertiesKHR::default();
        let mut properties2 = vk::PhysicalDeviceProperties2::default().push_next(&mut properties);
        unsafe {
            shared
                .instance
                .get_physical_device_properties2(shared.physical_device, &mut properties2)
        };
        let scratch_alignment =
            u64::from(properties.min_acceleration_structure_scratch_offset_alignment).max(1);

        let geometries = [geometry(0, max_vertices, 0)];
        let mut sizes = vk::AccelerationStructureBuildSizesInfoKHR::default();
        unsafe {
            loader.get_acceleration_structure_build_sizes(
                vk::AccelerationStructureBuildTypeKHR::DEVICE,
                &build_info(&geometries),
                &[max_triangles],
                &mut sizes,
            )
        };

        let storage = ctx.create_buffer(
            "native blas",
            sizes.acceleration_structure_size,
            MemoryKind::AccelerationStructure,
        )?;
        // The allocator aligns to the buffer's memory requirements only: allocate the slack to
        // start the scratch at the device's scratch alignment.
        let scratch = ctx.create_buffer(
            "native blas scratch",
            sizes.build_scratch_size.max(1) + scratch_alignment - 1,
            MemoryKind::Device,
        )?;
        let scratch_address = scratch.address().next_multiple_of(scratch_alignment);

        let info = vk::AccelerationStructureCreateInfoKHR::default()
            .buffer(storage.raw())
            .offset(0)
            .size(sizes.acceleration_structure_size)
            .ty(vk::AccelerationStructureTypeKHR::BOTTOM_LEVEL);
        let accel =
            unsafe { loader.create_acceleration_structure(&info, None) }.map_err(|result| {
                Error::Vulkan {
                    call: "vkCreateAccelerationStructureKHR",
                    result,
                }
            })?;
        Ok(Some(Self {
            loader,
            accel,
            storage,
            scratch,
            scratch_address,
            max_triangles,
            max_vertices,
        }))
    }

    /// Bytes of device memory held: acceleration structure storage plus build scratch.
    pub fn bytes(&self) -> u64 {
        self.storage.size() + self.scratch.size()
    }

    /// Records a full build over `triangle_count` triangles of `triangles` (three `u32`
    /// vertex indices each) into `vertex_count` positions of `positions` (three `f32` each),
    /// timed as the stage `native blas build`.
    ///
    /// Compute and transfer writes recorded before (positions animated on the GPU, uploads)
    /// are made visible to the build; after it, a barrier orders the acceleration structure
    /// and scratch before later builds, and the build's input reads before later compute and
    /// transfer writes.
    pub fn record(
        &self,
        rec: &mut Recorder,
        positions: &Buffer,
        vertex_count: u32,
        triangles: &Buffer,
        triangle_count: u32,
    ) -> Result<()> {
        if triangle_count > self.max_triangles || vertex_count > self.max_vertices {
            return Err(Error::InvalidInput(format!(
                "native BLAS of {triangle_count} triangles over {vertex_count} vertices exceeds \
                 its capacity of {} triangles over {} vertices",
                self.max_triangles, self.max_vertices
            )));
        }
        if u64::from(vertex_count) * VERTEX_STRIDE > positions.size()
            || u64::from(triangle_count) * TRIANGLE_BYTES > triangles.size()
        {
            return Err(Error::InvalidInput(format!(
                "native BLAS input overruns '{}' ({} bytes for {vertex_count} vertices) or \
                 '{}' ({} bytes for {triangle_count} triangles)",
                positions.name(),
                positions.size(),
                triangles.name(),
                triangles.size()
            )));
        }

        let device = rec.context().device();
        let cmd = rec.command_buffer();
        let inputs_ready = [vk::MemoryBarrier2::default()
            .src_stage_mask(
                vk::PipelineStageFlags2::COMPUTE_SHADER | vk::PipelineStageFlags2::ALL_TRANSFER,
            )
            .src_access_mask(
                vk::AccessFlags2::SHADER_STORAGE_WRITE | vk::AccessFlags2::TRANSFER_WRITE,
            )
            .dst_stage_mask(vk::PipelineStageFlags2::ACCELERATION_STRUCTURE_BUILD_KHR)
            .dst_access_mask(vk::AccessFlags2::SHADER_READ)];
        unsafe {
            device.cmd_pipeline_barrier2(
                cmd,
                &vk::DependencyInfo::default().memory_barriers(&inputs_ready),
            )
        };

        let geometries = [geometry(
            positions.address(),
            vertex_count,
            triangles.address(),
        )];
        let info = build_info(&geometries)
            .dst_acceleration_structure(self.accel)
            .scratch_data(vk::DeviceOrHostAddressKHR {
                device_address: self.scratch_address,
            });
        let ranges = [
            vk::AccelerationStructureBuildRangeInfoKHR::default().primitive_count(triangle_count)
        ];
        rec.begin_stage("native blas build");
        unsafe {
            self.loader
                .cmd_build_acceleration_structures(cmd, &[info], &[&ranges])
        };
        rec.end_stage();

        let build_done = [
            vk::MemoryBarrier2::default()
                .src_stage_mask(vk::PipelineStageFlags2::ACCELERATION_STRUCTURE_BUILD_KHR)
                .src_access_mask(vk::AccessFlags2::ACCELERATION_STRUCTURE_WRITE_KHR)
                .dst_stage_mask(vk::PipelineStageFlags2::ACCELERATION_STRUCTURE_BUILD_KHR)
                .dst_access_mask(
                    vk::AccessFlags2::ACCELERATION_STRUCTURE_READ_KHR
                        | vk::AccessFlags2::ACCELERATION_STRUCTURE_WRITE_KHR,
                ),
            vk::MemoryBarrier2::default()
                .src_stage_mask(vk::PipelineStageFlags2::ACCELERATION_STRUCTURE_BUILD_KHR)
                .dst_stage_mask(
                    vk::PipelineStageFlags2::COMPUTE_SHADER | vk::PipelineStageFlags2::ALL_TRANSFER,
                ),
        ];
        unsafe {
            device.cmd_pipeline_barrier2(
                cmd,
                &vk::DependencyInfo::default().memory_barriers(&build_done),
            )
        };
        Ok(())
    }
}

impl Drop for NativeBlasBuilder {
    fn drop(&mut self) {
        // The buffers, which keep the device alive, are freed after this as the fields drop.
        if !self.storage.timed_out() {
            unsafe { self.loader.destroy_acceleration_structure(self.accel, None) };
        }
    }
}
