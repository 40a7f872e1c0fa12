//! canopy: a portable Vulkan compute engine that rebuilds acceleration structures on the GPU
//! every frame and uses them to render and query dynamic scenes headless.
//!
//! - [`vk`]: the Vulkan layer (context, buffers, pipelines, recording, timestamps).
//! - [`prims`]: GPU primitives (reduce, scan, segmented reduce, compaction, radix sort,
//!   multi-split, indirect-argument preparation), each with a CPU reference in [`cpu`].
//! - [`scene`]: meshes, loaders and the procedural default scene.
//! - [`accel`]: acceleration structures built on the GPU.
//! - [`trace`]: ray casting against them.
//! - [`render`]: the headless renderer.
//! - [`export`]: frame sinks (PNG sequences written atomically).
//! - [`bench`](mod@bench): measurements of all of the above (GPU times and work counters), shared by the
//!   `canopy bench` and `canopy build` commands and the `cargo bench` targets.

pub mod accel;
pub mod bench;
pub mod export;
pub mod geom;
pub mod prims;
pub mod render;
pub mod rng;
pub mod scene;
pub mod sequence;
pub mod trace;
pub mod vk;

/// SPIR-V of every kernel under `glsl/`, compiled by build.rs.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
