//! The device features canopy's kernels use: what [`Context::new`](super::Context::new)
//! enables, and what an application enables on the device it hands to
//! [`Context::from_external`](super::Context::from_external) ([`RequiredFeatures::chain`]).

use super::error::{Error, Result};
use ash::vk;

/// The features of one physical device that canopy needs, read once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FeatureSupport {
    /// `shaderInt64`.
    pub shader_int64: bool,
    /// `bufferDeviceAddress`.
    pub buffer_device_address: bool,
    /// `shaderBufferInt64Atomics`.
    pub shader_buffer_int64_atomics: bool,
    /// `scalarBlockLayout`.
    pub scalar_block_layout: bool,
    /// `hostQueryReset`.
    pub host_query_reset: bool,
    /// `timelineSemaphore`.
    pub timeline_semaphore: bool,
    /// `vulkanMemoryModel`.
    pub vulkan_memory_model: bool,
    /// `vulkanMemoryModelDeviceScope`.
    pub vulkan_memory_model_device_scope: bool,
    /// `synchronization2`.
    pub synchronization2: bool,
    /// `maintenance4`.
    pub maintenance4: bool,
    /// `subgroupSizeControl` and `computeFullSubgroups` (optional: enabled where present).
    pub full_subgroups: bool,
}

impl FeatureSupport {
    /// What `physical_device` supports.
    pub fn of(instance: &ash::Instance, physical_device: vk::PhysicalDevice) -> Self {
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
        let mut features = vk::PhysicalDeviceFeatures2::default()
            .push_next(&mut f12)
            .push_next(&mut f13);
        unsafe { instance.get_physical_device_features2(physical_device, &mut features) };
        let yes = |flag: vk::Bool32| flag == vk::TRUE;
        Self {
            shader_int64: yes(features.features.shader_int64),
            buffer_device_address: yes(f12.buffer_device_address),
            shader_buffer_int64_atomics: yes(f12.shader_buffer_int64_atomics),
            scalar_block_layout: yes(f12.scalar_block_layout),
            host_query_reset: yes(f12.host_query_reset),
            timeline_semaphore: yes(f12.timeline_semaphore),
            vulkan_memory_model: yes(f12.vulkan_memory_model),
            vulkan_memory_model_device_scope: yes(f12.vulkan_memory_model_device_scope),
            synchronization2: yes(f13.synchronization2),
            maintenance4: yes(f13.maintenance4),
            full_subgroups: yes(f13.subgroup_size_control) && yes(f13.compute_full_subgroups),
        }
    }

    /// The names (as the Vulkan specification spells them) of the required features this
    /// device lacks; empty when it has them all.
    pub fn missing(&self) -> Vec<&'static str> {
        [
            (self.shader_int64, "shaderInt64"),
            (self.buffer_device_address, "bufferDeviceAddress"),
            (self.shader_buffer_int64_atomics, "shaderBufferInt64Atomics"),
            (self.scalar_block_layout, "scalarBlockLayout"),
            (self.host_query_reset, "hostQueryReset"),
            (self.timeline_semaphore, "timelineSemaphore"),
            (self.vulkan_memory_model, "vulkanMemoryModel"),
            (
                self.vulkan_memory_model_device_scope,
                "vulkanMemoryModelDeviceScope",
            ),
            (self.synchronization2, "synchronization2"),
            (self.maintenance4, "maintenance4"),
        ]
        .into_iter()
        .filter(|(supported, _)| !supported)
        .map(|(_, name)| name)
        .collect()
    }

    /// An error naming every missing feature of the device `device`, if any.
    pub fn check(&self, device: &str) -> Result<()> {
        let missing = self.missing();
        if missing.is_empty() {
            return Ok(());
        }
        Err(Error::MissingFeature {
            device: device.into(),
            what: format!("the features {}", missing.join(", ")),
        })
    }
}

/// The feature structs to chain into a `VkDeviceCreateInfo` so that canopy can run on the
/// device: every required feature, and full subgroups where the device has them.
///
/// ```no_run
/// # fn make(instance: &ash::Instance, physical: ash::vk::PhysicalDevice) -> canopy::vk::Result<()> {
/// use ash::vk;
/// let mut canopy_features = canopy::vk::RequiredFeatures::for_device(instance, physical)?;
/// let queues = [vk::DeviceQueueCreateInfo::default().queue_priorities(&[1.0])];
/// let info = canopy_features.chain(vk::DeviceCreateInfo::default().queue_create_infos(&queues));
/// let device = unsafe { instance.create_device(physical, &info, None) };
/// # Ok(()) }
/// ```
pub struct RequiredFeatures {
    core: vk::PhysicalDeviceFeatures,
    f12: vk::PhysicalDeviceVulkan12Features<'static>,
    f13: vk::PhysicalDeviceVulkan13Features<'static>,
}

impl RequiredFeatures {
    /// The features to enable on `physical_device`; an error naming those it lacks.
    pub fn for_device(
        instance: &ash::Instance,
        physical_device: vk::PhysicalDevice,
    ) -> Result<Self> {
        let support = FeatureSupport::of(instance, physical_device);
        let properties = unsafe { instance.get_physical_device_properties(physical_device) };
        let name = properties
            .device_name_as_c_str()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        support.check(&name)?;
        Ok(Self::with_full_subgroups(support.full_subgroups))
    }

    /// The required features, with `subgroupSizeControl` and `computeFullSubgroups` when
    /// `full_subgroups`.
    pub(crate) fn with_full_subgroups(full_subgroups: bool) -> Self {
        Self {
            core: vk::PhysicalDeviceFeatures::default().shader_int64(true),
            f12: vk::PhysicalDeviceVulkan12Features::default()
                .buffer_device_address(true)
                .shader_buffer_int64_atomics(true)
                .scalar_block_layout(true)
                .host_query_reset(true)
                .timeline_semaphore(true)
                .vulkan_memory_model(true)
                .vulkan_memory_model_device_scope(true),
            f13: vk::PhysicalDeviceVulkan13Features::default()
                .synchronization2(true)
                .maintenance4(true)
                .subgroup_size_control(full_subgroups)
                .compute_full_subgroups(full_subgroups),
        }
    }

    /// `info` with canopy's features: the core features set (replacing any `info` had: add
    /// the application's own to [`Self::core_mut`] first) and the Vulkan 1.2 and 1.3 feature
    /// structs chained (an application that chains its own `VkPhysicalDeviceVulkan12Features`
    /// or `13` sets its flags through [`Self::vulkan12_mut`] and [`Self::vulkan13_mut`]
    /// instead, as Vulkan allows each struct once).
    pub fn chain<'a>(&'a mut self, info: vk::DeviceCreateInfo<'a>) -> vk::DeviceCreateInfo<'a> {
        info.enabled_features(&self.core)
            .push_next(&mut self.f12)
            .push_next(&mut self.f13)
    }

    /// The core features, to add the application's own.
    pub fn core_mut(&mut self) -> &mut vk::PhysicalDeviceFeatures {
        &mut self.core
    }

    /// The Vulkan 1.2 features, to add the application's own.
    pub fn vulkan12_mut(&mut self) -> &mut vk::PhysicalDeviceVulkan12Features<'static> {
        &mut self.f12
    }

    /// The Vulkan 1.3 features, to add the application's own.
    pub fn vulkan13_mut(&mut self) -> &mut vk::PhysicalDeviceVulkan13Features<'static> {
        &mut self.f13
    }
}
