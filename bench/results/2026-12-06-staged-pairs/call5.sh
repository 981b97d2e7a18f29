#!/usr/bin/env bash
# Device call 5: the GPU build of main with pin 0070 (bench/scripts/build_gpu.sh,
# CANDLE_KERNELS_FATBIN_ARCHS=90): vendored, shim and TFT tests, the grid bench with the f64
# numerics check against PyTorch, the fine sweep beside PyTorch's kernels; the kernel harness's
# tests of the shipped code (h_fin: main's kernels and harness at pin 0070, built as in calls
# 1-4); then compute-sanitizer memcheck and racecheck with the time left. Packed in call5.tgz.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
R=/tmp/call5 && mkdir -p $R
st="$R/status.txt"
OUT=$R/run timeout 330 bash bench/scripts/device_run.sh tests,bench,sweep > $R/device_run.txt 2>&1
echo "device_run tests,bench,sweep rc=$? at ${SECONDS}s" >> "$st"
cat $R/run/status.txt >> "$st" 2>/dev/null
tar -xzOf $R/run/logs.tgz ./sweep-torch.log 2>/dev/null | grep -A12 "dtype dir" >> "$st"
xz -dc .gpu/var/h_fin.o.xz > /tmp/h_fin.o && nvcc -arch=sm_90 /tmp/h_fin.o -o /tmp/h_fin &&
  timeout 120 /tmp/h_fin --no-bench > $R/harness-tests.txt 2>&1
echo "harness tests at ${SECONDS}s: $(tail -1 $R/harness-tests.txt)" >> "$st"
grep -m5 FAIL $R/harness-tests.txt >> "$st"
OUT=$R/san timeout $((540 - SECONDS)) bash bench/scripts/device_run.sh sanitizer > $R/device_run_san.txt 2>&1
echo "device_run sanitizer rc=$? at ${SECONDS}s" >> "$st"
cat $R/san/status.txt >> "$st" 2>/dev/null
tar -C /tmp -czf "$OUT/call5.tgz" call5
cp "$st" "$OUT/status.txt"
cat "$st"
