#!/usr/bin/env bash
# Device call 1 (2026-12-05 night): the build of the working tree (bench/scripts/build_gpu.sh,
# CANDLE_KERNELS_FATBIN_ARCHS=90: pins 0001-0065 + the backward's `s` tiers as clusters of 8
# blocks adding their partials through distributed shared memory + pairs for the `words`
# instances of the `sq` tiers), repacked without first_launch, op_overhead and the tft binary,
# which these phases do not run: grid bench beside PyTorch, fine sweep beside PyTorch's kernels,
# family (run1), then vendored, shim and TFT tests and compute-sanitizer (run2).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
st="$OUT/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
OUT="$OUT/run1" timeout 200 bash bench/scripts/device_run.sh bench,sweep,family > /tmp/run1.txt 2>&1
echo "run1 rc=$? at ${SECONDS}s" >> "$st"
OUT="$OUT/run2" timeout $((580 - SECONDS)) bash bench/scripts/device_run.sh tests,sanitizer > /tmp/run2.txt 2>&1
echo "run2 rc=$? at ${SECONDS}s" >> "$st"
cat "$OUT/run1/status.txt" "$OUT/run2/status.txt" >> "$st"
cp "$OUT/run1/sweep.csv" "$OUT/run1/report.md" "$OUT/run1/family.md" "$OUT/" 2>/dev/null
(cd "$OUT" && tar -czf runs.tgz run1 run2 && rm -rf run1 run2)
cat "$st"
