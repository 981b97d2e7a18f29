#!/usr/bin/env bash
# Device call 2: pin 0050's correctness, and where the `words` instances pay. The kernel harness
# (object compiled on the build machine, linked here; every case printed, LN_VERBOSE=1); its
# bench at 16-bit rows without vectors, one shape per tier (rows so that a tensor holds >= 32
# MiB), the words instances (`words`) and the element-by-element tiers (`elem`, LN_NO_WORDS=1)
# alternating, two rounds; the vendored candle CUDA tests, shim and TFT tests, compute-sanitizer
# memcheck and racecheck (device_run.sh tests,sanitizer).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
nvcc -arch=sm_90 .gpu/lnh.o -o /tmp/lnh
{ LN_VERBOSE=1 timeout 300 /tmp/lnh --no-bench; } > "$OUT/harness.log" 2>&1
echo "harness rc=$? $(grep -E '^tests:' "$OUT/harness.log"), words cases: $(grep -c -- '-words' "$OUT/harness.log")" | tee -a "$OUT/status.txt"
shapes=172961x97,83469x201,50383x333,16762x1001,8385x2001,5591x3001,4194x4001,4193x4002,2796x6001,2158x7777,1678x9999,1119x15001,560x30001
for r in 1 2; do
  /tmp/lnh --bench-only --shapes $shapes > "$OUT/bench-words-$r.txt" 2>&1
  LN_NO_WORDS=1 /tmp/lnh --bench-only --shapes $shapes > "$OUT/bench-elem-$r.txt" 2>&1
done
grep -h "^bench bf16" "$OUT"/bench-*.txt | awk '{print $3, $14, $17}' | sort | tee -a "$OUT/status.txt"
OUT=$OUT bash bench/scripts/device_run.sh tests,sanitizer > "$OUT/device_run.txt" 2>&1
keep="status.txt"
cd "$OUT" && xz -T0 harness.log && tar -czf /tmp/logs.tgz $(ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep")) && \
  ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep") | xargs rm -rf && mv /tmp/logs.tgz . && cd - > /dev/null
cat "$OUT/status.txt"
