//! The low-level Vulkan layer: context (headless or an application's device), named buffers,
//! compute pipelines from embedded SPIR-V, command recording with named barriers and indirect
//! dispatch, and GPU timestamps.

mod buffer;
mod census;
mod context;
mod error;
mod features;
mod pipeline;
mod profiler;
mod recorder;
mod slice;

pub use ash::vk as raw;
pub use buffer::{Buffer, MemoryKind};
pub use census::{WorkCensus, WorkCounts};
pub use context::{
    Context, ContextOptions, DeviceCaps, DeviceMemory, ExternalDevice,
    MIN_WORKGROUP_COUNT_OVERRIDE, Validation, WORKGROUP_COUNT_CEILING, list_devices, load_entry,
};
pub use error::{Error, Result};
pub use features::{FeatureSupport, RequiredFeatures};
pub use pipeline::{Kernel, PUSH_CONSTANT_BYTES, Pipeline};
pub use profiler::Profiler;
pub use recorder::{
    Instruments, Recorder, SUBMIT_TIMEOUT, Submission, grid_for, parse_fence_timeout,
};
pub use slice::{Count, Slice};
