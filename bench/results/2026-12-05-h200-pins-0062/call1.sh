#!/usr/bin/env bash
# Device call 1 (2026-12-05): pin series 0001–0062's build (bench/scripts/build_gpu.sh,
# bins.tar.xz) — tests, sanitizer, the grid bench beside PyTorch and the fine sweep beside
# PyTorch's kernels (logs in run.tgz).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
OUT="$OUT/run" timeout 400 bash bench/scripts/device_run.sh tests,sanitizer,bench,sweep > /tmp/device_run.txt 2>&1
echo "device_run rc=$?" | tee -a "$OUT/status.txt"
cp "$OUT/run/status.txt" "$OUT/run-status.txt" 2>/dev/null
grep -A12 "^dtype dir" "$OUT/run/sweep-torch.log" > "$OUT/sweep-summary.txt" 2>/dev/null
cp "$OUT/run/sweep.csv" "$OUT/run/report.md" "$OUT/run/sweep.png" "$OUT/" 2>/dev/null
(cd "$OUT" && tar -czf run.tgz run && rm -rf run)
cat "$OUT/run-status.txt"
