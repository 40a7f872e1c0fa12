//! Carries the link lines that the `shaderc` crate's static build needs on Debian/Ubuntu.
//!
//! A build script cannot add link flags to itself, so canopy's `build.rs` depends on this
//! crate, whose own build script emits them. See `build.rs` in this crate for the details.
