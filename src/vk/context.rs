//! The Vulkan context: either a headless instance and device that canopy creates, or an
//! application's own instance, device and queue wrapped without taking ownership.

use super::error::{Error, Result, VkContext};
use super::features::{FeatureSupport, RequiredFeatures};
use super::pipeline::PipelineCache;
use ash::vk;
use gpu_allocator::vulkan::{Allocator, AllocatorCreateDesc};
use std::ffi::{CStr, c_void};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// Whether to enable the Khronos validation layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Validation {
    /// Never.
    #[default]
    Off,
    /// When the layer is installed.
    IfAvailable,
    /// Always; creating the context fails when the layer is missing.
    Required,
}

/// How canopy picks and sets up its own headless device.
#[derive(Clone, Debug, Default)]
pub struct ContextOptions {
    /// Device to use: an index into the enumerated devices, or a case-insensitive substring of
    /// its name. `None` reads `CANOPY_DEVICE`, then prefers discrete > integrated > virtual > CPU.
    pub device: Option<String>,
    /// Validation layer policy.
    pub validation: Validation,
    /// Pretend the device allows at most this many workgroups per dispatch dimension (at
    /// least [`MIN_WORKGROUP_COUNT_OVERRIDE`]). `None` reads `CANOPY_MAX_WORKGROUPS`. Every
    /// dispatch folds larger grids into 2D and 3D, so a small limit exercises that folding
    /// at small sizes (the tests run the builders and the renderer under 64).
    pub max_workgroup_count: Option<u32>,
}

/// The smallest per-dimension workgroup limit [`ContextOptions::max_workgroup_count`] accepts.
pub const MIN_WORKGROUP_COUNT_OVERRIDE: u32 = 8;

/// The largest per-dimension workgroup count canopy uses, even where a device allows more:
/// the guaranteed minimum of `maxComputeWorkGroupCount`, so that every folded grid's
/// `x * y` stays within 32 bits in the kernels.
pub const WORKGROUP_COUNT_CEILING: u32 = 65535;

/// An application's Vulkan objects for canopy to record into (the embedding path).
///
/// The device must have been created with Vulkan 1.3 (or the extensions promoted into it) and
/// the features of [`super::RequiredFeatures`] enabled. canopy never destroys these objects.
pub struct ExternalDevice {
    /// The application's loader entry points.
    pub entry: ash::Entry,
    /// The application's instance.
    pub instance: ash::Instance,
    /// The physical device the logical device was created from.
    pub physical_device: vk::PhysicalDevice,
    /// The application's logical device.
    pub device: ash::Device,
    /// A queue with compute support, used by canopy's blocking helpers (uploads, readbacks).
    pub queue: vk::Queue,
    /// The family of `queue`.
    pub queue_family_index: u32,
}

/// What canopy reads off a device once, for kernels and for `canopy info`.
#[derive(Clone, Debug)]
pub struct DeviceCaps {
    /// Device name as reported by the driver.
    pub name: String,
    /// Device type.
    pub device_type: vk::PhysicalDeviceType,
    /// Vulkan API version the device supports.
    pub api_version: u32,
    /// Driver name and info.
    pub driver: String,
    /// Subgroup size compute kernels run with (a specialization constant of every kernel).
    pub subgroup_size: u32,
    /// Smallest and largest subgroup size (subgroup size control).
    pub subgroup_size_range: (u32, u32),
    /// Subgroup operations supported in compute.
    pub subgroup_ops: vk::SubgroupFeatureFlags,
    /// Whether kernels can require full subgroups and a fixed subgroup size.
    pub full_subgroups: bool,
    /// Shared memory per workgroup, bytes.
    pub max_shared_memory: u32,
    /// Largest workgroup size in x and invocation count.
    pub max_workgroup_size: u32,
    /// Workgroups per dispatch dimension that canopy uses: the smallest of the device's three
    /// `maxComputeWorkGroupCount` limits, at most [`WORKGROUP_COUNT_CEILING`], lowered by
    /// [`ContextOptions::max_workgroup_count`]. Larger grids are folded into 2D and 3D
    /// ([`crate::vk::grid_for`]).
    pub max_workgroup_count: u32,
    /// Largest storage buffer range, bytes.
    pub max_storage_buffer_range: u32,
    /// Nanoseconds per timestamp tick.
    pub timestamp_period_ns: f32,
    /// Memory heaps: (size in bytes, device local).
    pub heaps: Vec<(u64, bool)>,
    /// Total device-local heap size in bytes.
    pub device_local_bytes: u64,
    /// Whether 32-bit float atomic add on buffers is available.
    pub float_atomic_add: bool,
    /// Whether `VK_KHR_acceleration_structure` (with `VK_KHR_deferred_host_operations`, the
    /// `accelerationStructure` feature, and the `rayQuery` or else the `rayTracingPipeline`
    /// feature that using the driver's builder requires) is enabled, so that the driver's own BVH builder can
    /// run on canopy's buffers (see [`crate::accel::native`]). Headless contexts enable it
    /// where the device supports it; on an application's device it is `false`.
    pub acceleration_structure: bool,
    /// Whether `VK_KHR_ray_tracing_pipeline` is enabled too, so that rays can be traced
    /// through the driver's structure with its own ray-tracing pipeline
    /// ([`crate::accel::native::NativeTracer`]).
    pub ray_tracing_pipeline: bool,
    /// The device can skip recorded dispatches whose predicate in a buffer is zero
    /// (`VK_EXT_conditional_rendering`): the GPU-driven level loops then skip their empty
    /// rounds instead of dispatching zero workgroups in each. Off on an application's device
    /// (canopy cannot tell which extensions it enabled).
    pub conditional_rendering: bool,
}

