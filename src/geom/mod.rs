//! The ground floor of canopy's vocabulary, just above [`crate::vk`]: what every structure,
//! the tracer and the renderer share, on the CPU and (byte for byte) on the GPU.
//!
//! - [`ray`]: [`Ray`], [`Hit`], [`Query`], [`RayWork`], the watertight ray/triangle test, the
//!   slab test and brute-force queries (the reference of every traversal);
//! - [`aabb`]: boxes, as the GPU stores them and as the CPU references compute with;
//! - [`morton`]: the Morton frame and codes of Morton-ordered builds;
//! - [`input`]: the buffers a build reads ([`TriangleInput`], [`PointInput`]);
//! - [`view`]: the pinhole view camera rays and screen-space structures share ([`PinholeView`]).
//!
//! # Degenerate triangles
//!
//! One rule for every structure: a triangle of zero area (two or three corners on one point,
//! or all three on one line) is never hit, as [`ray::intersect_triangle`] (and its GLSL twin)
//! returns no hit when the determinant is 0; every GPU builder keeps it with its flat box (the
//! screen grid: its projected corners), and so does every CPU reference and checker. None
//! culls by area or normal, which would hang on whether a device fuses the cross product's
//! multiply and subtract (a fused `cross(d, d)` is a product's rounding error, not 0).

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
