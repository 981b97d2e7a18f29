#!/usr/bin/env bash
# Device call 5: the words instances with one block per SM fewer than their tier (min blocks per
# SM - 1, at least 1: `-DLNX_WMINB`, `minb-batched.diff`), so that the registers they need fit
# (ptxas: no spills in l128v3s, l256v2s, l512v2s, l320v4s). `M` = pin 0050's code, `MB` =
# call 1's batched variant B, each with the lower min blocks; `old` = pin 0050. Correctness
# of each (--no-bench), then the benches alternating, two rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
vars="old M MB"
for v in $vars; do nvcc -arch=sm_90 .gpu/var/lnh_$v.o -o /tmp/lnh_$v || echo "link $v failed"; done
for v in M MB; do
  { timeout 150 /tmp/lnh_$v --no-bench; } > "$OUT/harness-$v.log" 2>&1
  echo "harness $v rc=$? $(grep -E '^tests:' "$OUT/harness-$v.log")" | tee -a "$OUT/status.txt"
done
shapes=16762x1001,8385x2001,6711x2501,5591x3001,4194x4001,2796x6001,2158x7777,1678x9999,1119x15001
for r in 1 2; do
  for v in $vars; do
    /tmp/lnh_$v --bench-only --shapes $shapes > "$OUT/bench-$v-$r.txt" 2>&1
  done
done
cd "$OUT" && xz -T0 harness-*.log
