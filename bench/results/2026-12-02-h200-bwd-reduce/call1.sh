#!/usr/bin/env bash
# Device call 1: the parameter reduce with slices chosen from the partial count (this change,
# `new`) against pin 0052's reduce (`old`, 32 columns x 32 slices). Kernel harness objects
# compiled here (SASS-only, xz), linked on the device. `new` runs every harness test; `mut`
# (the new reduce with its last tree step left out) must fail them. Bench: both harnesses
# alternating, two rounds, f32 and bf16, the sweep's widths from 97 to 65535 columns.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
for v in new old mut; do
  xz -dc .gpu/var/h_$v.o.xz > /tmp/h_$v.o && nvcc -arch=sm_90 /tmp/h_$v.o -o /tmp/h_$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$OUT/status.txt"
{ timeout 300 /tmp/h_new --no-bench; } > "$OUT/harness-new.log" 2>&1
echo "harness new rc=$? $(grep -E '^tests:' "$OUT/harness-new.log")" | tee -a "$OUT/status.txt"
{ timeout 300 /tmp/h_mut --no-bench; } > "$OUT/harness-mut.log" 2>&1
echo "harness mut rc=$? $(grep -E '^tests:' "$OUT/harness-mut.log")" | tee -a "$OUT/status.txt"
grep '^attr.*red' "$OUT/harness-new.log" "$OUT/harness-mut.log" >> "$OUT/status.txt"
SHAPES=172961x97,83469x201,50383x333,16384x64,4096x64,16762x1001,16384x1024,6711x2500,5593x3000,5591x3001,4096x4096,2158x7777,1119x15001,560x30001,334x50257,256x65535
for round in 1 2; do
  for v in old new; do
    timeout 240 /tmp/h_$v --bench-only --shapes $SHAPES > "$OUT/bench-$v-$round.txt" 2>&1
    echo "bench $v round $round rc=$?" | tee -a "$OUT/status.txt"
  done
done
xz -T0 "$OUT/harness-new.log" "$OUT/harness-mut.log"
