//! Buffers: named gpu-allocator allocations with device addresses, and blocking upload and
//! readback through staging memory.

use super::context::{Context, Shared};
use super::error::{Error, Result, VkContext};
use ash::vk;
use gpu_allocator::MemoryLocation;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};
use std::sync::Arc;

/// Where a buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryKind {
    /// Device-local: every buffer the GPU reads or writes per frame.
    Device,
    /// Host-visible, written by the CPU: staging for uploads.
    Upload,
    /// Host-visible, read by the CPU: staging for readbacks.
    Readback,
    /// Device-local storage of a Vulkan acceleration structure (the driver's own BVH, see
    /// [`crate::accel::native`]); only on devices with
    /// [`DeviceCaps::acceleration_structure`](super::DeviceCaps::acceleration_structure).
    AccelerationStructure,
}

/// A Vulkan buffer with its memory and device address. Freed on drop, unless it is an
/// application's buffer wrapped by [`Context::wrap_buffer`], which canopy never frees.
pub struct Buffer {
    shared: Arc<Shared>,
    raw: vk::Buffer,
    /// Whether canopy created the buffer (and destroys it).
    owned: bool,
    allocation: Option<Allocation>,
    size: u64,
    address: u64,
    name: String,
    /// Counted in [`Context::device_memory`].
    device_local: bool,
}

impl Buffer {
    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
    /// Device address of the first byte.
    pub fn address(&self) -> u64 {
        self.address
    }
    /// The Vulkan handle.
    pub fn raw(&self) -> vk::Buffer {
        self.raw
    }
    /// The allocation's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Mapped bytes of a host-visible buffer.
    pub fn mapped(&self) -> Option<&[u8]> {
        self.allocation.as_ref()?.mapped_slice()
    }
    /// Mapped bytes of a host-visible buffer, writable.
    pub fn mapped_mut(&mut self) -> Option<&mut [u8]> {
        self.allocation.as_mut()?.mapped_slice_mut()
    }
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer({}, {} bytes)", self.name, self.size)
    }
}

impl Buffer {
    /// Whether its context's GPU work timed out ([`Context::timed_out`]): objects tied to it
    /// are then leaked, not destroyed.
    pub(crate) fn timed_out(&self) -> bool {
        self.shared
            .timed_out
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if self.timed_out() {
            // GPU work that timed out may still use it (Context::timed_out): leaked.
            return;
        }
        if let Some(allocation) = self.allocation.take() {
            let _ = self.shared.allocator.lock().unwrap().free(allocation);
            if self.device_local {
                self.shared.device_memory.release(self.size);
            }
        }
        if self.owned {
            unsafe { self.shared.device.destroy_buffer(self.raw, None) };
        }
    }
}

