#!/usr/bin/env bash
# The GPU measurement run: every structure's figures against its targets and the test suite
# under the Khronos validation layer, on a machine with a GPU and no Rust (the device tool's
# NVIDIA H100/H200 machines).
#
#   tools/gpu-bench.sh pack        here: builds the release binaries and packs what the run
#                                  needs into .gpu-bench/ (git-ignored, well under 64 MiB)
#   tools/gpu-bench.sh run [PART]  there, from the checkout's root with .gpu-bench and .gl
#                                  carried: writes bench.log, tests.log and results.tar.gz
#                                  (one JSON per benchmark and meta.json) under $OUT; PART
#                                  bench or tests runs only that half (two calls where one
#                                  would pass the device's 10 minutes)
#   canopy bench report DIR        here: the BENCHMARKS.md rows from the unpacked results
#
# .gl/ holds Debian's libvulkan1 and vulkan-validationlayers packages (see the device tool's
# README for how to download them once); the run unpacks them, since the machine has the
# NVIDIA driver but neither the loader nor the layer.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PACK=.gpu-bench

pack() {
    set -e
    ls .gl/libvulkan1_*.deb .gl/vulkan-validationlayers_*.deb >/dev/null
    cargo build --release --bins --examples
    cargo test --release --no-run 2>/dev/null
    rm -rf "$PACK" /tmp/gpu-bench-pack && mkdir -p "$PACK" /tmp/gpu-bench-pack/bin /tmp/gpu-bench-pack/examples
    # The integration tests (tests/it, one binary) and the binaries of their own (tests/*.rs).
    for name in it $(basename -s .rs tests/*.rs); do
        binary=$(ls -t target/release/deps/"$name"-* 2>/dev/null | grep -v '\.d$' | head -1)
        [ -n "$binary" ] && strip -o /tmp/gpu-bench-pack/bin/"$name" "$binary"
    done
    strip -o /tmp/gpu-bench-pack/canopy target/release/canopy
    # The CPU library beside the KNN (a crate of its own, outside the workspace).
    cargo build --release --manifest-path tools/knn-cpu/Cargo.toml
    strip -o /tmp/gpu-bench-pack/knn-cpu tools/knn-cpu/target/release/canopy-knn-cpu
    for example in examples/*.rs; do
        name=$(basename "$example" .rs)
        strip -o /tmp/gpu-bench-pack/examples/"$name" target/release/examples/"$name"
    done
    mkdir -p /tmp/gpu-bench-pack/data
    for mesh in armadillo_100k.obj beast.obj; do
        [ -f ../shared/data/meshes/$mesh ] && cp ../shared/data/meshes/$mesh /tmp/gpu-bench-pack/data/
    done
    cp ../shared/data/gltf/BrainStem.glb /tmp/gpu-bench-pack/data/
    cp -r ../shared/data/sequences/vellum-cloth /tmp/gpu-bench-pack/data/
    tar -C /tmp/gpu-bench-pack -cJf "$PACK"/bins.tar.xz .
    git rev-parse --short HEAD > "$PACK"/commit
    du -sh "$PACK" .gl
}

run() {
    local part=${1:-all}
    local out=${OUT:-/tmp/gpu-bench-out}
    mkdir -p "$out" /tmp/gpu-bench/json
    for deb in .gl/*.deb; do dpkg -x "$deb" / >/dev/null; done
    ldconfig
    tar -C /tmp/gpu-bench -xJf "$PACK"/bins.tar.xz
    local icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    [ -f $icd ] && export VK_DRIVER_FILES=$icd
    export VK_LAYER_PATH=/usr/share/vulkan/explicit_layer.d
    # The tests find the binary and the examples where cargo puts them.
    mkdir -p target/release/examples
    cp /tmp/gpu-bench/canopy target/release/canopy
    cp /tmp/gpu-bench/examples/* target/release/examples/
    local B=/tmp/gpu-bench/canopy J=/tmp/gpu-bench/json D=/tmp/gpu-bench/data
    [ "$part" = tests ] || {
        $B info 2>&1 | sed -n 1,4p
        # A throwaway run first: a freshly started GPU measures slow for its first seconds
        # (docs/lab/2026-11-27-bench-clock-warm-up.md).
        timeout 120 $B --validation off bench render --triangles 1000000 --repeats 60 >/dev/null 2>&1
        # Each structure in its own process: builds timed beside others' CPU work were noisy.
        bench() { local name=$1; shift; echo "== $name: canopy $*"; timeout 300 $B "$@" --json $J/$name.json 2>&1; echo "rc $?"; }
        local R="--repeats 15 --rays 1024 --reference-up-to 0"
        bench lbvh bench lbvh --structure lbvh --triangles 1000000,10000000 $R
        bench render bench render --structure lbvh --triangles 1000000 --size 1920x1080 --bounces 2 --native
        bench lbvh-hq bench lbvh --structure lbvh --bvh-quality high --triangles 1000000,10000000 $R --no-native
        bench render-hq bench render --structure lbvh --bvh-quality high --triangles 1000000 --size 1920x1080 --bounces 2
        # SAH cost against the CPU's full sweep at 1M (device-independent; the sweep takes seconds).
        bench sah-fast bench lbvh --structure lbvh --triangles 1000000 --repeats 1 --rays 0 --reference-up-to 1100000 --no-native
        bench sah-high bench lbvh --structure lbvh --bvh-quality high --triangles 1000000 --repeats 1 --rays 0 --reference-up-to 1100000 --no-native
        bench kdtree bench kdtree --structure kdtree --triangles 170000,1000000,5000000 $R --no-native
        bench bih bench lbvh --structure bih --triangles 79000,175000,1000000 $R --no-native
        bench grid bench lbvh --structure grid --triangles 870000 $R --no-native
        bench grid-lbvh bench lbvh --structure lbvh --triangles 870000 $R --no-native
        bench meshes bench lbvh --structure lbvh,bih,grid --mesh $D/armadillo_100k.obj --mesh $D/beast.obj $R --no-native
        bench meshes-hq bench lbvh --structure lbvh --bvh-quality high --mesh $D/armadillo_100k.obj --mesh $D/beast.obj $R --no-native
        bench knn bench knn --points 10000,100000,1000000 --repeats 5 --sampled 16
        bench knn-10m bench knn --points 10000000 --k 16,50 --distribution uniform --repeats 3 --sampled 8
        # 100M points sampled on a sphere: the peak device memory of normals and orientation.
        bench knn-100m bench knn --points 100000000 --k 16 --distribution surface --repeats 1 --sampled 2
        echo "== kiddo on every core, the same clouds"
        timeout 300 /tmp/gpu-bench/knn-cpu --points 1000000,10000000 --k 16,50 --repeats 3 2>&1
        bench animation bench animation --rig tests/data/gltf/CesiumMan.glb --skin-vertices 100000,1000000,4000000 --control-triangles 50000,200000 --sequence $D/vellum-cloth --frames 240 --size 1920x1080
        bench brainstem bench render --mesh $D/BrainStem.glb --size 1920x1080 --bounces 2
        bench instances bench instances
        # Caustics: per-stage times of frames at the targets' sizes (no JSON: the profile).
        for size in "1920x1080" "800x600 --photons 200000" "800x600 --photons 400000 --photon-k 40" "1920x1080 --photons 1000000"; do
            echo "== caustics $size"
            timeout 120 $B render --caustics --size $size --triangles 1000000 --frames 0..20 --profile --no-write 2>&1 | tail -40
        done
    } > "$out"/bench.log 2>&1
    [ "$part" = bench ] || {
        # One line per binary, and per module (tests/it/NAME.rs) of the integration tests'.
        one() {
            local label=$1 start=$(date +%s) log rc
            shift
            log=$(timeout 200 "$@" 2>&1); rc=$?
            echo "== $label rc=$rc $(( $(date +%s) - start ))s: $(echo "$log" | grep -E '^test result' | tr '\n' ' ')"
            echo "$log" | grep -E "panicked|VUID|FAILED|Validation" | head -8
        }
        for test in /tmp/gpu-bench/bin/*; do
            if [ "$(basename "$test")" = it ]; then
                for module in $(basename -s .rs tests/it/*.rs); do
                    [ "$module" = main ] || one "it::$module" "$test" "$module::"
                done
            else
                one "$(basename "$test")" "$test"
            fi
        done
    } > "$out"/tests.log 2>&1
    local device
    device=$($B info 2>/dev/null | sed -n 's/^device 0: //p' | head -1)
    printf '{"device": "%s", "date": "%s", "commit": "%s"}\n' "$device" "$(date -u +%F)" "$(cat "$PACK"/commit)" > $J/meta.json
    tar -C $J -czf "$out"/results.tar.gz .
    grep -E "^== .* rc=" "$out"/tests.log
}

case "${1:-}" in
    pack) pack ;;
    run) run "${2:-all}" ;;
    *) echo "usage: tools/gpu-bench.sh pack|run [bench|tests]" >&2; exit 2 ;;
esac
