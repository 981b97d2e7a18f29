#!/usr/bin/env bash
# Device call 3 (2026-12-04): the f32 split dx kernel alone with `__launch_bounds__(256, 3)`
# (LAYER_NORM_BWD_SPLIT_DX_MIN_BLOCKS_F32 in the registry), every other kernel as pin 0053 has
# it. Harness objects compiled here: pin 0053's (`h.o`) and this tree's (`h_f32.o`). This
# tree's harness tests, then both at the split shapes, alternating, three rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
for v in h h_f32; do
  xz -dc .gpu/var/$v.o.xz > /tmp/$v.o && nvcc -arch=sm_90 /tmp/$v.o -o /tmp/$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
grep -E "split-(st|dx)" <(/tmp/h --bench-only --shapes 1x1 2>&1) | sed 's/^/base /' | tee -a "$OUT/status.txt"
timeout 200 /tmp/h_f32 --no-bench > "$OUT/tests-f32.txt" 2>&1
echo "h_f32 tests rc=$? $(grep -E '^tests:' "$OUT/tests-f32.txt")" | tee -a "$OUT/status.txt"
grep -E "split-(st|dx)" "$OUT/tests-f32.txt" | sed 's/^/new  /' | tee -a "$OUT/status.txt"
SHAPES=560x30001,257x65535,560x30000,171x49152,256x65536,420x40000,1024x32768,128x131072,2048x16385,1000x20000
for round in 1 2 3; do
  for v in h h_f32; do
    timeout 120 /tmp/$v --bench-only --shapes $SHAPES > "$OUT/bench-$v-$round.txt" 2>&1
    echo "bench $v round $round rc=$?" >> "$OUT/status.txt"
  done
done
cat "$OUT/status.txt"
