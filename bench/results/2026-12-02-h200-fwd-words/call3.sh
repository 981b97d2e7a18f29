#!/usr/bin/env bash
# Device call 3: the softmax's words instances (pin 0053) on top of pin 0052. The kernel harness
# with a broken forward words store (`mut`, pin 0052's kernels: the last element of every full
# slot left unwritten), which must fail; the family bench beside PyTorch with the new odd-width
# softmax cases (32001, 3001 columns) and its numerics against PyTorch in f64 (device_run.sh
# family); the vendored candle CUDA tests, shim and TFT tests, compute-sanitizer memcheck and
# racecheck. (The A/B against pin 0052's family_bench is call 4: both do not fit one call.)
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
xz -dc .gpu/var/lnh_mut.o.xz > /tmp/lnh_mut.o && nvcc -arch=sm_90 /tmp/lnh_mut.o -o /tmp/lnh_mut || echo "link mut failed" | tee -a "$OUT/status.txt"
{ timeout 300 /tmp/lnh_mut --no-bench; } > "$OUT/harness-mut.log" 2>&1
echo "harness (broken fwd words store) rc=$? $(grep -E '^tests:' "$OUT/harness-mut.log"), fwd words failures: $(grep -c '^FAIL.*tiers=[a-z0-9]*-words/' "$OUT/harness-mut.log"), other failures: $(grep '^FAIL' "$OUT/harness-mut.log" | grep -vc 'tiers=[a-z0-9]*-words/')" | tee -a "$OUT/status.txt"
OUT=$OUT bash bench/scripts/device_run.sh family > "$OUT/device_run_family.txt" 2>&1
cat "$OUT/family.md" >> "$OUT/status.txt"
OUT=$OUT bash bench/scripts/device_run.sh tests,sanitizer > "$OUT/device_run.txt" 2>&1
xz -T0 "$OUT/harness-mut.log"
keep="status.txt family.md family-candle.csv family-torch.csv family-numerics.csv harness-mut.log.xz"
cd "$OUT" && tar -czf /tmp/logs.tgz $(ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep")) && \
  ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep") | xargs rm -rf && mv /tmp/logs.tgz . && cd - > /dev/null
cat "$OUT/status.txt"
