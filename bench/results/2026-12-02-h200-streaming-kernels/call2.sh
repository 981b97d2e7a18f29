#!/usr/bin/env bash
# Device call 2: the tree with the streaming kernels' aligned pieces, which now also take 16-bit
# rows without vectors from 4096 columns (pin 0047), on top of the L2-capped grid (pin 0046):
# the kernel harness (object compiled on the build machine, linked here), vendored/shim/TFT
# tests, sanitizers, the family with its f64 numerics; the family and the fine sweep (f32, bf16)
# with call 1's binaries (`prev`, pin 0046 only) and the new ones alternating, two rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT/ab"
{ nvcc -arch=sm_90 .gpu/lnh.o -o /tmp/lnh && timeout 300 /tmp/lnh --no-bench; } > "$OUT/ab/harness.log" 2>&1
echo "harness rc=$? $(grep -E '^tests:' "$OUT/ab/harness.log")" | tee -a "$OUT/ab/status.txt"
OUT=$OUT bash bench/scripts/device_run.sh tests,sanitizer,family > "$OUT/device_run.txt" 2>&1
B=/tmp/ab && mkdir -p $B
xz -dc .gpu/prev/family_bench_l2.xz > $B/fprev && tar -xJOf .gpu/bins.tar.xz bins/bench-bin-family_bench > $B/fnew
xz -dc .gpu/prev/gpu_bench_l2.xz > $B/gprev && tar -xJOf .gpu/bins.tar.xz bins/bench-bin-gpu_bench > $B/gnew
chmod +x $B/*
for r in 1 2; do
  for v in prev new; do
    timeout 150 $B/f$v --device cuda --csv "$OUT/ab/fam_$v-$r.csv" > "$OUT/ab/fam_$v-$r.txt" 2>&1
    echo "family $v-$r rc=$?" | tee -a "$OUT/ab/status.txt"
    timeout 100 $B/g$v --device cuda --sweep --dtypes f32,bf16 --csv "$OUT/ab/sw_$v-$r.csv" > "$OUT/ab/sw_$v-$r.txt" 2>&1
    echo "sweep $v-$r rc=$?" | tee -a "$OUT/ab/status.txt"
  done
done
tar -C "$OUT" -czf "$OUT/ab.tgz" ab && rm -rf "$OUT/ab"
keep="ab.tgz status.txt family.md"
cd "$OUT" && tar -czf /tmp/logs.tgz $(ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep")) && \
  ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep") | xargs rm -rf && mv /tmp/logs.tgz . && cd - > /dev/null
cat "$OUT/status.txt"; grep "softmax" "$OUT/family.md"
