#!/usr/bin/env bash
# A/B of kernel harness builds, run on the device:
#   OUT=<dir> bench/kernel-harness/ab.sh BASE VARIANT SHAPES [ROUNDS]
# BASE and VARIANT are object files .gpu/var/<name>.o.xz (bench/kernel-harness/ln_harness.cu
# compiled here with `nvcc -O3 -arch=sm_90 -I<kernels> -c`, xz-compressed, carried in .gpu/var).
# Links both, runs VARIANT's tests, benches the two alternating ROUNDS times (default 2) at
# SHAPES (RxC,RxC: `bench-<name>-<round>.txt`, which ab_table.py turns into a table), then runs
# VARIANT's tests under compute-sanitizer memcheck. Everything goes to $OUT; status.txt sums up.
set -uo pipefail
base=$1 variant=$2 shapes=$3 rounds=${4:-2}
source "$(dirname "$0")/../scripts/device_env.sh"
st="$OUT/status.txt"
for v in "$base" "$variant"; do
  link_harness "$v" || exit 1
done
timeout 200 "/tmp/$variant" --no-bench > "$OUT/tests-$variant.txt" 2>&1
echo "tests $variant rc=$?: $(tail -1 "$OUT/tests-$variant.txt")" | tee -a "$st"
for round in $(seq "$rounds"); do
  for v in "$base" "$variant"; do
    timeout 60 "/tmp/$v" --bench-only --shapes "$shapes" 2>&1 | grep "^bench" > "$OUT/bench-$v-$round.txt"
    echo "bench $v round $round rc=${PIPESTATUS[0]}" >> "$st"
  done
done
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 "/tmp/$variant" --no-bench > /tmp/memcheck.txt 2>&1
echo "memcheck $variant rc=$?: $(grep -E 'ERROR SUMMARY|tests:' /tmp/memcheck.txt | tr '\n' ' ')" | tee -a "$st"
tail -5 /tmp/memcheck.txt > "$OUT/memcheck-$variant-tail.txt"
cat "$st"
