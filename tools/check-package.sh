#!/usr/bin/env bash
# Checks the packages `cargo package --workspace --no-verify` wrote to target/package: each is
# unpacked outside the workspace and canopy's is compiled (`cargo check`, its build script
# compiling every shader from the packaged glsl/) against the packaged link-line crate, offline.
# A file the build needs but the package lacks fails here, as `cargo package`'s own verify
# build would fail, without a second release build. The check is in the release profile, so
# that the dependencies `cargo clippy --release` checked before (in `.ci/run`) are not checked
# again.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
version() { sed -n 's/^version = "\(.*\)"/\1/p' "$1" | head -1; }
canopy=canopy-$(version Cargo.toml)
link=shaderc-link-$(version tools/shaderc-link/Cargo.toml)

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for crate in "$canopy" "$link"; do
    tar -xzf "target/package/$crate.crate" -C "$scratch"
done
cargo check --release --offline --no-default-features --lib \
    --manifest-path "$scratch/$canopy/Cargo.toml" \
    --target-dir "$root/target" \
    --config "patch.crates-io.shaderc-link.path=\"$scratch/$link\""
echo "check-package: $canopy and $link build from their packages"
