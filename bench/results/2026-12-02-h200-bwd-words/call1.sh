#!/usr/bin/env bash
# Device call 1: the backward's `words` instances for 16-bit rows without vectors (pin 0050).
# gpu_bench's fine sweep in f16 and bf16 with pin 0047's binary (`prev`, .gpu/prev) and the new
# one alternating, two rounds; then the fine sweep of every dtype beside PyTorch's kernels
# (device_run.sh sweep: sweep.csv, sweep.png, the summary in sweep-torch.log).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT/ab"
B=/tmp/ab && mkdir -p $B
xz -dc .gpu/prev/gpu_bench_0047.xz > $B/gprev && tar -xJOf .gpu/bins.tar.xz bins/bench-bin-gpu_bench > $B/gnew
chmod +x $B/*
for r in 1 2; do
  for v in prev new; do
    timeout 100 $B/g$v --device cuda --sweep --dtypes bf16,f16 --csv "$OUT/ab/sw_$v-$r.csv" > "$OUT/ab/sw_$v-$r.txt" 2>&1
    echo "sweep $v-$r rc=$?" | tee -a "$OUT/status.txt"
  done
done
tar -C "$OUT" -czf "$OUT/ab.tgz" ab && rm -rf "$OUT/ab"
OUT=$OUT bash bench/scripts/device_run.sh sweep > "$OUT/device_run.txt" 2>&1
cat "$OUT/status.txt"; cat "$OUT/sweep-torch.log" | head -40