/// Bytes of device-local buffers alive now, and the most alive at once since the last reset.
#[derive(Default)]
pub(crate) struct MemoryGauge {
    live: AtomicU64,
    peak: AtomicU64,
}

impl MemoryGauge {
    pub fn acquire(&self, bytes: u64) {
        let live = self.live.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(live, Ordering::Relaxed);
    }

    pub fn release(&self, bytes: u64) {
        self.live.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// Device memory held in canopy's buffers (requested sizes of device-local buffers; the
/// allocator's rounding and blocks are not counted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceMemory {
    /// Bytes alive now.
    pub live: u64,
    /// The most bytes alive at once since the context was made or [`Context::reset_peak_memory`].
    pub peak: u64,
}

/// Validation messages collected by the debug messenger.
#[derive(Default)]
pub(crate) struct ValidationLog {
    errors: Mutex<Vec<String>>,
}

pub(crate) struct Shared {
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    pub physical_device: vk::PhysicalDevice,
    pub device: ash::Device,
    pub queue: vk::Queue,
    pub queue_family: u32,
    pub caps: DeviceCaps,
    pub allocator: ManuallyDrop<Mutex<Allocator>>,
    pub pipelines: PipelineCache,
    pub command_pool: Mutex<vk::CommandPool>,
    pub device_memory: MemoryGauge,
    /// The `VK_EXT_conditional_rendering` commands, where [`DeviceCaps::conditional_rendering`].
    pub conditional_rendering: Option<ash::ext::conditional_rendering::Device>,
    /// How long a submission is waited for, in nanoseconds (`u64::MAX`: no limit).
    pub fence_timeout: AtomicU64,
    /// Set when a wait timed out: the GPU may still run work that uses any of the context's
    /// objects, so none is destroyed from then on (they are leaked).
    pub timed_out: std::sync::atomic::AtomicBool,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    validation_log: Option<*mut Arc<ValidationLog>>,
    log_handle: Arc<ValidationLog>,
    owned: bool,
}

// SAFETY: the raw pointer is only the debug messenger's user data, freed in Drop after the
// messenger is destroyed; all mutable state behind it is in a Mutex.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

/// A Vulkan device with canopy's allocator, pipeline cache and capabilities.
///
/// Cheap to clone; buffers and pipelines keep it alive.
#[derive(Clone)]
pub struct Context {
    pub(crate) shared: Arc<Shared>,
}

unsafe extern "system" fn debug_callback(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the loader passes valid callback data; `user` is the Arc we leaked in `new`.
    let message = unsafe {
        let data = &*data;
        if data.p_message.is_null() {
            String::from("(no message)")
        } else {
            CStr::from_ptr(data.p_message)
                .to_string_lossy()
                .into_owned()
        }
    };
    if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) {
        log::error!("vulkan validation: {message}");
        let log = unsafe { &*(user as *const Arc<ValidationLog>) };
        log.errors.lock().unwrap().push(message);
    } else if severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::WARNING) {
        log::warn!("vulkan validation: {message}");
    } else {
        log::debug!("vulkan: {message}");
    }
    vk::FALSE
}

