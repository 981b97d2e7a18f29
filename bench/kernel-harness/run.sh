#!/bin/bash
# Compile and run the LayerNorm kernel harness on the GPU machine (needs nvcc and an sm_90 GPU).
# Usage (from anywhere): bench/kernel-harness/run.sh [--no-bench|--bench-only] [--sweep]
#   [--shapes RxC,..] [--tiers tag,..]
# The binary goes to $LN_HARNESS_BIN (default /tmp/ln_harness). LN_VERBOSE=1 prints every test
# case. Exit code != 0 on any failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../../candle-patch/candle-kernels/src"
bin="${LN_HARNESS_BIN:-/tmp/ln_harness}"
nvcc -O3 -arch=sm_90 -I"$src" "$here/ln_harness.cu" -o "$bin"
"$bin" "$@"
