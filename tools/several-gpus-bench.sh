#!/usr/bin/env bash
# Several GPUs of one host: the 1M default scene at 1920x1080, 2 bounces, as 8-bit PNG (3,840
# frames) and as half-float OpenEXR with depth, normal and albedo (960 frames): on one GPU, on
# all N GPUs in one process (--devices all), and as N processes (--shard I/N), two rounds.
# Prints per run canopy's own summary line (frames/s from the first frame to the last file) and
# the whole process's (or all N processes') wall time, start-up included.
#
#   tools/several-gpus-bench.sh CANOPY [OUT]   (CANOPY: the release binary; OUT: a scratch folder)
#
# On the device tool's machines the Vulkan loader is unpacked first (see tools/gpu-bench.sh).
set -uo pipefail
B=${1:?usage: tools/several-gpus-bench.sh CANOPY [OUT]}
O=${2:-/tmp/canopy-several-gpus}
N=$("$B" info 2>/dev/null | sed -n '2,/^$/p' | grep -cE '^  [0-9]+: ')
echo "$("$B" info 2>/dev/null | sed -n 1,$((N + 1))p)"; echo "$(nproc) CPU cores"
scene=(--validation off render --triangles 1000000 --size 1920x1080 --bounces 2 -q --overwrite)
$B "${scene[@]}" --devices all --frames 0..200 --no-write > /dev/null 2>&1
png=(--frames 0..3840 --format png)
exr=(--frames 0..960 --format exr --half --aovs depth,normal,albedo)
now() { date +%s.%N; }
one() { # LABEL FRAMES ARGS...
  local label=$1 n=$2; shift 2; rm -rf $O; mkdir -p $O
  local s=$(now); $B "${scene[@]}" --out $O "$@" > $O.log 2>&1; local rc=$?; local e=$(now)
  echo "$label | rc $rc | $(grep -E '^[0-9]+ frames? in' $O.log | tail -1) | process $(awk -v a=$s -v b=$e 'BEGIN{printf "%.2f s, %.1f frames/s", b-a, '$n'/(b-a)}') | $(ls $O | wc -l) files"
}
shards() { # LABEL FRAMES ARGS...
  local label=$1 n=$2; shift 2; rm -rf $O; mkdir -p $O
  local s=$(now)
  for i in $(seq 0 $((N - 1))); do $B --device $i "${scene[@]}" --out $O --shard $i/$N "$@" > $O.$i.log 2>&1 & done
  wait; local e=$(now)
  echo "$label | $(grep -hE '^[0-9]+ frames? in' $O.[0-9]*.log | tr '\n' ';') | all $N $(awk -v a=$s -v b=$e 'BEGIN{printf "%.2f s, %.1f frames/s", b-a, '$n'/(b-a)}') | $(ls $O | wc -l) files"
}
for round in 1 2; do
  one "png, 1 GPU" 3840 --device 0 "${png[@]}"
  one "png, --devices all" 3840 --devices all "${png[@]}"
  shards "png, $N x --shard I/$N" 3840 "${png[@]}"
  one "exr, 1 GPU" 960 --device 0 "${exr[@]}"
  one "exr, --devices all" 960 --devices all "${exr[@]}"
  shards "exr, $N x --shard I/$N" 960 "${exr[@]}"
done
rm -rf $O
