#!/usr/bin/env bash
# Device call 3: the GPU build of main with pin 0069 (bench/scripts/build_gpu.sh,
# CANDLE_KERNELS_FATBIN_ARCHS=90): vendored, shim and TFT tests, the grid bench with the f64
# numerics check against PyTorch, the fine sweep beside PyTorch's kernels, then compute-sanitizer
# memcheck and racecheck with the time left. Packed in call3.tgz.
set -uo pipefail
R=/tmp/call3 && mkdir -p $R
st="$R/status.txt"
OUT=$R/run timeout 330 bash bench/scripts/device_run.sh tests,bench,sweep > $R/device_run.txt 2>&1
echo "device_run tests,bench,sweep rc=$? at ${SECONDS}s" >> "$st"
cat $R/run/status.txt >> "$st" 2>/dev/null
tar -xzOf $R/run/logs.tgz ./sweep-torch.log 2>/dev/null | grep -A12 "dtype dir" >> "$st"
OUT=$R/san timeout $((560 - SECONDS)) bash bench/scripts/device_run.sh sanitizer > $R/device_run_san.txt 2>&1
echo "device_run sanitizer rc=$? at ${SECONDS}s" >> "$st"
cat $R/san/status.txt >> "$st" 2>/dev/null
tar -C /tmp -czf "$OUT/call3.tgz" call3
cp "$st" "$OUT/status.txt"
cat "$st"
