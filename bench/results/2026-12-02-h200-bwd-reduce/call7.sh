#!/usr/bin/env bash
# Device call 7: the slice count as a template parameter (`compile-time-slices.diff`: one
# kernel, a switch over 4-128 slices, each case pin 0052's loops and serial sum with constants;
# the host's slice choice of call 6; two blocks per SM). Harness only (the session's device
# time was nearly spent): every test, then the bench alternating with pin 0052's `old`.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
for v in cts old; do
  xz -dc .gpu/var/h_$v.o.xz > /tmp/h_$v.o && nvcc -arch=sm_90 /tmp/h_$v.o -o /tmp/h_$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
W=$OUT/w && mkdir -p "$W"
{ timeout 90 /tmp/h_cts --no-bench; } > "$W/harness-cts.log" 2>&1
echo "harness cts rc=$? $(grep -E '^tests:' "$W/harness-cts.log")" | tee -a "$OUT/status.txt"
grep '^attr.*red reduce' "$W/harness-cts.log" | tee -a "$OUT/status.txt"
SHAPES=172961x97,16384x64,4096x64,16762x1001,16384x1024,6711x2500,5591x3001,4096x4096,2158x7777,1119x15001,560x30001,256x65535
for round in 1 2; do
  for v in old cts; do
    timeout 40 /tmp/h_$v --bench-only --shapes $SHAPES > "$W/bench-$v-$round.txt" 2>&1
    echo "bench $v round $round rc=$?" | tee -a "$OUT/status.txt"
  done
done
tar -C "$W" -czf "$OUT/call7.tgz" . && rm -rf "$W"
