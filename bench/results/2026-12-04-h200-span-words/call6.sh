#!/usr/bin/env bash
# Device call 6 (2026-12-04): occupancy at the two points below PyTorch: the 16-bit tier
# `l128v3s` (2049-3072 columns) with __launch_bounds__(128, 7) instead of (128, 6): 72
# registers (12 bytes of spills) instead of 80, 7 blocks per SM instead of 6 (h_v7.o, the
# registry row changed in a copy of the tree) against the shipped harness (h_v6.o),
# alternating, two rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
for v in h_v6 h_v7; do
  xz -dc .gpu/var/$v.o.xz > /tmp/$v.o && nvcc -arch=sm_90 /tmp/$v.o -o /tmp/$v || echo "link $v failed"
done
SHAPES=6711x2501,5591x3001,5591x3002,5593x3000,6711x2500,5462x3072,4194x4001
for round in 1 2; do
  for v in h_v6 h_v7; do
    timeout 100 /tmp/$v --bench-only --shapes $SHAPES 2>&1 | grep "^bench" > "$OUT/bench-$v-$round.txt"
    echo "bench $v round $round rc=$?"
  done
done
timeout 200 /tmp/h_v7 --no-bench 2>&1 | tail -1
