#!/usr/bin/env bash
# Device call: the kernel harness's tests (object built on the workstation, linked here), then
# device_run.sh tests,sanitizer. Logs under $OUT.
set -uo pipefail
export PATH=/usr/local/cuda-13.0/bin:$PATH
nvcc -arch=sm_90 .gpu/harness.o -o /tmp/ln_harness && /tmp/ln_harness --no-bench > "$OUT/kernel-harness.log" 2>&1
echo "kernel-harness rc=$?" | tee "$OUT/harness-status.txt"
grep -E "tests:|FAIL" "$OUT/kernel-harness.log" | tail -5
OUT=$OUT bash bench/scripts/device_run.sh tests,sanitizer
