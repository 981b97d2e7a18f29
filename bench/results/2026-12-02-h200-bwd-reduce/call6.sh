#!/usr/bin/env bash
# Device call 6: the reduce as committed: pin 0052's loops and serial slice sums, with the
# slices from the partial count (`oldR` of call 5's variants) and two blocks per SM
# (__launch_bounds__(1024, 2): 32 registers). Kernel harness `new5` (every test, then the
# bench alternating with pin 0052's `old`, two rounds); the fine sweep beside PyTorch's
# kernels; the vendored candle CUDA tests, shim and TFT tests, compute-sanitizer memcheck and
# racecheck. Everything but the summary goes into one archive (a call returns only a few files).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
for v in new5 old; do
  xz -dc .gpu/var/h_$v.o.xz > /tmp/h_$v.o && nvcc -arch=sm_90 /tmp/h_$v.o -o /tmp/h_$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
W=$OUT/w && mkdir -p "$W"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$OUT/status.txt"
{ timeout 120 /tmp/h_new5 --no-bench; } > "$W/harness-new5.log" 2>&1
echo "harness new5 rc=$? $(grep -E '^tests:' "$W/harness-new5.log")" | tee -a "$OUT/status.txt"
grep '^attr.*red reduce' "$W/harness-new5.log" | tee -a "$OUT/status.txt"
SHAPES=172961x97,83469x201,50383x333,16384x64,4096x64,16762x1001,16384x1024,6711x2500,5593x3000,5591x3001,4096x4096,2158x7777,1119x15001,560x30001,334x50257,256x65535
for round in 1 2; do
  for v in old new5; do
    timeout 60 /tmp/h_$v --bench-only --shapes $SHAPES > "$W/bench-$v-$round.txt" 2>&1
    echo "bench $v round $round rc=$?" | tee -a "$OUT/status.txt"
  done
done
OUT=$W/sweep timeout 120 bash bench/scripts/device_run.sh sweep > "$W/device_run_sweep.txt" 2>&1
[ -f "$W/sweep/logs.tgz" ] && tar -C "$W/sweep" -xzf "$W/sweep/logs.tgz" && rm "$W/sweep/logs.tgz"
grep -h -A20 "^dtype dir" "$W"/sweep/sweep-torch.log | tee -a "$OUT/status.txt"
OUT=$W/tests timeout 380 bash bench/scripts/device_run.sh tests,sanitizer > "$W/device_run_tests.txt" 2>&1
echo "tests,sanitizer rc=$?" | tee -a "$OUT/status.txt"
cat "$W"/tests/status.txt >> "$OUT/status.txt" 2>/dev/null
tar -C "$W" -czf "$OUT/call6.tgz" . && rm -rf "$W"
tail -40 "$OUT/status.txt"