fn type_rank(t: vk::PhysicalDeviceType) -> u32 {
    match t {
        vk::PhysicalDeviceType::DISCRETE_GPU => 0,
        vk::PhysicalDeviceType::INTEGRATED_GPU => 1,
        vk::PhysicalDeviceType::VIRTUAL_GPU => 2,
        vk::PhysicalDeviceType::CPU => 3,
        _ => 4,
    }
}

/// Loads the Vulkan entry points, with a clear error when no loader is installed.
pub fn load_entry() -> Result<ash::Entry> {
    // SAFETY: loading the system Vulkan loader; its global functions are trusted.
    unsafe { ash::Entry::load() }.map_err(|e| Error::NoLoader(e.to_string()))
}

/// Names and types of the Vulkan devices present, in enumeration order.
pub fn list_devices() -> Result<Vec<(String, vk::PhysicalDeviceType)>> {
    let entry = load_entry()?;
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
    let instance = unsafe {
        entry.create_instance(
            &vk::InstanceCreateInfo::default().application_info(&app),
            None,
        )
    }
    .map_err(|e| Error::NoDevice(format!("vkCreateInstance failed: {e}")))?;
    let result = unsafe { instance.enumerate_physical_devices() }
        .call("vkEnumeratePhysicalDevices")
        .map(|devices| {
            devices
                .iter()
                .map(|&pd| {
                    let p = unsafe { instance.get_physical_device_properties(pd) };
                    let name = p.device_name_as_c_str().unwrap_or(c"?");
                    (name.to_string_lossy().into_owned(), p.device_type)
                })
                .collect()
        });
    unsafe { instance.destroy_instance(None) };
    result
}

/// The ray-traversal features enabled beside `VK_KHR_acceleration_structure` where the device
/// has them: the driver's builder may only be used when one of them is enabled
/// (VUID-...-rayTracingPipeline-03617), and the ray-tracing pipeline traces rays through the
/// driver's structure ([`crate::accel::native`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RayFeatures {
    query: bool,
    pipeline: bool,
}

