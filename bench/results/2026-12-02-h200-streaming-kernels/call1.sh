#!/usr/bin/env bash
# Device call 1: the tree with the L2-capped `big` grid (pin 0046): vendored/shim/TFT tests,
# sanitizers, the family beside PyTorch with its f64 numerics; the family again with pin 0045's
# family_bench (`prev`) and the new one alternating, two rounds each; the layer norm's fine sweep
# with PyTorch's kernels and a copy of the same bytes beside it.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
OUT=$OUT bash bench/scripts/device_run.sh tests,sanitizer,family > "$OUT/device_run.txt" 2>&1
B=/tmp/ab && mkdir -p $B "$OUT/ab"
xz -dc .gpu/prev/family_bench_0045.xz > $B/prev && tar -xJOf .gpu/bins.tar.xz bins/bench-bin-family_bench > $B/new
chmod +x $B/prev $B/new
for r in 1 2; do
  for v in prev new; do
    timeout 150 $B/$v --device cuda --csv "$OUT/ab/fam_$v-$r.csv" > "$OUT/ab/fam_$v-$r.txt" 2>&1
    echo "family $v-$r rc=$?" | tee -a "$OUT/ab/status.txt"
  done
done
tar -xJOf .gpu/bins.tar.xz bins/bench-bin-gpu_bench > $B/gpu_bench && chmod +x $B/gpu_bench
timeout 150 $B/gpu_bench --device cuda --sweep --dtypes f32,bf16,f16 --csv "$OUT/ab/sweep-candle.csv" > "$OUT/ab/sweep-candle.txt" 2>&1
echo "sweep rc=$?" | tee -a "$OUT/ab/status.txt"
timeout 240 python3 bench/scripts/sweep_torch.py --candle-csv "$OUT/ab/sweep-candle.csv" --csv "$OUT/sweep.csv" --plot "$OUT/sweep.png" > "$OUT/sweep-torch.txt" 2>&1
echo "torch rc=$?" | tee -a "$OUT/ab/status.txt"
tar -C "$OUT" -czf "$OUT/ab.tgz" ab && rm -rf "$OUT/ab"
# $OUT returns at most 8 files: everything but these goes into logs.tgz.
keep="ab.tgz status.txt family.md sweep-torch.txt sweep.csv sweep.png"
cd "$OUT" && tar -czf /tmp/logs.tgz $(ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep")) && \
  ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep") | xargs rm -rf && mv /tmp/logs.tgz . && cd - > /dev/null
cat "$OUT/status.txt"; grep -A12 "^dtype" "$OUT/sweep-torch.txt"; grep "softmax" "$OUT/family.md"
