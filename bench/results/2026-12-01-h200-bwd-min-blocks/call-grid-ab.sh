#!/usr/bin/env bash
# Device call: the grid (gpu_bench without --sweep), pins 0001-0044 (`prev`) and 0001-0045
# (`new`) alternating, three rounds each: is a change at the small shapes ours or the machine's?
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/ab && mkdir -p $B "$OUT/grid-ab"
xz -dc .gpu/prev/gpu_bench.xz > $B/prev && tar -xJOf .gpu/bins.tar.xz bins/bench-bin-gpu_bench > $B/new
chmod +x $B/prev $B/new
for r in 1 2 3; do
  for v in prev new; do
    timeout 120 $B/$v --device cuda --csv "$OUT/grid-ab/$v-$r.csv" > "$OUT/grid-ab/$v-$r.txt" 2>&1
    echo "grid $v-$r rc=$?" | tee -a "$OUT/grid-ab/status.txt"
  done
done
tar -C "$OUT" -czf "$OUT/grid-ab.tgz" grid-ab && rm -rf "$OUT/grid-ab"
