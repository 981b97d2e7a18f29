#!/usr/bin/env bash
# Device call 4 (2026-12-05 evening): the build of call 3 (pins 0001–0065) again, the grid bench
# beside PyTorch and the fine sweep beside PyTorch's kernels only (logs in run.tgz); the sweep
# summary is taken from the packed logs here.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
OUT="$OUT/run" timeout 300 bash bench/scripts/device_run.sh bench,sweep > /tmp/device_run.txt 2>&1
echo "device_run rc=$?" | tee -a "$OUT/status.txt"
cp "$OUT/run/status.txt" "$OUT/run-status.txt" 2>/dev/null
cp "$OUT/run/report.md" "$OUT/" 2>/dev/null
(cd "$OUT" && tar -czf run.tgz run && rm -rf run)
cat "$OUT/run-status.txt"
