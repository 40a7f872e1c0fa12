//! CPU references: the oracle for every GPU kernel's tests and the baseline for benchmarks.

pub mod prims;
pub mod rng;
