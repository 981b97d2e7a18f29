#!/usr/bin/env bash
# Device call 4 (2026-12-04): the shipped change (spans in the `s` tiers only, pin 0054): the
# kernel harness's tests (h_v4.o), then the device run's tests, sanitizer (memcheck, racecheck)
# and the fine sweep beside PyTorch's kernels; logs packed into one archive.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
xz -dc .gpu/var/h_v4.o.xz > /tmp/h_v4.o && nvcc -arch=sm_90 /tmp/h_v4.o -o /tmp/h_v4 || echo "link failed" | tee -a "$OUT/status.txt"
timeout 200 /tmp/h_v4 --no-bench > "$OUT/harness-tests.txt" 2>&1
echo "harness tests rc=$?" | tee -a "$OUT/status.txt"
tail -1 "$OUT/harness-tests.txt"
OUT="$OUT/run" bash bench/scripts/device_run.sh tests,sanitizer,sweep
tar -czf "$OUT/run.tgz" -C "$OUT" run && rm -rf "$OUT/run"
cat "$OUT/status.txt"
