#!/usr/bin/env bash
# Device call 2: call 1 linked no `old` object (not copied into .gpu/var); pin 0050's harness
# (`old`) against the best variant of call 1 (`B`: x and resident dy batched), alternating, three
# rounds, same shapes.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
vars="old B"
for v in $vars; do nvcc -arch=sm_90 .gpu/var/lnh_$v.o -o /tmp/lnh_$v || echo "link $v failed"; done
shapes=16762x1001,8385x2001,5591x3001,4194x4001,2796x6001,2158x7777,1678x9999,1119x15001,560x30001
for r in 1 2 3; do
  for v in $vars; do
    /tmp/lnh_$v --bench-only --shapes $shapes > "$OUT/bench-$v-$r.txt" 2>&1
  done
done
