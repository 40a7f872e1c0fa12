#!/usr/bin/env bash
# The multi-GPU measurement: the 1M-triangle default scene at 1920x1080 with 2 bounces, 240
# frames written as PNG and as EXR (and not written, for the GPU alone), on one GPU, on every
# GPU of the machine in one process (--devices), and as one process per GPU (--shard I/N).
# Prints, per run, the wall time and frames per second, and the scaling against one GPU.
#
#   tools/multi-gpu-bench.sh [CANOPY] [OUT]   (CANOPY: the release binary; OUT: a scratch folder)
#
# On the device tool's machines the Vulkan loader is unpacked first (see tools/gpu-bench.sh).
set -uo pipefail
B=${1:-target/release/canopy}
OUT=${2:-/tmp/canopy-multi-gpu}
FRAMES=${FRAMES:-0..240}
SCENE=(--triangles 1000000 --size 1920x1080 --bounces 2 --frames "$FRAMES" -q)
# The device list `canopy info` starts with: "  0: NAME  [TYPE]" lines up to the blank one.
gpus=$("$B" info 2>/dev/null | sed -n '2,/^$/p' | grep -cE '^  [0-9]+: ')
[ "$gpus" -ge 1 ] || { echo "no Vulkan device"; exit 1; }
all=$(seq -s, 0 $((gpus - 1)))
echo "$("$B" info 2>/dev/null | sed -n 1,$((gpus + 1))p)"
echo "$(nproc) CPU cores; frames $FRAMES"

seconds() { date +%s.%N; }
# run LABEL ARGS...: one render, its wall time and frames per second.
run() {
    local label=$1; shift
    rm -rf "$OUT"; mkdir -p "$OUT"
    local start end
    start=$(seconds)
    "$B" render "${SCENE[@]}" "$@" > "$OUT.log" 2>&1 || { echo "$label: failed"; tail -3 "$OUT.log"; return; }
    end=$(seconds)
    report "$label" "$start" "$end" "$OUT.log"
}
# report LABEL START END LOGS...: wall time, frames per second over every log's frames, and
# the mean GPU time per frame each process printed.
report() {
    local label=$1 start=$2 end=$3; shift 3
    local frames gpu
    frames=$(cat "$@" | grep -oE '^[0-9]+ frames? in' | awk '{n += $1} END {print n + 0}')
    gpu=$(cat "$@" | grep -oE 'GPU [0-9.]+ ms per frame' | sed 's/ per frame//' | paste -sd, -)
    awk -v label="$label" -v n="$frames" -v s="$start" -v e="$end" -v gpu="$gpu" 'BEGIN {
        printf "%-44s %4d frames %7.2f s %8.1f frames/s  (%s per frame)\n", label, n, e - s, n / (e - s), gpu
    }'
}
# shards LABEL FORMAT-ARGS...: one process per GPU, --shard I/N, at once.
shards() {
    local label=$1; shift
    rm -rf "$OUT"; mkdir -p "$OUT"
    local start end
    start=$(seconds)
    for i in $(seq 0 $((gpus - 1))); do
        "$B" --device "$i" render "${SCENE[@]}" --shard "$i/$gpus" "$@" > "$OUT.$i.log" 2>&1 &
    done
    wait
    end=$(seconds)
    report "$label" "$start" "$end" "$OUT".*.log
}

for format in "--no-write" "--out $OUT" "--out $OUT/shot_####.exr"; do
    echo "== ${format/$OUT/OUT}"
    # shellcheck disable=SC2086
    run "1 GPU" --device 0 $format
    # shellcheck disable=SC2086
    run "$gpus GPUs, one process (--devices $all)" --devices "$all" $format
    if [ "$format" != "--no-write" ]; then
        # shellcheck disable=SC2086
        shards "$gpus GPUs, one process each (--shard I/$gpus)" $format
    fi
done
