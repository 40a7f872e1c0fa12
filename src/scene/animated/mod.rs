//! Animated input evaluated on the GPU (seed 000 §4): geometry made every frame by kernels
//! and written straight into the builders' input buffers, with no copy of it through the CPU.
//!
//! - [`skin`]: glTF skinning and morph targets ([`crate::scene::rig`] samples the animation);
//! - [`normals`]: vertex normals from the posed triangles, and displacement along them.

pub mod normals;
pub mod skin;