impl Context {
    /// Allocates a named buffer usable as storage, transfer source/destination, and indirect
    /// argument source. On devices with
    /// [`DeviceCaps::acceleration_structure`](super::DeviceCaps::acceleration_structure),
    /// device-local buffers are also acceleration structure build inputs (vertices and
    /// indices for the driver's builder). [`MemoryKind::AccelerationStructure`] buffers are
    /// only acceleration structure storage. Zero-sized and oversized requests are errors.
    pub fn create_buffer(&self, name: &str, size: u64, kind: MemoryKind) -> Result<Buffer> {
        if size == 0 {
            return Err(Error::InvalidInput(format!(
                "buffer '{name}' has zero length"
            )));
        }
        let acceleration_structure = self.caps().acceleration_structure;
        if kind == MemoryKind::AccelerationStructure && !acceleration_structure {
            return Err(Error::MissingFeature {
                device: self.caps().name.clone(),
                what: "VK_KHR_acceleration_structure".into(),
            });
        }
        let device_local = matches!(kind, MemoryKind::Device | MemoryKind::AccelerationStructure);
        let heap_limit = self.caps().device_local_bytes.max(1);
        if device_local && size > heap_limit {
            return Err(Error::OutOfDeviceMemory {
                name: name.into(),
                bytes: size,
            });
        }
        let shared = &self.shared;
        let usage = match kind {
            MemoryKind::AccelerationStructure => {
                vk::BufferUsageFlags::ACCELERATION_STRUCTURE_STORAGE_KHR
                    | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS
            }
            _ => {
                let build_input = if kind == MemoryKind::Device && acceleration_structure {
                    vk::BufferUsageFlags::ACCELERATION_STRUCTURE_BUILD_INPUT_READ_ONLY_KHR
                } else {
                    vk::BufferUsageFlags::empty()
                };
                // Written by the host: the ray-tracing pipeline's shader binding tables.
                let binding_table =
                    if kind == MemoryKind::Upload && self.caps().ray_tracing_pipeline {
                        vk::BufferUsageFlags::SHADER_BINDING_TABLE_KHR
                    } else {
                        vk::BufferUsageFlags::empty()
                    };
                // Read as a predicate by the level loops (Recorder::skip_if_zero).
                let predicate = if kind == MemoryKind::Device && self.caps().conditional_rendering {
                    vk::BufferUsageFlags::CONDITIONAL_RENDERING_EXT
                } else {
                    vk::BufferUsageFlags::empty()
                };
                vk::BufferUsageFlags::STORAGE_BUFFER
                    | vk::BufferUsageFlags::TRANSFER_SRC
                    | vk::BufferUsageFlags::TRANSFER_DST
                    | vk::BufferUsageFlags::INDIRECT_BUFFER
                    | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS
                    | build_input
                    | binding_table
                    | predicate
            }
        };
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        let raw = unsafe { shared.device.create_buffer(&info, None) }.map_err(|e| match e {
            vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => {
                Error::OutOfDeviceMemory {
                    name: name.into(),
                    bytes: size,
                }
            }
            result => Error::Vulkan {
                call: "vkCreateBuffer",
                result,
            },
        })?;
        let requirements = unsafe { shared.device.get_buffer_memory_requirements(raw) };
        let location = match kind {
            MemoryKind::Device | MemoryKind::AccelerationStructure => MemoryLocation::GpuOnly,
            MemoryKind::Upload => MemoryLocation::CpuToGpu,
            MemoryKind::Readback => MemoryLocation::GpuToCpu,
        };
        let allocation = shared
            .allocator
            .lock()
            .unwrap()
            .allocate(&AllocationCreateDesc {
                name,
                requirements,
                location,
                linear: true,
                allocation_scheme: AllocationScheme::GpuAllocatorManaged,
            });
        let allocation = match allocation {
            Ok(a) => a,
            Err(e) => {
                unsafe { shared.device.destroy_buffer(raw, None) };
                return Err(match e {
                    gpu_allocator::AllocationError::OutOfMemory => Error::OutOfDeviceMemory {
                        name: name.into(),
                        bytes: size,
                    },
                    other => Error::InvalidInput(format!("allocating '{name}': {other}")),
                });
            }
        };
        unsafe {
            shared
                .device
                .bind_buffer_memory(raw, allocation.memory(), allocation.offset())
        }
        .call("vkBindBufferMemory")?;
        let address = unsafe {
            shared
                .device
                .get_buffer_device_address(&vk::BufferDeviceAddressInfo::default().buffer(raw))
        };
        if device_local {
            shared.device_memory.acquire(size);
        }
        Ok(Buffer {
            shared: shared.clone(),
            raw,
            owned: true,
            allocation: Some(allocation),
            size,
            address,
            name: name.into(),
            device_local,
        })
    }

