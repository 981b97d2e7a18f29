#!/usr/bin/env bash
# Device call 1: the tree with the norms' parameter gradients in buffers of their own (no
# copies out of the backward's output; pin 0053). The vendored candle CUDA tests, shim and TFT
# tests, compute-sanitizer memcheck and racecheck (device_run.sh tests,sanitizer); then pin
# 0052's gpu_bench and family_bench (`old`, .gpu/var/old_bins.tar.xz) against this tree's
# (`new`), alternating, two rounds: the fine sweep (every dtype) and the family bench; then
# PyTorch's kernels beside the new sweep (sweep_torch.py: sweep.csv, sweep.png, the summary).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
OUT=$OUT bash bench/scripts/device_run.sh tests,sanitizer > "$OUT/device_run.txt" 2>&1
grep -E "rc=" "$OUT/status.txt" | grep -v "rc=0 " | sed 's/^/NONZERO /'
echo "$(grep -c 'rc=0 ' "$OUT/status.txt") steps rc=0"
mkdir -p /tmp/old && tar -C /tmp/old -xJf .gpu/var/old_bins.tar.xz
W=$OUT/ab && mkdir -p "$W"
for r in 1 2; do
  for v in old new; do
    bin=/tmp/gpu-bins/bench-bin-gpu_bench; [ $v = old ] && bin=/tmp/old/gpu_bench
    timeout 120 $bin --device cuda --sweep --dtypes f32,bf16,f16 --csv "$W/sweep-$v-$r.csv" > "$W/sweep-$v-$r.log" 2>&1
    echo "sweep $v $r rc=$?" | tee -a "$OUT/status.txt"
  done
done
for r in 1 2; do
  for v in old new; do
    bin=/tmp/gpu-bins/bench-bin-family_bench; [ $v = old ] && bin=/tmp/old/family_bench
    timeout 120 $bin --device cuda --csv "$W/family-$v-$r.csv" > "$W/family-$v-$r.log" 2>&1
    echo "family $v $r rc=$?" | tee -a "$OUT/status.txt"
  done
done
cp "$W/sweep-new-2.csv" "$OUT/sweep-candle.csv"
timeout 200 python3 bench/scripts/sweep_torch.py --candle-csv "$OUT/sweep-candle.csv" --csv "$OUT/sweep.csv" --plot "$OUT/sweep.png" > "$OUT/sweep-torch.log" 2>&1
echo "sweep-torch rc=$?" | tee -a "$OUT/status.txt"
grep -A14 "^dtype dir" "$OUT/sweep-torch.log"
keep="status.txt sweep.csv sweep.png sweep-candle.csv"
cd "$OUT" && tar -czf /tmp/all.tgz $(ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep")) && \
  ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep") | xargs rm -rf && mv /tmp/all.tgz ./logs.tgz && cd - > /dev/null
ls "$OUT"
