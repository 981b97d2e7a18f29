#!/usr/bin/env bash
# Device call C of 2026-12-07's third session (issue 14): the backward without an explicit
# minimum of 1 resident block. ptxas (here, sm_90) gives the backward kernels whose registry
# min_blocks is 1 8-24 registers more with `__launch_bounds__(threads, 1)` than with no minimum
# (bf16 l1v1 71 -> 56, l32v2 96 -> 80, l320v4sq 160 -> 138), as call B2 saw for the forward.
# h_mb0 = this tree + h_mb0.diff (those rows' min_blocks 0: `.minnctapersm` not emitted).
#   1. the host's choice (harness bench lines) with h_ship and h_mb0, alternating, 2 rounds,
#      bf16 and f32 rows of 64-16384 columns (32 MiB), odd 16-bit widths too;
#   2. every kernel-harness test of h_mb0.
#   carry: .gpu/var/h_ship.o.xz .gpu/var/h_mb0.o.xz
set -uo pipefail
source bench/scripts/device_env.sh
call_log callC
link_harness h_ship && link_harness h_mb0 || { pack; exit 1; }
s16=262144x64,174763x96,131072x128,87381x192,65536x256,52429x320,50383x333,43691x384,32768x512,21846x768,16761x1001,16384x1024,8192x2048,4096x4096,2048x8192,1678x10000,1366x12288,1024x16384
s32=131072x64,65536x128,32768x256,16384x512,8192x1024,4096x2048,2048x4096,1024x8192,839x10000,512x16384
for round in 1 2; do
  for h in h_ship h_mb0; do
    [ $round = 2 ] && h=$([ $h = h_ship ] && echo h_mb0 || echo h_ship)
    timeout 80 /tmp/$h --bench-only --dtypes bf16 --shapes $s16 > $L/bench-$h-bf16-$round.txt 2>&1
    timeout 60 /tmp/$h --bench-only --dtypes f32 --shapes $s32 > $L/bench-$h-f32-$round.txt 2>&1
    echo "bench $h round $round at ${SECONDS}s" >> "$st"
  done
  pack
done
timeout 150 /tmp/h_mb0 --no-bench > $L/tests-h_mb0.txt 2>&1
echo "harness tests h_mb0 rc=$?: $(tail -1 $L/tests-h_mb0.txt) at ${SECONDS}s" >> "$st"
pack
cat "$st"
