#!/usr/bin/env bash
# Device call: the fine sweep of the layer-norm ops, pins 0001-0044 (`prev`, gpu_bench of the
# last pack) and 0001-0045 (`new`) alternating, two rounds each, then PyTorch's kernels beside
# new's second round (sweep.csv, sweep-torch.txt, sweep.png).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/ab && mkdir -p $B "$OUT/ab"
xz -dc .gpu/prev/gpu_bench.xz > $B/prev && tar -xJOf .gpu/bins.tar.xz bins/bench-bin-gpu_bench > $B/new
chmod +x $B/prev $B/new
for r in 1 2; do
  for v in prev new; do
    timeout 280 $B/$v --device cuda --sweep --dtypes f32,bf16,f16 --csv "$OUT/ab/sw_$v-$r.csv" > "$OUT/ab/sw_$v-$r.txt" 2>&1
    echo "sweep $v-$r rc=$?" | tee -a "$OUT/ab/status.txt"
  done
done
timeout 280 python3 bench/scripts/sweep_torch.py --candle-csv "$OUT/ab/sw_new-2.csv" --csv "$OUT/sweep.csv" --plot "$OUT/sweep.png" > "$OUT/sweep-torch.txt" 2>&1
echo "torch rc=$?" | tee -a "$OUT/ab/status.txt"
head -8 "$OUT/sweep-torch.txt"
tar -C "$OUT" -czf "$OUT/ab.tgz" ab && rm -rf "$OUT/ab"
