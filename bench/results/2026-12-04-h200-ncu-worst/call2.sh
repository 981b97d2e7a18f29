#!/usr/bin/env bash
# Device call 2 (2026-12-04): the split backward's two kernels with a minimum of resident blocks
# (`__launch_bounds__(256, 4)` for the statistics kernel, `(256, 3)` for dx: registers capped so
# that 4 and 3 blocks of 256 threads fit an SM, against 3 and 2 now). Two harness objects compiled
# here: pin 0053's (`h.o`) and the one with the bounds (`h_mb.o`, split-min-blocks.diff). The
# variant's tests, then both on the split backward's shapes, alternating, two rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
for v in h h_mb; do
  xz -dc .gpu/var/$v.o.xz > /tmp/$v.o && nvcc -arch=sm_90 /tmp/$v.o -o /tmp/$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
grep -E "split-(st|dx)" <(/tmp/h --bench-only --shapes 1x1 2>&1) | sed 's/^/base /' | tee -a "$OUT/status.txt"
timeout 200 /tmp/h_mb --no-bench > "$OUT/tests-mb.txt" 2>&1
echo "h_mb tests rc=$? $(grep -E '^tests:' "$OUT/tests-mb.txt")" | tee -a "$OUT/status.txt"
grep -E "split-(st|dx)" "$OUT/tests-mb.txt" | sed 's/^/mb   /' | tee -a "$OUT/status.txt"
SHAPES=560x30001,257x65535,560x30000,171x49152,256x65536,420x40000,1024x32768,128x131072
for round in 1 2; do
  for v in h h_mb; do
    timeout 120 /tmp/$v --bench-only --shapes $SHAPES > "$OUT/bench-$v-$round.txt" 2>&1
    echo "bench $v round $round rc=$?" >> "$OUT/status.txt"
  done
done
for v in h h_mb; do grep '^bench' "$OUT/bench-$v-2.txt" | awk -v v=$v '{print v, $2, $3, $4, $5, $10, $11, $14, $15, $20, $21, $27, $28}'; done
