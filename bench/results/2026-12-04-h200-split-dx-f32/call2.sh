#!/usr/bin/env bash
# Device call 2 (2026-12-04): the kernel harness of pin 0053 (h.o) and pin 0054 (h_f32.o) at the
# f32 split shapes of the fine sweep (rows for 32 MiB tensors), alternating, three rounds: does
# the kernels' gain of call 3 (ncu-worst) hold at the sweep's shapes, where the op did not move?
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
for v in h h_f32; do
  xz -dc .gpu/var/$v.o.xz > /tmp/$v.o && nvcc -arch=sm_90 /tmp/$v.o -o /tmp/$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
grep -E "split-(st|dx)" <(/tmp/h --bench-only --shapes 1x1 2>&1) | sed 's/^/base /' | tee -a "$OUT/status.txt"
true
SHAPES=420x20000,342x24576,280x30001,256x32768,210x40000,171x49152,168x50000,129x65535,128x65536,2048x16385,1024x32768
for round in 1 2 3; do
  for v in h h_f32; do
    timeout 120 /tmp/$v --bench-only --shapes $SHAPES > "$OUT/bench-$v-$round.txt" 2>&1
    echo "bench $v round $round rc=$?" >> "$OUT/status.txt"
  done
done
cat "$OUT/status.txt"
