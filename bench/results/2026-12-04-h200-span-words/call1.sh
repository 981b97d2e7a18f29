#!/usr/bin/env bash
# Device call 1 (2026-12-04): the kernel harness of pin 0053 (h_base.o) and of this tree with
# 16-bit odd-width rows taken as spans of aligned words (h_new.o): the new harness's tests, then
# both benched at the sweep's odd 16-bit widths (rows for 32 MiB tensors) and aligned controls,
# alternating, two rounds; PyTorch's kernels at the same shapes, bf16 and f16.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
here=bench/results/2026-12-04-h200-span-words
for v in h_base h_new; do
  xz -dc .gpu/var/$v.o.xz > /tmp/$v.o && nvcc -arch=sm_90 /tmp/$v.o -o /tmp/$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt" 2>&1
timeout 300 /tmp/h_new --no-bench > "$OUT/tests-new.txt" 2>&1
echo "tests new rc=$?" | tee -a "$OUT/status.txt"
tail -5 "$OUT/tests-new.txt"
SHAPES=16762x1001,8385x2001,6711x2501,5591x3001,4194x4001,2796x6001,2158x7777,1678x9999,1119x15001,5591x3002,2795x6003,172961x97,83468x201,50383x333,5593x3000,16384x1024
for round in 1 2; do
  for v in h_base h_new; do
    timeout 150 /tmp/$v --bench-only --shapes $SHAPES > "$OUT/bench-$v-$round.txt" 2>&1
    echo "bench $v round $round rc=$?" >> "$OUT/status.txt"
  done
done
cd bench/scripts && timeout 150 python3 - "$SHAPES" > "$OUT/torch.txt" 2>&1 <<'PY'
import sys
from sweep_torch import torch_point
for s in sys.argv[1].split(","):
    r, c = map(int, s.split("x"))
    for dt in ("bf16", "f16"):
        f, b = torch_point(dt, r, c, 3)
        print(f"torch {dt} {r}x{c} fwd {f:.1f} us bwd {b:.1f} us")
PY
echo "torch rc=$?" >> "$OUT/status.txt"
cat "$OUT/status.txt"
