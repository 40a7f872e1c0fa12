//! Acceleration structures, one module per structure: the node formats ([`bvh`], [`kdtree`]),
//! and the builders, each with parameters of documented defaults and a `record` that records
//! the build into a command buffer ([`lbvh`], [`octree`], [`kdtree_build`]). [`native`] is the driver's own
//! builder, run over the same buffers as a yardstick.

pub mod bvh;
pub mod kdtree;
pub mod kdtree_build;
pub mod lbvh;
pub mod native;
pub mod octree;
