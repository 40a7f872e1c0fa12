//! canopy's integration tests, one binary (linking one test binary instead of one per file is
//! most of what building the suite costs). One module per area; `common` holds the shared
//! helpers. The fuzzing harness (`tests/fuzz_loaders.rs`) stays a binary of its own: it
//! installs a counting global allocator.

mod common;

mod animation;
mod bench;
mod bench_cli;
mod bench_dispatch;
mod bih;
mod compact_segreduce;
mod conformance;
mod e57;
mod embedding;
mod examples;
mod folding;
mod framing;
mod grid;
mod hostile_input;
mod job;
mod kdtree;
mod las;
mod layers;
mod layout;
mod lbvh;
mod loaders;
mod multisplit;
mod native_blas;
mod octree;
mod pcd;
mod photons;
mod pointkd;
mod points;
mod quick;
mod radix_sort;
mod reduce_scan;
mod refit;
mod render;
mod render_output;
mod sequence;
mod shared_output;
mod subdivision;
mod textures;
mod trace_work;
mod two_level;
mod validation;
mod wide_bvh;
mod work_counts;
