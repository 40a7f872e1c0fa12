//! The ground floor of canopy's vocabulary, just above [`crate::vk`]: what every structure,
//! the tracer and the renderer share, on the CPU and (byte for byte) on the GPU.
//!
//! - [`ray`]: [`Ray`], [`Hit`], [`Query`], [`RayWork`], the watertight ray/triangle test, the
//!   slab test and brute-force queries (the reference of every traversal);
//! - [`aabb`]: boxes, as the GPU stores them and as the CPU references compute with;
//! - [`morton`]: the Morton frame and codes of Morton-ordered builds;
//! - [`input`]: the buffers a build reads ([`TriangleInput`], [`PointInput`]);
//! - [`view`]: the pinhole view camera rays and screen-space structures share ([`PinholeView`]).

pub mod aabb;
pub mod input;
pub mod morton;
pub mod ray;
pub mod view;

pub use aabb::{Aabb, Bounds};
pub use input::{PointInput, TriangleInput};
pub use morton::MortonBits;
pub use ray::{Hit, MISS, Query, Ray, RayWork};
pub use view::PinholeView;
