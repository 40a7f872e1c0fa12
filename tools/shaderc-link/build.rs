//! Debian's `libshaderc_combined.a` omits the glslang and SPIRV-Tools libraries, and its
//! `libshaderc.so` has unresolved glslang symbols. Linking the packaged static libraries
//! explicitly (after shaderc's own) makes the `shaderc` crate link with `prefer-static-linking`.
//! `SHADERC_LIB_DIR` (set in `.cargo/config.toml`) selects the folder; nothing is emitted when
//! the folder lacks the libraries (e.g. when shaderc is built from source instead).

use std::path::Path;

const STATIC_LIBS: &[&str] = &[
    "glslang",
    "MachineIndependent",
    "OSDependent",
    "GenericCodeGen",
    "OGLCompiler",
    "SPIRV",
    "SPIRV-Tools-opt",
    "SPIRV-Tools",
];

fn main() {
    println!("cargo:rerun-if-env-changed=SHADERC_LIB_DIR");
    let Ok(dir) = std::env::var("SHADERC_LIB_DIR") else {
        return;
    };
    println!("cargo:rustc-link-search=native={dir}");
    for lib in STATIC_LIBS {
        if Path::new(&dir).join(format!("lib{lib}.a")).exists() {
            println!("cargo:rustc-link-lib=static={lib}");
        }
    }
    println!("cargo:rustc-link-lib=dylib=stdc++");
}
