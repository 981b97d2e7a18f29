#!/usr/bin/env bash
# Device call 3 (2026-12-04): the spans without the extra registers in the other instances
# (h_v3.o: l32v2 `words` back to 96 registers from 112, call 2 lost a block per SM there) and a
# variant that takes spans in the `s` tiers only (h_v3b.o: call 2's l128v1 was 5% slower at
# 1001 columns): v3's tests, then pin 0053 (h_base.o), v3 and v3b benched alternating, two rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
for v in h_base h_v3 h_v3b; do
  xz -dc .gpu/var/$v.o.xz > /tmp/$v.o && nvcc -arch=sm_90 /tmp/$v.o -o /tmp/$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
timeout 200 /tmp/h_v3 --no-bench > "$OUT/tests-v3.txt" 2>&1
echo "tests v3 rc=$?" | tee -a "$OUT/status.txt"
tail -2 "$OUT/tests-v3.txt"
SHAPES=16762x1001,8385x2001,6711x2501,5591x3001,4194x4001,2796x6001,2158x7777,1678x9999,1119x15001,5591x3002,2795x6003,172961x97,83468x201,50383x333,5593x3000,16384x1024
for round in 1 2; do
  for v in h_base h_v3 h_v3b; do
    timeout 150 /tmp/$v --bench-only --shapes $SHAPES > "$OUT/bench-$v-$round.txt" 2>&1
    echo "bench $v round $round rc=$?" >> "$OUT/status.txt"
  done
done
cat "$OUT/status.txt"
