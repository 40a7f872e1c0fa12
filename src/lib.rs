//! canopy: a portable Vulkan compute engine that rebuilds acceleration structures on the GPU
//! from scratch every frame and uses them to render and query dynamic scenes headless, on any
//! Vulkan 1.3 device (NVIDIA, AMD, Intel, and the CPU through Mesa's lavapipe).
//!
//! # Structures
//!
//! | [`accel::StructureKind`] | what | paper |
//! |---|---|---|
//! | `Lbvh` | linear BVH over triangles ([`accel::bvh`]) | Karras 2012, *Maximizing parallelism in the construction of BVHs, octrees, and k-d trees* |
//! | `KdTree` | SAH kd-tree over triangles, built breadth-first ([`accel::kdtree`]) | Zhou et al. 2008, *Real-time kd-tree construction on graphics hardware*; Chang et al. 2013 |
//! | `Octree` | octree and point k-d tree over points ([`accel::octree`]) | Karras 2012 |
//! | `Bih` | SAH bounding interval hierarchy over triangles, built by a GPU work queue ([`accel::bih`]) | seed 004 |
//! | `Grid` | screen-space tile x depth-slab grid for a view's camera rays ([`accel::grid`]) | Patidar & Narayanan 2008 |
//!
//! | `PointKd` | VVH point kd-tree over points, with exact k-nearest-neighbour and range queries ([`accel::pointkd`]) | Zhou et al. 2008 §5 |
//!
//! Point clouds: normals, densities and their orientation over the point kd-tree's queries
//! ([`points`], Zhou et al. 2008 §6). Caustics: photons traced through any structure and
//! gathered through a photon kd-tree rebuilt every frame ([`render::photons`], Zhou et al. 2008 §5.3).
//!
//! Every structure implements the traits of [`accel`] ([`accel::Structure`],
//! [`accel::RayStructure`] or [`accel::PointStructure`]); those rays go through are
//! [`accel::Traversable`] by [`trace::Tracer`].
//!
//! # The front door
//!
//! One-off work in blocking calls ([`quick`]): a structure built over a mesh and rays traced
//! through it, a point cloud's k nearest neighbours and normals.
//!
//! ```no_run
//! use canopy::{Accel, Context, ContextOptions, Mesh, PointCloud, Ray, StructureKind};
//!
//! # fn main() -> canopy::vk::Result<()> {
//! let ctx = Context::new(&ContextOptions::default())?;
//! let mesh = Mesh {
//!     positions: vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
//!     triangles: vec![[0, 1, 2]],
//!     normals: Vec::new(),
//! };
//! let bvh = Accel::build(&ctx, StructureKind::Lbvh, &mesh)?;
//! let down = Ray { origin: [0.2, 0.2, -1.0], tmin: 0.0, direction: [0.0, 0.0, 1.0], tmax: 9.0 };
//! let hits = bvh.intersect(&[down])?;
//! let nearest = PointCloud::build(&ctx, &mesh.positions)?.knn(&[[0.9, 0.1, 0.0]], 2)?;
//! # let _ = (hits, nearest);
//! # Ok(())
//! # }
//! ```
//!
//! # Three ways to use it
//!
//! - **Headless batch rendering**: [`render::Renderer`] and [`sequence::FrameSequence`];
//!   `examples/batch.rs`. A whole job (frames over several devices, files written by encoder
//!   threads, shards, resume): `job::RenderJob` (feature `png`), `examples/farm.rs`.
//! - **Offline animation export**: a deforming mesh rebuilt every frame, three frames in flight,
//!   each frame to a sink ([`sequence::FrameSequence`], `export` with the `png` feature);
//!   `examples/sequence.rs`. An application's own scene and motion render the same way once
//!   it implements [`render::FrameSource`].
//! - **Embedded in a Vulkan application**: the application's device
//!   ([`vk::Context::from_external`], [`vk::RequiredFeatures`]), its buffers
//!   ([`vk::Context::wrap_buffer`]) and its command buffer ([`vk::Recorder::new`]);
//!   `examples/embed.rs`. In short:
//!
//! ```no_run
//! use canopy::accel::bvh::Bvh;
//! use canopy::accel::bvh::lbvh::{LbvhBuilder, LbvhParams};
//! use canopy::geom::{Query, TriangleInput};
//! use canopy::trace::Tracer;
//! use canopy::vk::{Buffer, Context, Count, ExternalDevice, Recorder, Slice, raw};
//!
//! /// What the application keeps on its device: canopy's builder, tree and tracer.
//! struct RayCaster {
//!     builder: LbvhBuilder,
//!     bvh: Bvh,
//!     tracer: Tracer,
//! }
//!
//! impl RayCaster {
//!     fn new(ctx: &Context, max_triangles: u32) -> canopy::vk::Result<Self> {
//!         Ok(Self {
//!             builder: LbvhBuilder::new(ctx, LbvhParams::default(), max_triangles)?,
//!             bvh: Bvh::new(ctx, max_triangles)?,
//!             tracer: Tracer::new(ctx)?,
//!         })
//!     }
//!
//!     /// Records an LBVH build over the application's triangles and a closest-hit trace of
//!     /// `ray_count` rays into `hits`, into the application's command buffer `cmd` (in the
//!     /// recording state). The application orders its writes of the buffers before, and its
//!     /// reads of `hits` after.
//!     fn record_frame(
//!         &mut self,
//!         ctx: &Context,
//!         cmd: raw::CommandBuffer,
//!         triangles: &TriangleInput,
//!         rays: &Buffer,
//!         hits: &Buffer,
//!         ray_count: u32,
//!     ) -> canopy::vk::Result<()> {
//!         let mut rec = Recorder::new(ctx, cmd);
//!         self.builder.record(&mut rec, triangles, &mut self.bvh)?;
//!         let (rays, hits, count) = (Slice::whole(rays), Slice::whole(hits), Count::Host(ray_count));
//!         self.tracer.record(&mut rec, &self.bvh, Query::Closest, rays, hits, count)
//!     }
//! }
//!
//! fn embed(device: ExternalDevice, max_triangles: u32) -> canopy::vk::Result<()> {
//!     let ctx = Context::from_external(device)?;
//!     let caster = RayCaster::new(&ctx, max_triangles)?;
//!     // Each frame: wrap the application's buffers with ctx.wrap_buffer(...) once, then
//!     // caster.record_frame(&ctx, cmd, &TriangleInput::whole(...), &rays, &hits, count).
//!     # let _ = caster;
//!     Ok(())
//! }
//! ```
//!
//! Tracing from the application's own shaders: `glsl/include/canopy_trace.glsl` (under
//! [`GLSL_DIR`]) walks a BVH canopy built (closest hit, any hit, every hit to a callback) from
//! any compute shader the application compiles, over the tree's buffer addresses;
//! `examples/own_shader.rs`.
//!
//! # Modules, from the ground up
//!
//! - [`vk`]: the Vulkan layer (context, buffers, pipelines, recording, timestamps).
//! - [`geom`]: rays, hits, boxes, Morton codes and build inputs, shared with the GPU.
//! - [`prims`]: GPU primitives (reduce, scan, segmented reduce, compaction, radix sort,
//!   multi-split, indirect-argument preparation), each with a CPU reference in [`prims::cpu`].
//! - [`scene`]: meshes, loaders and the procedural default scene.
//! - [`accel`]: acceleration structures built on the GPU.
//! - [`trace`]: ray casting through them.
//! - [`quick`]: the front door's blocking calls ([`Accel`], [`PointCloud`]).
//! - [`render`]: the headless renderer.
//! - [`sequence`]: frame sequences, frames in flight.
//! - `export` (feature `png`): frame sinks (PNG sequences written atomically).
//! - `job` (feature `png`): a render job's frame plan (shards, resume, partial files left
//!   by killed runs), its stop flag and its per-frame stats log.
//! - [`atomic_file`]: files written whole or not at all in folders other processes share.
//!
//! The `bench` module (GPU times and work counters of all of the above) serves the `canopy
//! bench` and `canopy build` commands, the `cargo bench` targets and canopy's tests; it is not
//! part of the API and is hidden from these pages.
//!
//! # Features
//!
//! `cli` (default): the `canopy` command line and what it needs (clap, indicatif,
//! env_logger, ctrlc, png). `png`: `export`'s PNG sequences. With
//! `default-features = false` the crate is the engine alone.

#![warn(missing_docs)]

/// canopy's GLSL sources as this build of the crate holds them: put the folder on a shader
/// compiler's include path and `#include "include/canopy_trace.glsl"` to trace canopy's BVHs
/// from an application's own shaders (see that file).
pub const GLSL_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/glsl");

pub mod accel;
pub mod atomic_file;
#[doc(hidden)]
pub mod bench;
#[cfg(feature = "png")]
pub mod export;
pub mod geom;
#[cfg(feature = "png")]
pub mod job;
pub mod points;
pub mod prims;
pub mod quick;
pub mod render;
pub mod rng;
pub mod scene;
pub mod sequence;
pub mod trace;
pub mod vk;

// What each use needs first, at the root.
pub use accel::StructureKind;
pub use geom::ray::{Hit, MISS, Ray};
#[cfg(feature = "png")]
pub use job::RenderJob;
pub use quick::{Accel, Neighbours, PointCloud};
pub use render::Renderer;
pub use scene::Mesh;
pub use sequence::{FrameSequence, SequenceConfig};
pub use vk::{Context, ContextOptions, Validation};

/// SPIR-V of every kernel under `glsl/`, compiled by build.rs.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
