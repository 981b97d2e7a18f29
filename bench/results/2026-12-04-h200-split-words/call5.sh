#!/usr/bin/env bash
# Device call 5 (2026-12-04, ~16:35 UTC): the shim's A/B (examples/ab_bench.rs, f32 forward +
# backward, kernel vs composite) from pin 0056's build, with candle's default pool (freed memory
# handed back at each synchronize) and with CANDLE_CUDA_POOL_RETAIN=1, three alternating rounds:
# the device run's shim figures had grown 2.2-2.6x since 2026-11-30 at 16384x256 and 4096x4096.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/gpu-bins && rm -rf $B && mkdir -p $B && tar -C $B --strip-components=1 -xJf .gpu/bins.tar.xz bins/shim-ab_bench
for round in 1 2 3; do
  timeout 60 $B/shim-ab_bench --device cuda > "$OUT/ab-default-$round.txt" 2>&1
  CANDLE_CUDA_POOL_RETAIN=1 timeout 60 $B/shim-ab_bench --device cuda > "$OUT/ab-retain-$round.txt" 2>&1
done
tail -n 4 "$OUT"/ab-*.txt
