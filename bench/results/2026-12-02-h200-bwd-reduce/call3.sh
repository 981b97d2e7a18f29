#!/usr/bin/env bash
# Device call 3: the reduce as committed: call 2's slices with each thread's partials loaded
# eight at a time before they are added (call 2's `#pragma unroll 8` left threads with fewer
# than eight partials in its remainder loop, one load at a time: slower at 132-264 partials).
# Kernel harness `new3` (every test, then the bench alternating with pin 0052's `old`, two
# rounds). Everything but the summary goes into one archive (a call returns only a few files).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
for v in new3 old; do
  xz -dc .gpu/var/h_$v.o.xz > /tmp/h_$v.o && nvcc -arch=sm_90 /tmp/h_$v.o -o /tmp/h_$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
W=$OUT/w && mkdir -p "$W"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$OUT/status.txt"
{ timeout 300 /tmp/h_new3 --no-bench; } > "$W/harness-new3.log" 2>&1
echo "harness new3 rc=$? $(grep -E '^tests:' "$W/harness-new3.log")" | tee -a "$OUT/status.txt"
SHAPES=172961x97,83469x201,50383x333,16384x64,4096x64,16762x1001,16384x1024,6711x2500,5593x3000,5591x3001,4096x4096,2158x7777,1119x15001,560x30001,334x50257,256x65535
for round in 1 2; do
  for v in old new3; do
    timeout 240 /tmp/h_$v --bench-only --shapes $SHAPES > "$W/bench-$v-$round.txt" 2>&1
    echo "bench $v round $round rc=$?" | tee -a "$OUT/status.txt"
  done
done
tar -C "$W" -czf "$OUT/call3.tgz" . && rm -rf "$W"
tail -25 "$OUT/status.txt"
