#!/usr/bin/env bash
# Device call 1 (2026-12-04): `ncu` on the layer norm's worst points of the fine sweep (pin 0053,
# by fraction of the copy speed, 2026-12-03 call 3) and two aligned neighbours, through the
# kernel harness (the host's kernel choice, bf16 and f32). The harness object was compiled here
# (`nvcc -O3 -arch=sm_90 -c bench/kernel-harness/ln_harness.cu`) and is linked on the device.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
xz -dc .gpu/var/h.o.xz > /tmp/h.o && nvcc -arch=sm_90 /tmp/h.o -o /tmp/h || { echo "link failed" | tee -a "$OUT/status.txt"; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
SHAPES="560x30001 257x65535 1119x15001 50383x333 5591x3001 5593x3000 560x30000 171x49152"
# The host's choice and its time at each shape, without a profiler (two rounds).
for round in 1 2; do
  timeout 120 /tmp/h --bench-only --shapes "$(tr ' ' , <<< "$SHAPES")" > "$OUT/bench-$round.txt" 2>&1
  echo "bench round $round rc=$?" | tee -a "$OUT/status.txt"
done
grep '^bench' "$OUT/bench-1.txt" | cut -c1-150
SECTIONS="--section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats"
for s in $SHAPES; do
  for dt in bf16 f32; do
    # First forward launch of this dtype, then the first three backward launches (the main
    # kernel; the split backward's two kernels where it has them).
    timeout 120 ncu $SECTIONS -k "regex:layernorm_fwd.*_$dt\$" -c 1 /tmp/h --bench-only --shapes $s > "$OUT/ncu-$dt-$s-fwd.txt" 2>&1
    echo "ncu $dt $s fwd rc=$?" >> "$OUT/status.txt"
    timeout 150 ncu $SECTIONS -k "regex:layernorm_bwd_[a-z0-9_]*_$dt\$" -c 3 /tmp/h --bench-only --shapes $s > "$OUT/ncu-$dt-$s-bwd.txt" 2>&1
    echo "ncu $dt $s bwd rc=$?" >> "$OUT/status.txt"
  done
done
cat "$OUT/status.txt" | tail -40
grep -h -E "^  layernorm_|Duration|Registers Per|Achieved Occupancy|Memory Throughput|DRAM Throughput|L1/TEX Cache Throughput|L2 Cache Throughput|Compute \(SM\) Throughput" "$OUT"/ncu-bf16-5591x3001-bwd.txt | head -40
# One archive for the profiles (the device returns a limited number of files).
cd "$OUT" && tar -czf ncu.tgz ncu-*.txt && rm -f ncu-*.txt && cd - > /dev/null
ls "$OUT"
