//! Acceleration structures built on the GPU, one module per structure. Each has parameters
//! with documented defaults, a `record` that records the build into a command buffer, and
//! statistics read back on request.

pub mod bvh;
pub mod lbvh;
pub mod octree;
