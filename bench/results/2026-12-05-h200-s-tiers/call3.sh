#!/usr/bin/env bash
# Device call 3 (2026-12-05 evening): pin series 0001–0065's build (bench/scripts/build_gpu.sh,
# bins.tar.xz) — vendored, shim and TFT tests, compute-sanitizer, the grid bench beside PyTorch,
# the fine sweep beside PyTorch's kernels and the softmax / rms-norm family beside PyTorch
# (logs in run.tgz).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
OUT="$OUT/run" timeout 480 bash bench/scripts/device_run.sh tests,sanitizer,bench,sweep,family > /tmp/device_run.txt 2>&1
echo "device_run rc=$?" | tee -a "$OUT/status.txt"
cp "$OUT/run/status.txt" "$OUT/run-status.txt" 2>/dev/null
grep -A12 "^dtype dir" "$OUT/run/sweep-torch.log" > "$OUT/sweep-summary.txt" 2>/dev/null
cp "$OUT/run/sweep.csv" "$OUT/run/report.md" "$OUT/run/sweep.png" "$OUT/run/family.md" "$OUT/run/family-numerics.csv" "$OUT/" 2>/dev/null
(cd "$OUT" && tar -czf run.tgz run && rm -rf run)
cat "$OUT/run-status.txt"
