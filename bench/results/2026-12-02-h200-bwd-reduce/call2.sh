#!/usr/bin/env bash
# Device call 2: the reduce as committed (slices from the partial count, at most 32 past 512
# columns: call 1 had up to 128 everywhere, slower from 1001 to 15001 columns). Kernel harness
# `new2` (every test, then the bench alternating with pin 0052's `old`, two rounds); the fine
# sweep beside PyTorch's kernels (device_run.sh sweep); the family bench with the odd-width
# softmax cases added last session (device_run.sh family).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
for v in new2 old; do
  xz -dc .gpu/var/h_$v.o.xz > /tmp/h_$v.o && nvcc -arch=sm_90 /tmp/h_$v.o -o /tmp/h_$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$OUT/status.txt"
{ timeout 300 /tmp/h_new2 --no-bench; } > "$OUT/harness-new2.log" 2>&1
echo "harness new2 rc=$? $(grep -E '^tests:' "$OUT/harness-new2.log")" | tee -a "$OUT/status.txt"
SHAPES=172961x97,83469x201,50383x333,16384x64,4096x64,16762x1001,16384x1024,6711x2500,5593x3000,5591x3001,4096x4096,2158x7777,1119x15001,560x30001,334x50257,256x65535
for round in 1 2; do
  for v in old new2; do
    timeout 240 /tmp/h_$v --bench-only --shapes $SHAPES > "$OUT/bench-$v-$round.txt" 2>&1
    echo "bench $v round $round rc=$?" | tee -a "$OUT/status.txt"
  done
done
OUT=$OUT bash bench/scripts/device_run.sh sweep > "$OUT/device_run_sweep.txt" 2>&1
grep -A12 "^dtype dir" "$OUT/sweep-torch.log" | tee -a "$OUT/status.txt"
OUT=$OUT bash bench/scripts/device_run.sh family > "$OUT/device_run_family.txt" 2>&1
cat "$OUT/family.md" >> "$OUT/status.txt"
xz -T0 "$OUT/harness-new2.log"
keep="status.txt sweep.csv sweep.png sweep-candle.csv family.md family-candle.csv family-torch.csv family-numerics.csv harness-new2.log.xz bench-old-1.txt bench-old-2.txt bench-new2-1.txt bench-new2-2.txt"
cd "$OUT" && tar -czf /tmp/logs.tgz $(ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep")) && \
  ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep") | xargs rm -rf && mv /tmp/logs.tgz . && cd - > /dev/null
tail -30 "$OUT/status.txt"
