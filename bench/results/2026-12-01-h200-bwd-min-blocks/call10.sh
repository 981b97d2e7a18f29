#!/usr/bin/env bash
# Device call 10: the tree with the 160/320-lane rows (pin 0045 final): vendored/shim/TFT tests,
# sanitizers, the fine sweep against pin 0045's first version (`prev`, its gpu_bench) alternating,
# two rounds each, PyTorch beside new's second round, and the family (rms norm, softmax) beside
# PyTorch with its f64 numerics.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
OUT=$OUT bash bench/scripts/device_run.sh tests,sanitizer,family > "$OUT/device_run.txt" 2>&1
B=/tmp/ab && mkdir -p $B "$OUT/ab"
xz -dc .gpu/prev/gpu_bench_0045a.xz > $B/prev && tar -xJOf .gpu/bins.tar.xz bins/bench-bin-gpu_bench > $B/new
chmod +x $B/prev $B/new
for r in 1 2; do
  for v in prev new; do
    timeout 120 $B/$v --device cuda --sweep --dtypes f32,bf16,f16 --csv "$OUT/ab/sw_$v-$r.csv" > "$OUT/ab/sw_$v-$r.txt" 2>&1
    echo "sweep $v-$r rc=$?" | tee -a "$OUT/ab/status.txt"
  done
done
timeout 200 python3 bench/scripts/sweep_torch.py --candle-csv "$OUT/ab/sw_new-2.csv" --csv "$OUT/sweep.csv" --plot "$OUT/sweep.png" > "$OUT/sweep-torch.txt" 2>&1
echo "torch rc=$?" | tee -a "$OUT/ab/status.txt"
tar -C "$OUT" -czf "$OUT/ab.tgz" ab && rm -rf "$OUT/ab"
cat "$OUT/status.txt"; head -8 "$OUT/sweep-torch.txt"
