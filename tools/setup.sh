#!/usr/bin/env bash
# Installs the system packages canopy needs to build and to run on the CPU (Mesa lavapipe):
# the Vulkan loader, lavapipe, the Khronos validation layer, and the shaderc/glslang/SPIRV-Tools
# static libraries that build.rs links, ffmpeg (for `canopy render --video` and its tests),
# Slurm and munge (the farm test starts a one-node cluster: tools/farm/slurm-local.sh), and
# Rust through rustup when cargo is missing.
# Idempotent: what is already present is skipped.
set -euo pipefail

DEBIAN_PACKAGES=(
  libvulkan1 libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  glslc libshaderc-dev glslang-dev spirv-tools pkg-config ffmpeg slurm-wlm munge
)

if command -v apt-get >/dev/null 2>&1; then
  missing=()
  for pkg in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if [ ${#missing[@]} -eq 0 ]; then
    echo "canopy setup: all system packages already installed"
  else
    echo "canopy setup: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
else
  cat <<'MSG'
canopy setup: this system has no apt-get, so nothing was installed. Install by hand:
  - a Vulkan 1.2+ loader and headers (libvulkan / vulkan-loader, vulkan-headers)
  - a Vulkan driver; with no GPU, Mesa's lavapipe (mesa-vulkan-drivers / vulkan-swrast)
  - the Khronos validation layer (vulkan-validation-layers) to run the tests with validation
  - shaderc, glslang and SPIRV-Tools static libraries (shaderc, glslang, spirv-tools),
    then point SHADERC_LIB_DIR at the folder holding libshaderc_combined.a or libshaderc.a
  - or let the shaderc crate build it from source: add its `build-from-source` feature to
    [build-dependencies] in Cargo.toml (needs cmake and a C++ compiler; slow)
MSG
  exit 1
fi

# Rust: canopy needs a recent stable toolchain (edition 2024), newer than distributions ship,
# so it comes from rustup. Root installs also link cargo and rustc into /usr/local/bin, so that
# the command after `tools/setup.sh &&` finds them in the same shell.
if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    echo "canopy setup: Rust is in ~/.cargo/bin; add it to PATH (. ~/.cargo/env)" >&2
  else
    echo "canopy setup: installing Rust (rustup, minimal profile)"
    command -v curl >/dev/null 2>&1 || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq curl ca-certificates; }
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c rustfmt,clippy
  fi
  if [ "$(id -u)" -eq 0 ]; then
    for tool in cargo rustc rustup; do
      ln -sf "$HOME/.cargo/bin/$tool" "/usr/local/bin/$tool"
    done
  elif ! command -v cargo >/dev/null 2>&1; then
    echo "canopy setup: open a new shell (or run . ~/.cargo/env) so that cargo is on PATH" >&2
    exit 1
  fi
fi
