#!/usr/bin/env bash
# Device call (2026-12-04): pin 0054's tree (the f32 split dx kernel with a minimum of 3 resident
# blocks). The vendored candle CUDA tests, shim and TFT tests, compute-sanitizer memcheck and
# racecheck (device_run.sh tests,sanitizer); the fine sweep of the f32 ops (gpu_bench --sweep),
# two rounds, and PyTorch's kernels beside the second (sweep_torch.py).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
OUT=$OUT bash bench/scripts/device_run.sh tests,sanitizer > "$OUT/device_run.txt" 2>&1
grep -E "rc=" "$OUT/status.txt" | grep -v "rc=0 " | sed 's/^/NONZERO /'
echo "$(grep -c 'rc=0 ' "$OUT/status.txt") steps rc=0"
for r in 1 2; do
  timeout 120 /tmp/gpu-bins/bench-bin-gpu_bench --device cuda --sweep --dtypes f32 --csv "$OUT/sweep-f32-$r.csv" > "$OUT/sweep-f32-$r.log" 2>&1
  echo "sweep f32 $r rc=$?" | tee -a "$OUT/status.txt"
done
timeout 200 python3 bench/scripts/sweep_torch.py --candle-csv "$OUT/sweep-f32-2.csv" --csv "$OUT/sweep.csv" --plot "$OUT/sweep.png" > "$OUT/sweep-torch.log" 2>&1
echo "sweep-torch rc=$?" | tee -a "$OUT/status.txt"
grep -A6 "^dtype dir" "$OUT/sweep-torch.log"
keep="status.txt sweep.csv sweep.png sweep-f32-1.csv sweep-f32-2.csv"
cd "$OUT" && tar -czf /tmp/all.tgz $(ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep")) && \
  ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep") | xargs rm -rf && mv /tmp/all.tgz ./logs.tgz && cd - > /dev/null
ls "$OUT"
