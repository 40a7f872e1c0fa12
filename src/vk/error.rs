//! canopy's error type: every failure a user can cause or meet names what went wrong.

use ash::vk;

/// Errors from the Vulkan layer and the GPU algorithms built on it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Vulkan loader library could not be opened.
    #[error(
        "no Vulkan loader found ({0}); install one (Debian/Ubuntu: tools/setup.sh, or `apt install libvulkan1 mesa-vulkan-drivers`)"
    )]
    NoLoader(String),
    /// No physical device matched, or none supports what canopy needs.
    #[error("no usable Vulkan device: {0}")]
    NoDevice(String),
    /// The device lacks a feature, extension or limit canopy needs.
    #[error("the Vulkan device '{device}' lacks {what}")]
    MissingFeature {
        /// Device name.
        device: String,
        /// The missing feature.
        what: String,
    },
    /// Work needs more than a limit of the device allows.
    #[error("the Vulkan device '{device}' allows {allowed} {limit}; this needs {needed}")]
    DeviceLimit {
        /// Device name.
        device: String,
        /// The limit, in words.
        limit: &'static str,
        /// What the device allows.
        allowed: u64,
        /// What was needed.
        needed: u64,
    },
    /// An allocation did not fit in device memory.
    #[error("out of device memory allocating '{name}' ({bytes} bytes)")]
    OutOfDeviceMemory {
        /// Name of the allocation.
        name: String,
        /// Requested size in bytes.
        bytes: u64,
    },
    /// A Vulkan call failed.
    #[error("Vulkan call {call} failed: {result}")]
    Vulkan {
        /// The Vulkan function.
        call: &'static str,
        /// Its result code.
        result: vk::Result,
    },
    /// Submitted GPU work did not finish within the context's fence timeout
    /// ([`crate::vk::Context::set_fence_timeout`]). The work may still be running: the
    /// context then destroys nothing ([`crate::vk::Context::timed_out`]).
    #[error(
        "the GPU did not finish within {seconds} s (vkWaitForFences timed out); raise \
         --fence-timeout (or CANOPY_FENCE_TIMEOUT) for slow devices, 0 for no limit"
    )]
    GpuTimeout {
        /// The timeout, in seconds.
        seconds: f64,
    },
    /// The caller passed input canopy cannot work on.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The Khronos validation layer reported errors.
    #[error("Vulkan validation reported {} error(s):\n{}", .0.len(), .0.join("\n"))]
    Validation(Vec<String>),
}

/// Result alias for canopy.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds the name of the failing Vulkan call to an `ash` result.
pub(crate) trait VkContext<T> {
    fn call(self, call: &'static str) -> Result<T>;
}

impl<T> VkContext<T> for Result<T, vk::Result> {
    fn call(self, call: &'static str) -> Result<T> {
        self.map_err(|result| Error::Vulkan { call, result })
    }
}
