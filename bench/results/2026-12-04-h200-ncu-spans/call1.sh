#!/usr/bin/env bash
# Device call (2026-12-04 afternoon): where the 16-bit odd-width backward still loses against the
# aligned width after the spans (pin 0054: bf16 5591x3001 kernel ~71 us, 5593x3000 ~53 us), and
# f32's element-by-element odd widths against its vectors: `ncu` (full set, details page, and the
# SASS source page with instruction and stall counts) on the first backward launch of each shape,
# through the shipped kernel harness (h_v6.o = pin 0054 + the bench-only grid cap switch).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
xz -dc .gpu/var/h_v6.o.xz > /tmp/h.o && nvcc -arch=sm_90 /tmp/h.o -o /tmp/h || { echo "link failed" | tee -a "$OUT/status.txt"; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
timeout 60 /tmp/h --bench-only --shapes 5591x3001,5593x3000 > "$OUT/bench.txt" 2>&1
mkdir -p /tmp/n
for s in 5591x3001 5593x3000; do
  for dt in bf16 f32; do
    timeout 150 ncu --set full -k "regex:layernorm_bwd_[a-z0-9_]*_$dt\$" -c 1 /tmp/h --bench-only --shapes $s > "/tmp/n/full-$dt-$s.txt" 2>&1
    echo "ncu full $dt $s rc=$?" >> "$OUT/status.txt"
    timeout 150 ncu --set full --page source --print-source sass --csv -k "regex:layernorm_bwd_[a-z0-9_]*_$dt\$" -c 1 /tmp/h --bench-only --shapes $s > "/tmp/n/sass-$dt-$s.csv" 2>&1
    echo "ncu sass $dt $s rc=$?" >> "$OUT/status.txt"
  done
done
cd /tmp/n && tar -czf "$OUT/ncu.tgz" . && ls -la /tmp/n
cat "$OUT/status.txt"
grep -h -E "^  layernorm_|Duration|Executed Instructions  |Achieved Occupancy|DRAM Throughput|L1/TEX Hit|Issue Slots Busy|No Eligible" /tmp/n/full-*.txt | head -60
