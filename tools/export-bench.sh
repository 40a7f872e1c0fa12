#!/usr/bin/env bash
# The output benchmark: the default scene (1M triangles, 1920x1080, 2 bounces) rendered to each
# output canopy writes, each beside the `--no-write` rate of the same run, with the frames/s
# the run printed, the GPU time per frame and the peak resident memory. BENCHMARKS.md's
# "Frames to disk" table is made from its log.
#
#   tools/export-bench.sh BINARY [OUT_FOLDER] [ROUNDS]
#
# BINARY is a release `canopy`; OUT_FOLDER (default /tmp/canopy-export-bench) receives the
# frames, and is emptied before and after each configuration. Every configuration runs ROUNDS
# times (default 2), interleaved, so that the spread is seen. DEVICES (e.g. `0,1`) renders on
# those devices (`--devices`), and FRAMES_TIMES multiplies every configuration's frame count
# (default 1), so that runs on several GPUs last long enough to measure. ONLY (a regular
# expression such as `no-write|png8`) keeps the configurations whose whole name it matches.
set -uo pipefail
canopy=${1:?usage: tools/export-bench.sh BINARY [OUT_FOLDER] [ROUNDS]}
out=${2:-/tmp/canopy-export-bench}
rounds=${3:-2}
scene=(--triangles 1000000 --size 1920x1080 --bounces 2 --validation off)
[ -n "${DEVICES:-}" ] && scene+=(--devices "$DEVICES")
frames_times=${FRAMES_TIMES:-1}

# name, frames, then the output's arguments.
configs=(
    "no-write|0..240|--no-write"
    "png8|0..240|--format png"
    "png16|0..120|--format png --depth 16"
    "exr-f32-rgba|0..60|--format exr"
    "exr-half-dna|0..60|--format exr --half --aovs depth,normal,albedo"
    "exr-f32-all|0..60|--format exr --aovs depth,normal,albedo,position,object_id"
)
# With EXTRA=1, the size/speed trade of each compression setting too (binaries that have the
# options).
[ "${EXTRA:-0}" = 1 ] && configs+=(
    "png8-default|0..240|--format png --png-compression default"
    "png8-best|0..120|--format png --png-compression best"
    "exr-half-dna-none|0..60|--format exr --half --aovs depth,normal,albedo --exr-compression none"
    "exr-half-dna-zip|0..60|--format exr --half --aovs depth,normal,albedo --exr-compression zip"
    "exr-half-dna-piz|0..60|--format exr --half --aovs depth,normal,albedo --exr-compression piz"
)

# Runs `canopy render` with the arguments and prints one line: the name, the summary line
# canopy printed, the whole process's wall time (start-up and the last writes included), the
# peak resident memory (kB) and the bytes written.
run() {
    local name=$1 frames=$2
    shift 2
    rm -rf "$out" && mkdir -p "$out"
    local log=/tmp/export-bench-$name.log
    local target=(--out "$out" --overwrite)
    [ "$name" = no-write ] && target=()
    local start
    start=$(date +%s.%N)
    "$canopy" render "${scene[@]}" --frames "$frames" "${target[@]}" "$@" >"$log" 2>&1 &
    local pid=$! peak=0
    while kill -0 $pid 2>/dev/null; do
        local hwm
        hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status 2>/dev/null)
        [ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
        sleep 0.2
    done
    wait $pid
    local rc=$?
    local wall
    wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
    local bytes
    bytes=$(du -sb "$out" | cut -f1)
    echo "$name | rc $rc | $(grep -E '^[0-9]+ frames? in' "$log" | tail -1) | process ${wall} s | peak RSS ${peak} kB | ${bytes} bytes written"
    [ $rc -eq 0 ] || tail -5 "$log"
    rm -rf "$out"
}

echo "canopy export benchmark: $("$canopy" --version 2>&1), $(nproc) cores, devices ${DEVICES:-default}, $(date -u +%FT%TZ)"
for round in $(seq "$rounds"); do
    for config in "${configs[@]}"; do
        IFS='|' read -r name frames args <<<"$config"
        [[ -n ${ONLY:-} && ! $name =~ ^(${ONLY})$ ]] && continue
        frames="0..$((${frames#0..} * frames_times))"
        # shellcheck disable=SC2086
        run "$name" "$frames" $args
    done
done
