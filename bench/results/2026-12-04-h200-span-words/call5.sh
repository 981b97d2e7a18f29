#!/usr/bin/env bash
# Device call 5 (2026-12-04): what the backward's parameter partials cost at the widths of the
# two points below PyTorch: the shipped harness (h_v6.o, pin 0054 plus the bench-only switch
# LN_BWD_BLOCKS_PER_SM) with the grid capped at 6 (the default at 3001), 5, 4 and 3 blocks per
# SM, alternating, two rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
xz -dc .gpu/var/h_v6.o.xz > /tmp/h_v6.o && nvcc -arch=sm_90 /tmp/h_v6.o -o /tmp/h_v6 || echo "link failed" | tee -a "$OUT/status.txt"
SHAPES=6711x2501,5591x3001,5591x3002,4194x4001,2796x6001,5593x3000,4096x4096
for round in 1 2; do
  for n in 8 5 4 3; do
    LN_BWD_BLOCKS_PER_SM=$n timeout 100 /tmp/h_v6 --bench-only --shapes $SHAPES 2>&1 | grep "^bench" > "$OUT/bench-cap$n-$round.txt"
    echo "bench cap $n round $round rc=$?" >> "$OUT/status.txt"
  done
done
cat "$OUT/status.txt"
