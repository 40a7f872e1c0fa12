//! CPU references: the oracle for every GPU kernel's tests and the baseline for benchmarks.

pub mod kdtree;
pub mod lbvh;
pub mod morton;
pub mod octree;
pub mod prims;
pub mod raycast;
pub mod render;
pub mod rng;
pub mod sah_bvh;