    /// A view of the application's buffer `raw` (`size` bytes, created with `usage` on this
    /// context's device and bound to memory), for canopy's kernels to read and write through
    /// its device address. canopy never frees it: the application keeps it alive while
    /// canopy's work that uses it is recorded or running, and destroys it. Refused, with the
    /// flags named, unless `usage` has what canopy's kernels need (`STORAGE_BUFFER` and
    /// `SHADER_DEVICE_ADDRESS`; `TRANSFER_SRC`/`TRANSFER_DST` for [`Context::download`] and
    /// [`Context::upload`]).
    pub fn wrap_buffer(
        &self,
        name: &str,
        raw: vk::Buffer,
        size: u64,
        usage: vk::BufferUsageFlags,
    ) -> Result<Buffer> {
        let needed = [
            (vk::BufferUsageFlags::STORAGE_BUFFER, "STORAGE_BUFFER"),
            (
                vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS,
                "SHADER_DEVICE_ADDRESS",
            ),
        ];
        let missing: Vec<&str> = needed
            .iter()
            .filter(|(flag, _)| !usage.contains(*flag))
            .map(|(_, name)| *name)
            .collect();
        if !missing.is_empty() {
            return Err(Error::InvalidInput(format!(
                "buffer '{name}' lacks the usage flags {} that canopy's kernels need",
                missing.join(", ")
            )));
        }
        if size == 0 || raw == vk::Buffer::null() {
            return Err(Error::InvalidInput(format!(
                "buffer '{name}' is null or has zero length"
            )));
        }
        let info = vk::BufferDeviceAddressInfo::default().buffer(raw);
        let address = unsafe { self.shared.device.get_buffer_device_address(&info) };
        Ok(Buffer {
            shared: self.shared.clone(),
            raw,
            owned: false,
            allocation: None,
            size,
            address,
            name: name.into(),
            device_local: false,
        })
    }

    /// Creates a device-local buffer holding `data`.
    pub fn create_buffer_with<T: bytemuck::Pod>(&self, name: &str, data: &[T]) -> Result<Buffer> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let buffer = self.create_buffer(name, bytes.len() as u64, MemoryKind::Device)?;
        self.upload(&buffer, 0, data)?;
        Ok(buffer)
    }

    /// Copies `data` into `buffer` at byte `offset` through a staging buffer and waits.
    pub fn upload<T: bytemuck::Pod>(&self, buffer: &Buffer, offset: u64, data: &[T]) -> Result<()> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        if bytes.is_empty() {
            return Ok(());
        }
        if offset + bytes.len() as u64 > buffer.size {
            return Err(Error::InvalidInput(format!(
                "upload of {} bytes at {offset} overruns '{}' ({} bytes)",
                bytes.len(),
                buffer.name,
                buffer.size
            )));
        }
        let mut staging =
            self.create_buffer("staging upload", bytes.len() as u64, MemoryKind::Upload)?;
        staging.mapped_mut().expect("upload buffers are mapped")[..bytes.len()]
            .copy_from_slice(bytes);
        self.submit_and_wait(|rec| {
            rec.copy_buffer(&staging, 0, buffer, offset, bytes.len() as u64);
            Ok(())
        })
    }

    /// Reads `count` elements of `T` from `buffer` at byte `offset`, waiting for the copy.
    pub fn download<T: bytemuck::Pod>(
        &self,
        buffer: &Buffer,
        offset: u64,
        count: usize,
    ) -> Result<Vec<T>> {
        let bytes = (count * std::mem::size_of::<T>()) as u64;
        if count == 0 {
            return Ok(Vec::new());
        }
        if offset + bytes > buffer.size {
            return Err(Error::InvalidInput(format!(
                "readback of {bytes} bytes at {offset} overruns '{}' ({} bytes)",
                buffer.name, buffer.size
            )));
        }
        let staging = self.create_buffer("staging readback", bytes, MemoryKind::Readback)?;
        self.submit_and_wait(|rec| {
            rec.copy_buffer(buffer, offset, &staging, 0, bytes);
            rec.barrier_transfer_to_host();
            Ok(())
        })?;
        let mapped = staging.mapped().expect("readback buffers are mapped");
        Ok(bytemuck::pod_collect_to_vec(&mapped[..bytes as usize]))
    }
}
