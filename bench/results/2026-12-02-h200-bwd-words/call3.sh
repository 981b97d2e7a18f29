#!/usr/bin/env bash
# Device call 3: pin 0050 as committed (the pieces only in the tiers of one row per block), with
# five more odd widths in the fine sweep (201, 1001, 3001, 15001, 30001). The kernel harness
# (every case printed), the fine sweep of every dtype beside PyTorch's kernels (device_run.sh
# sweep: sweep.csv, sweep.png, the summary in sweep-torch.log), gpu_bench's sweep in f16 and
# bf16 with pin 0047's binary (`prev`) and the new one alternating, two rounds; the vendored
# candle CUDA tests, shim and TFT tests, compute-sanitizer memcheck and racecheck.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT/ab"
nvcc -arch=sm_90 .gpu/lnh.o -o /tmp/lnh
{ LN_VERBOSE=1 timeout 300 /tmp/lnh --no-bench; } > "$OUT/ab/harness.log" 2>&1
echo "harness rc=$? $(grep -E '^tests:' "$OUT/ab/harness.log"), words cases: $(grep -c -- '-words' "$OUT/ab/harness.log")" | tee -a "$OUT/status.txt"
OUT=$OUT bash bench/scripts/device_run.sh sweep > "$OUT/device_run_sweep.txt" 2>&1
B=/tmp/ab && mkdir -p $B
xz -dc .gpu/prev/gpu_bench_0047.xz > $B/gprev && tar -xJOf .gpu/bins.tar.xz bins/bench-bin-gpu_bench > $B/gnew
chmod +x $B/*
for r in 1 2; do
  for v in prev new; do
    timeout 100 $B/g$v --device cuda --sweep --dtypes bf16,f16 --csv "$OUT/ab/sw_$v-$r.csv" > "$OUT/ab/sw_$v-$r.txt" 2>&1
    echo "sweep $v-$r rc=$?" | tee -a "$OUT/status.txt"
  done
done
OUT=$OUT bash bench/scripts/device_run.sh tests,sanitizer > "$OUT/device_run.txt" 2>&1
xz -T0 "$OUT/ab/harness.log"
tar -C "$OUT" -czf "$OUT/ab.tgz" ab && rm -rf "$OUT/ab"
keep="ab.tgz status.txt sweep.csv sweep.png sweep-candle.csv"
cd "$OUT" && tar -czf /tmp/logs.tgz $(ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep")) && \
  ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep") | xargs rm -rf && mv /tmp/logs.tgz . && cd - > /dev/null
cat "$OUT/status.txt"
