//! Acceleration structures built on the GPU, one module per structure. Each has parameters
//! with documented defaults, a `record` that records the build into a command buffer, and
//! statistics read back on request. [`native`] is the driver's own builder, built over the
//! same buffers as a yardstick.

pub mod bvh;
pub mod kdtree;
pub mod lbvh;
pub mod native;
pub mod octree;
