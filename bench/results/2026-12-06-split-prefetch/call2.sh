#!/usr/bin/env bash
# Device call 2 (2026-12-06, second session), after call 1: call 1's GPU build of the branch
# (build_gpu.sh) under compute-sanitizer memcheck and racecheck (the layer-norm tests, candle-core's
# column sum and broadcast kernels, AdamW and LSTM), logs packed in run.tgz.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
OUT="$OUT/run" timeout 560 bash bench/scripts/device_run.sh sanitizer > /tmp/device_run.txt 2>&1
echo "device_run rc=$?" | tee -a "$OUT/status.txt"
cp "$OUT/run/status.txt" "$OUT/run-status.txt" 2>/dev/null
(cd "$OUT" && tar -czf run.tgz run && rm -rf run)
cat "$OUT/run-status.txt"
