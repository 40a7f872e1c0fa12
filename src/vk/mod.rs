//! The low-level Vulkan layer: context (headless or an application's device), named buffers,
//! compute pipelines from embedded SPIR-V, command recording with named barriers and indirect
//! dispatch, and GPU timestamps.

mod buffer;
mod context;
mod error;
mod pipeline;
mod profiler;
mod recorder;

pub use ash::vk as raw;
pub use buffer::{Buffer, MemoryKind};
pub use context::{
    Context, ContextOptions, DeviceCaps, ExternalDevice, MIN_WORKGROUP_COUNT_OVERRIDE, Validation,
    WORKGROUP_COUNT_CEILING, list_devices, load_entry,
};
pub use error::{Error, Result};
pub use pipeline::{Kernel, PUSH_CONSTANT_BYTES, Pipeline};
pub use profiler::Profiler;
pub use recorder::{Recorder, SUBMIT_TIMEOUT, Submission, grid_for};
