#!/usr/bin/env bash
# Device call 1 (2026-12-06, sixth session): the backward of narrow rows staged through shared
# memory by tiles of consecutive rows (bench/kernel-harness/ln_tile.cuh, driver tile_exp.cu,
# object .gpu/var/tile_exp.o.xz compiled here with
# `nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I candle-patch/candle-kernels/src -c`):
#   1. every method (the host's narrow tier, the tile variants) against a double reference;
#   2. the bench: each method and a device copy of the same bytes, f32 / bf16 / f16, 64-1024
#      columns, two rounds;
#   3. compute-sanitizer memcheck and racecheck on the tests of two widths.
# Everything is packed into $OUT/call1.tgz beside status.txt (a call returns at most 8 files).
set -uo pipefail
source bench/scripts/device_env.sh
st="$OUT/status.txt"
L=/tmp/call1 && rm -rf $L && mkdir -p $L
link_harness tile_exp || exit 1
timeout 150 /tmp/tile_exp --no-bench > $L/tests.txt 2>&1
echo "tile_exp tests rc=$? at ${SECONDS}s: $(grep '^tests:' $L/tests.txt)" >> "$st"
grep FAIL $L/tests.txt | head -5 >> "$st"
for round in 1 2; do
  timeout 120 /tmp/tile_exp --no-test > $L/bench-$round.txt 2>&1
  echo "bench round $round rc=$? at ${SECONDS}s" >> "$st"
done
for tool in memcheck racecheck; do
  [ $SECONDS -lt 450 ] || break
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/tile_exp --dtypes bf16 --test-cols 97,1001 --no-bench > $L/sanitizer-$tool.txt 2>&1
  echo "compute-sanitizer $tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/sanitizer-$tool.txt | head -1) at ${SECONDS}s" >> "$st"
done
cp "$OUT/device.txt" $L/
tar -C /tmp -czf "$OUT/call1.tgz" call1
cat "$st"