fn read_caps(instance: &ash::Instance, pd: vk::PhysicalDevice) -> (DeviceCaps, RayFeatures) {
    let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
    let mut size_control = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
    let mut driver = vk::PhysicalDeviceDriverProperties::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default()
        .push_next(&mut subgroup)
        .push_next(&mut size_control)
        .push_next(&mut driver);
    unsafe { instance.get_physical_device_properties2(pd, &mut props2) };
    let props = props2.properties;
    let subgroup_ops = subgroup.supported_operations;
    let subgroup_size = subgroup.subgroup_size;
    let size_range = (
        size_control.min_subgroup_size,
        size_control.max_subgroup_size,
    );
    let required_stages = size_control.required_subgroup_size_stages;

    let extensions =
        unsafe { instance.enumerate_device_extension_properties(pd) }.unwrap_or_default();
    let has_extension = |name: &CStr| {
        extensions
            .iter()
            .any(|e| e.extension_name_as_c_str() == Ok(name))
    };
    let as_extensions = ACCELERATION_STRUCTURE_EXTENSIONS
        .iter()
        .all(|name| has_extension(name));

    let mut sc_features = vk::PhysicalDeviceSubgroupSizeControlFeatures::default();
    let mut float_atomics = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
    let mut as_features = vk::PhysicalDeviceAccelerationStructureFeaturesKHR::default();
    let mut query_features = vk::PhysicalDeviceRayQueryFeaturesKHR::default();
    let mut pipeline_features = vk::PhysicalDeviceRayTracingPipelineFeaturesKHR::default();
    let mut conditional_features = vk::PhysicalDeviceConditionalRenderingFeaturesEXT::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default()
        .push_next(&mut sc_features)
        .push_next(&mut float_atomics);
    let conditional_extension = has_extension(ash::ext::conditional_rendering::NAME);
    if conditional_extension {
        f2 = f2.push_next(&mut conditional_features);
    }
    if as_extensions {
        f2 = f2.push_next(&mut as_features);
        if has_extension(ash::khr::ray_query::NAME) {
            f2 = f2.push_next(&mut query_features);
        }
        if has_extension(ash::khr::ray_tracing_pipeline::NAME) {
            f2 = f2.push_next(&mut pipeline_features);
        }
    }
    unsafe { instance.get_physical_device_features2(pd, &mut f2) };
    let float_atomic_add = float_atomics.shader_buffer_float32_atomic_add == vk::TRUE;
    let mut ray_features = RayFeatures {
        query: query_features.ray_query == vk::TRUE,
        pipeline: pipeline_features.ray_tracing_pipeline == vk::TRUE,
    };
    let acceleration_structure = as_extensions
        && as_features.acceleration_structure == vk::TRUE
        && (ray_features.query || ray_features.pipeline);
    if !acceleration_structure {
        ray_features = RayFeatures::default();
    }
    let sc = vk::PhysicalDeviceSubgroupSizeControlFeatures {
        subgroup_size_control: sc_features.subgroup_size_control,
        compute_full_subgroups: sc_features.compute_full_subgroups,
        ..Default::default()
    };

    let mem = unsafe { instance.get_physical_device_memory_properties(pd) };
    let heaps: Vec<(u64, bool)> = mem.memory_heaps[..mem.memory_heap_count as usize]
        .iter()
        .map(|h| (h.size, h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL)))
        .collect();
    let device_local_bytes = heaps.iter().filter(|h| h.1).map(|h| h.0).sum();
    let cstr = |s: &[std::ffi::c_char]| {
        unsafe { CStr::from_ptr(s.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    let caps = DeviceCaps {
        name: cstr(&props.device_name),
        device_type: props.device_type,
        api_version: props.api_version,
        driver: format!(
            "{} {}",
            cstr(&driver.driver_name),
            cstr(&driver.driver_info)
        ),
        subgroup_size,
        subgroup_size_range: size_range,
        subgroup_ops,
        full_subgroups: sc.subgroup_size_control == vk::TRUE
            && sc.compute_full_subgroups == vk::TRUE
            && required_stages.contains(vk::ShaderStageFlags::COMPUTE),
        max_shared_memory: props.limits.max_compute_shared_memory_size,
        max_workgroup_size: props.limits.max_compute_work_group_size[0]
            .min(props.limits.max_compute_work_group_invocations),
        max_workgroup_count: props
            .limits
            .max_compute_work_group_count
            .into_iter()
            .min()
            .unwrap_or(0)
            .min(WORKGROUP_COUNT_CEILING),
        max_storage_buffer_range: props.limits.max_storage_buffer_range,
        timestamp_period_ns: props.limits.timestamp_period,
        heaps,
        device_local_bytes,
        float_atomic_add,
        acceleration_structure,
        ray_tracing_pipeline: ray_features.pipeline,
        conditional_rendering: conditional_extension
            && conditional_features.conditional_rendering == vk::TRUE,
    };
    (caps, ray_features)
}

/// The device extensions behind [`DeviceCaps::acceleration_structure`].
const ACCELERATION_STRUCTURE_EXTENSIONS: [&CStr; 2] = [
    ash::khr::acceleration_structure::NAME,
    ash::khr::deferred_host_operations::NAME,
];

/// Subgroup operations every canopy kernel relies on.
const REQUIRED_SUBGROUP_OPS: vk::SubgroupFeatureFlags = vk::SubgroupFeatureFlags::from_raw(
    vk::SubgroupFeatureFlags::BASIC.as_raw()
        | vk::SubgroupFeatureFlags::VOTE.as_raw()
        | vk::SubgroupFeatureFlags::ARITHMETIC.as_raw()
        | vk::SubgroupFeatureFlags::BALLOT.as_raw()
        | vk::SubgroupFeatureFlags::SHUFFLE.as_raw(),
);

fn check_caps(caps: &DeviceCaps) -> Result<()> {
    let missing = |what: &str| Error::MissingFeature {
        device: caps.name.clone(),
        what: what.into(),
    };
    if caps.api_version < vk::API_VERSION_1_3 {
        return Err(missing("Vulkan 1.3"));
    }
    if !caps.subgroup_ops.contains(REQUIRED_SUBGROUP_OPS) {
        return Err(missing(
            "subgroup basic/vote/arithmetic/ballot/shuffle operations",
        ));
    }
    if caps.subgroup_size < 4 || caps.subgroup_size > 128 {
        return Err(missing("a subgroup size between 4 and 128"));
    }
    Ok(())
}

impl DeviceCaps {
    /// Whether the driver ends an invocation that reaches a memory barrier in divergent
    /// control flow (seen on lavapipe, Mesa's CPU driver): kernels that need such barriers
    /// then keep the whole workgroup in the loop.
    pub fn ends_divergent_invocations_at_memory_barriers(&self) -> bool {
        self.device_type == vk::PhysicalDeviceType::CPU
    }

    /// Whether the driver runs a workgroup's subgroups one after another, switching only at
    /// barriers (lavapipe): a subgroup that waits for another subgroup of its workgroup must
    /// reach a barrier while it waits.
    pub fn runs_subgroups_in_turn(&self) -> bool {
        self.device_type == vk::PhysicalDeviceType::CPU
    }
}

impl Context {
    /// Creates a headless instance and device: the device named by `options.device` (or the
    /// `CANOPY_DEVICE` environment variable), else the best by type.
    pub fn new(options: &ContextOptions) -> Result<Self> {
        let entry = load_entry()?;
        let layer_present = unsafe { entry.enumerate_instance_layer_properties() }
            .call("vkEnumerateInstanceLayerProperties")?
            .iter()
            .any(|l| l.layer_name_as_c_str() == Ok(VALIDATION_LAYER));
        let validate = match options.validation {
            Validation::Off => false,
            Validation::IfAvailable => layer_present,
            Validation::Required if !layer_present => {
                return Err(Error::MissingFeature {
                    device: "(instance)".into(),
                    what: "the Khronos validation layer (install vulkan-validationlayers, \
                           or run tools/setup.sh)"
                        .into(),
                });
            }
            Validation::Required => true,
        };

        let app = vk::ApplicationInfo::default()
            .application_name(c"canopy")
            .engine_name(c"canopy")
            .api_version(vk::API_VERSION_1_3);
        let layers = [VALIDATION_LAYER.as_ptr()];
        let extensions = [ash::ext::debug_utils::NAME.as_ptr()];
        let mut create = vk::InstanceCreateInfo::default().application_info(&app);
        if validate {
            create = create
                .enabled_layer_names(&layers)
                .enabled_extension_names(&extensions);
        }
        let instance = unsafe { entry.create_instance(&create, None) }.map_err(|e| {
            Error::NoDevice(format!(
                "vkCreateInstance failed ({e}); is a Vulkan driver installed? \
                 (Debian/Ubuntu without a GPU: mesa-vulkan-drivers)"
            ))
        })?;

        let log_handle = Arc::new(ValidationLog::default());
        let mut debug = None;
        let mut validation_log = None;
        if validate {
            let user = Box::into_raw(Box::new(log_handle.clone()));
            let loader = ash::ext::debug_utils::Instance::new(&entry, &instance);
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::ERROR
                        | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::GENERAL,
                )
                .pfn_user_callback(Some(debug_callback))
                .user_data(user as *mut c_void);
            let messenger = unsafe { loader.create_debug_utils_messenger(&info, None) }
                .call("vkCreateDebugUtilsMessengerEXT")?;
            debug = Some((loader, messenger));
            validation_log = Some(user);
        }

        let physical_device = match pick_device(&instance, options) {
            Ok(pd) => pd,
            Err(e) => {
                unsafe {
                    if let Some((loader, m)) = &debug {
                        loader.destroy_debug_utils_messenger(*m, None);
                    }
                    if let Some(user) = validation_log {
                        drop(Box::from_raw(user));
                    }
                    instance.destroy_instance(None);
                }
                return Err(e);
            }
        };
        let (mut caps, ray_features) = read_caps(&instance, physical_device);
        check_caps(&caps)?;
        let override_limit = match options.max_workgroup_count {
            Some(limit) => Some(limit),
            None => workgroup_count_from_env()?,
        };
        if let Some(limit) = override_limit {
            if limit < MIN_WORKGROUP_COUNT_OVERRIDE {
                return Err(Error::InvalidInput(format!(
                    "a workgroup limit of {limit} per dimension: at least {MIN_WORKGROUP_COUNT_OVERRIDE}"
                )));
            }
            caps.max_workgroup_count = caps.max_workgroup_count.min(limit);
        }
        let families =
            unsafe { instance.get_physical_device_queue_family_properties(physical_device) };
        let queue_family = families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or_else(|| Error::NoDevice(format!("{} has no compute queue", caps.name)))?
            as u32;

        let priorities = [1.0];
        let queue_info = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(queue_family)
            .queue_priorities(&priorities)];
        let mut required = RequiredFeatures::with_full_subgroups(caps.full_subgroups);
        let mut float_atomics = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default()
            .shader_buffer_float32_atomic_add(caps.float_atomic_add);
        let mut as_features = vk::PhysicalDeviceAccelerationStructureFeaturesKHR::default()
            .acceleration_structure(true);
        let mut query_features = vk::PhysicalDeviceRayQueryFeaturesKHR::default().ray_query(true);
        let mut pipeline_features =
            vk::PhysicalDeviceRayTracingPipelineFeaturesKHR::default().ray_tracing_pipeline(true);
        let mut conditional_features = vk::PhysicalDeviceConditionalRenderingFeaturesEXT::default()
            .conditional_rendering(true);
        let mut device_extensions = Vec::new();
        if caps.conditional_rendering {
            device_extensions.push(ash::ext::conditional_rendering::NAME.as_ptr());
        }
        if caps.float_atomic_add {
            device_extensions.push(ash::ext::shader_atomic_float::NAME.as_ptr());
        }
        let ray_features = if caps.acceleration_structure {
            ray_features
        } else {
            RayFeatures::default()
        };
        caps.ray_tracing_pipeline = ray_features.pipeline;
        if caps.acceleration_structure {
            device_extensions.extend(ACCELERATION_STRUCTURE_EXTENSIONS.map(CStr::as_ptr));
        }
        if ray_features.query {
            device_extensions.push(ash::khr::ray_query::NAME.as_ptr());
        }
        if ray_features.pipeline {
            device_extensions.push(ash::khr::ray_tracing_pipeline::NAME.as_ptr());
        }
        let mut device_info = required.chain(
            vk::DeviceCreateInfo::default()
                .queue_create_infos(&queue_info)
                .enabled_extension_names(&device_extensions),
        );
        if caps.float_atomic_add {
            device_info = device_info.push_next(&mut float_atomics);
        }
        if caps.conditional_rendering {
            device_info = device_info.push_next(&mut conditional_features);
        }
        if caps.acceleration_structure {
            device_info = device_info.push_next(&mut as_features);
        }
        if ray_features.query {
            device_info = device_info.push_next(&mut query_features);
        }
        if ray_features.pipeline {
            device_info = device_info.push_next(&mut pipeline_features);
        }
        let device = unsafe { instance.create_device(physical_device, &device_info, None) }
            .map_err(|e| Error::MissingFeature {
                device: caps.name.clone(),
                what: format!("a device with canopy's required features ({e})"),
            })?;
        let queue = unsafe { device.get_device_queue(queue_family, 0) };
        Self::finish(Parts {
            entry,
            instance,
            physical_device,
            device,
            queue,
            queue_family,
            caps,
            debug,
            validation_log,
            log_handle,
            owned: true,
        })
    }

    /// Wraps an application's device. canopy records into command buffers the application
    /// passes it and never destroys the application's objects. The device must have been
    /// created with [`RequiredFeatures`] chained in (Vulkan does not let canopy read which
    /// features were enabled: it checks that the physical device supports them, and names
    /// those it lacks). canopy uses no extension on such a device: the driver's own builder
    /// ([`crate::accel::native`]) and float atomics are off.
    pub fn from_external(external: ExternalDevice) -> Result<Self> {
        let (mut caps, _) = read_caps(&external.instance, external.physical_device);
        check_caps(&caps)?;
        FeatureSupport::of(&external.instance, external.physical_device).check(&caps.name)?;
        caps.float_atomic_add = false;
        if let Some(limit) = workgroup_count_from_env()? {
            caps.max_workgroup_count = caps
                .max_workgroup_count
                .min(limit.max(MIN_WORKGROUP_COUNT_OVERRIDE));
        }
        // canopy cannot tell which extensions the application enabled.
        caps.acceleration_structure = false;
        caps.ray_tracing_pipeline = false;
        caps.conditional_rendering = false;
        Self::finish(Parts {
            entry: external.entry,
            instance: external.instance,
            physical_device: external.physical_device,
            device: external.device,
            queue: external.queue,
            queue_family: external.queue_family_index,
            caps,
            debug: None,
            validation_log: None,
            log_handle: Arc::default(),
            owned: false,
        })
    }

    fn finish(parts: Parts) -> Result<Self> {
        let allocator = Allocator::new(&AllocatorCreateDesc {
            instance: parts.instance.clone(),
            device: parts.device.clone(),
            physical_device: parts.physical_device,
            debug_settings: Default::default(),
            buffer_device_address: true,
            allocation_sizes: Default::default(),
        })
        .map_err(|e| Error::NoDevice(format!("memory allocator: {e}")))?;
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(parts.queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        let command_pool = unsafe { parts.device.create_command_pool(&pool_info, None) }
            .call("vkCreateCommandPool")?;
        let pipelines = PipelineCache::new(&parts.device)?;
        let conditional_rendering = parts
            .caps
            .conditional_rendering
            .then(|| ash::ext::conditional_rendering::Device::new(&parts.instance, &parts.device));
        let fence_timeout = match std::env::var("CANOPY_FENCE_TIMEOUT") {
            Ok(text) if !text.is_empty() => super::recorder::parse_fence_timeout(&text)
                .map_err(|e| Error::InvalidInput(format!("CANOPY_FENCE_TIMEOUT: {e}")))?,
            _ => Some(super::recorder::SUBMIT_TIMEOUT),
        };
        let fence_timeout =
            fence_timeout.map_or(u64::MAX, |t| t.as_nanos().min(u64::MAX as u128 - 1) as u64);
        Ok(Self {
            shared: Arc::new(Shared {
                entry: parts.entry,
                instance: parts.instance,
                physical_device: parts.physical_device,
                device: parts.device,
                queue: parts.queue,
                queue_family: parts.queue_family,
                caps: parts.caps,
                allocator: ManuallyDrop::new(Mutex::new(allocator)),
                pipelines,
                command_pool: Mutex::new(command_pool),
                device_memory: MemoryGauge::default(),
                conditional_rendering,
                fence_timeout: AtomicU64::new(fence_timeout),
                timed_out: Default::default(),
                debug: parts.debug,
                validation_log: parts.validation_log,
                log_handle: parts.log_handle,
                owned: parts.owned,
            }),
        })
    }

    /// How long a submission's wait may last before it is reported as
    /// [`Error::GpuTimeout`] (`None`: no limit). A new context takes `CANOPY_FENCE_TIMEOUT`
    /// (seconds; `0` or `none` for no limit), else [`super::SUBMIT_TIMEOUT`] (120 s).
    pub fn set_fence_timeout(&self, timeout: Option<std::time::Duration>) {
        let nanos = timeout.map_or(u64::MAX, |t| t.as_nanos().min(u64::MAX as u128 - 1) as u64);
        self.shared.fence_timeout.store(nanos, Ordering::Relaxed);
    }

    /// The wait limit [`Self::set_fence_timeout`] set (`None`: no limit).
    pub fn fence_timeout(&self) -> Option<std::time::Duration> {
        match self.shared.fence_timeout.load(Ordering::Relaxed) {
            u64::MAX => None,
            nanos => Some(std::time::Duration::from_nanos(nanos)),
        }
    }

    /// Whether a wait timed out ([`Error::GpuTimeout`]). The GPU may then still run work
    /// that uses any of this context's objects, so from then on none is destroyed: buffers,
    /// query pools, pipelines and the device itself are leaked (freed by the process's end),
    /// which is sound where destroying them under running work is not. Make a new context
    /// to go on.
    pub fn timed_out(&self) -> bool {
        self.shared.timed_out.load(Ordering::SeqCst)
    }

    /// Device-local memory in canopy's buffers now and at its peak.
    pub fn device_memory(&self) -> DeviceMemory {
        let gauge = &self.shared.device_memory;
        DeviceMemory {
            live: gauge.live.load(Ordering::Relaxed),
            peak: gauge.peak.load(Ordering::Relaxed),
        }
    }

    /// Starts a new peak at the memory alive now (to measure the peak of one piece of work).
    pub fn reset_peak_memory(&self) {
        let gauge = &self.shared.device_memory;
        gauge
            .peak
            .store(gauge.live.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// Device capabilities.
    pub fn caps(&self) -> &DeviceCaps {
        &self.shared.caps
    }

    /// The `ash` device, for applications recording around canopy's work.
    pub fn device(&self) -> &ash::Device {
        &self.shared.device
    }

    /// The queue family canopy submits to.
    pub fn queue_family(&self) -> u32 {
        self.shared.queue_family
    }

    /// Whether the validation layer is active on this context.
    pub fn validation_enabled(&self) -> bool {
        self.shared.debug.is_some()
    }

    /// Takes the validation errors collected so far; `Err` when there were any.
    pub fn check_validation(&self) -> Result<()> {
        let errors = std::mem::take(&mut *self.shared.log_handle.errors.lock().unwrap());
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::Validation(errors))
        }
    }

    /// The entry points (for applications and tests that call Vulkan directly).
    pub fn entry(&self) -> &ash::Entry {
        &self.shared.entry
    }

    /// The instance.
    pub fn instance(&self) -> &ash::Instance {
        &self.shared.instance
    }

    /// The physical device.
    pub fn physical_device(&self) -> vk::PhysicalDevice {
        self.shared.physical_device
    }
}

/// `CANOPY_MAX_WORKGROUPS`, when set: a per-dimension workgroup limit below the device's.
fn workgroup_count_from_env() -> Result<Option<u32>> {
    match std::env::var("CANOPY_MAX_WORKGROUPS") {
        Ok(text) if !text.is_empty() => text.parse().map(Some).map_err(|_| {
            Error::InvalidInput(format!(
                "CANOPY_MAX_WORKGROUPS={text}: expected a workgroup count per dimension"
            ))
        }),
        _ => Ok(None),
    }
}

struct Parts {
    entry: ash::Entry,
    instance: ash::Instance,
    physical_device: vk::PhysicalDevice,
    device: ash::Device,
    queue: vk::Queue,
    queue_family: u32,
    caps: DeviceCaps,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    validation_log: Option<*mut Arc<ValidationLog>>,
    log_handle: Arc<ValidationLog>,
    owned: bool,
}

fn pick_device(instance: &ash::Instance, options: &ContextOptions) -> Result<vk::PhysicalDevice> {
    let devices =
        unsafe { instance.enumerate_physical_devices() }.call("vkEnumeratePhysicalDevices")?;
    if devices.is_empty() {
        return Err(Error::NoDevice(
            "no Vulkan devices found (without a GPU install Mesa's lavapipe: mesa-vulkan-drivers)"
                .into(),
        ));
    }
    let described: Vec<(vk::PhysicalDevice, String, vk::PhysicalDeviceType)> = devices
        .iter()
        .map(|&pd| {
            let p = unsafe { instance.get_physical_device_properties(pd) };
            let name = p
                .device_name_as_c_str()
                .unwrap_or(c"?")
                .to_string_lossy()
                .into_owned();
            (pd, name, p.device_type)
        })
        .collect();
    let wanted = options
        .device
        .clone()
        .or_else(|| std::env::var("CANOPY_DEVICE").ok())
        .filter(|s| !s.is_empty());
    if let Some(wanted) = wanted {
        let found = match wanted.parse::<usize>() {
            Ok(i) => described.get(i),
            Err(_) => described
                .iter()
                .find(|d| d.1.to_lowercase().contains(&wanted.to_lowercase())),
        };
        return found.map(|d| d.0).ok_or_else(|| {
            let names: Vec<String> = described
                .iter()
                .enumerate()
                .map(|(i, d)| format!("{i}: {}", d.1))
                .collect();
            Error::NoDevice(format!(
                "no device matches '{wanted}'; available: {}",
                names.join(", ")
            ))
        });
    }
    Ok(described
        .iter()
        .min_by_key(|d| type_rank(d.2))
        .map(|d| d.0)
        .unwrap())
}

/// Held while a context destroys the device and instance it owns. NVIDIA's driver (580, four
/// H200s) deadlocks when several threads destroy their contexts at once, as a render on several
/// devices does when its frames are done: one context at a time is released instead.
static RELEASE_ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

impl Drop for Shared {
    fn drop(&mut self) {
        if self.timed_out.load(Ordering::SeqCst) {
            // The GPU may still run the work that timed out: destroying the device under it
            // is undefined, so it is left to the process's end.
            log::warn!("the Vulkan device is not destroyed: GPU work timed out and may still run");
            return;
        }
        let _one_at_a_time = self.owned.then(|| {
            RELEASE_ONE_AT_A_TIME
                .lock()
                .unwrap_or_else(|e| e.into_inner())
        });
        unsafe {
            if self.owned {
                let _ = self.device.device_wait_idle();
            }
            self.pipelines.destroy(&self.device);
            self.device
                .destroy_command_pool(*self.command_pool.get_mut().unwrap(), None);
            ManuallyDrop::drop(&mut self.allocator);
            if self.owned {
                self.device.destroy_device(None);
                if let Some((loader, messenger)) = self.debug.take() {
                    loader.destroy_debug_utils_messenger(messenger, None);
                }
                if let Some(user) = self.validation_log.take() {
                    drop(Box::from_raw(user));
                }
                self.instance.destroy_instance(None);
            }
        }
    }
}
