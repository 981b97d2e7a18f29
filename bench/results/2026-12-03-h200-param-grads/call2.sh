#!/usr/bin/env bash
# Device call 2: the grid (gpu_bench's default shapes, small to large, f32 and bf16) with pin
# 0052's gpu_bench (`old`) and this tree's (`new`), alternating, two rounds; and the GradStore
# memory of 8 LayerNorms at 4096x4096 with the new one (gpu_bench --memory).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/gpu-bins && rm -rf $B && mkdir -p $B && tar -C $B --strip-components=1 -xJf .gpu/bins.tar.xz
mkdir -p /tmp/old && tar -C /tmp/old -xJf .gpu/var/old_bins.tar.xz
W=$OUT/ab && mkdir -p "$W"
for r in 1 2; do
  for v in old new; do
    bin=$B/bench-bin-gpu_bench; [ $v = old ] && bin=/tmp/old/gpu_bench
    timeout 120 $bin --device cuda --csv "$W/grid-$v-$r.csv" > "$W/grid-$v-$r.log" 2>&1
    echo "grid $v $r rc=$?" | tee -a "$OUT/status.txt"
  done
done
for v in old new; do
  bin=$B/bench-bin-gpu_bench; [ $v = old ] && bin=/tmp/old/gpu_bench
  timeout 120 $bin --device cuda --memory 4096x4096x8 --csv "$W/memory-$v.csv" > "$W/memory-$v.log" 2>&1
  echo "memory $v rc=$?" | tee -a "$OUT/status.txt"
done
tail -5 "$W"/memory-*.log
tar -C "$W" -czf "$OUT/call2.tgz" . && rm -rf "$W"
