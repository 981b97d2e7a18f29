#!/usr/bin/env bash
# Device call E of 2026-12-07's third session (issue 14): the parameter reduce with its two
# partial rows summed in one loop, 8 loads deep each (h_red = this tree + h_red.diff; the sums
# keep their order, so dw and db are bit for bit the same). Call B put the separate reduce at
# 7-10% of the bf16 backward at 32 MiB. The harness bench lines (their `reduce` column, and
# backward + reduce) with h_ship and h_red, alternating, 2 rounds; then h_red's harness tests.
#   carry: .gpu/var/h_ship.o.xz .gpu/var/h_red.o.xz
set -uo pipefail
source bench/scripts/device_env.sh
call_log callE
link_harness h_ship && link_harness h_red || { pack; exit 1; }
s16=65536x256,16384x1024,8192x2048,6711x2500,4096x4096,2048x8192,1678x10000,1366x12288,1024x16384,512x32768
s32=32768x256,8192x1024,4096x2048,2048x4096,1024x8192,839x10000,512x16384,256x32768
for round in 1 2; do
  for h in h_ship h_red; do
    [ $round = 2 ] && h=$([ $h = h_ship ] && echo h_red || echo h_ship)
    timeout 60 /tmp/$h --bench-only --dtypes bf16 --shapes $s16 > $L/bench-$h-bf16-$round.txt 2>&1
    timeout 60 /tmp/$h --bench-only --dtypes f32 --shapes $s32 > $L/bench-$h-f32-$round.txt 2>&1
    echo "bench $h round $round at ${SECONDS}s" >> "$st"
  done
  pack
done
timeout 120 /tmp/h_red --no-bench > $L/tests-h_red.txt 2>&1
echo "harness tests h_red rc=$?: $(tail -1 $L/tests-h_red.txt) at ${SECONDS}s" >> "$st"
pack
cat "$st"
