#!/usr/bin/env bash
# Device call 2: the tree as committed (the forward's pieces in the tiers of >= 32 lanes, 16-bit
# forward rows without vectors in the tiers' words instances up to the widest tier). The kernel
# harness (every case printed); the fine sweep of every
# dtype beside PyTorch's kernels (device_run.sh sweep: sweep.csv, sweep.png, the summary in
# sweep-torch.log); the vendored candle CUDA tests, shim and TFT tests, compute-sanitizer
# memcheck and racecheck (device_run.sh tests,sanitizer).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
for v in fin; do
  xz -dc .gpu/var/lnh_$v.o.xz > /tmp/lnh_$v.o && nvcc -arch=sm_90 /tmp/lnh_$v.o -o /tmp/lnh_$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
{ LN_VERBOSE=1 timeout 300 /tmp/lnh_fin --no-bench; } > "$OUT/harness.log" 2>&1
echo "harness rc=$? $(grep -E '^tests:' "$OUT/harness.log"), fwd words cases: $(grep -c 'tiers=[a-z0-9]*-words/' "$OUT/harness.log")" | tee -a "$OUT/status.txt"
OUT=$OUT bash bench/scripts/device_run.sh sweep > "$OUT/device_run_sweep.txt" 2>&1
grep -A12 "^dtype dir" "$OUT/sweep-torch.log" | tee -a "$OUT/status.txt"
OUT=$OUT bash bench/scripts/device_run.sh tests,sanitizer > "$OUT/device_run.txt" 2>&1
xz -T0 "$OUT/harness.log"
keep="status.txt sweep.csv sweep.png sweep-candle.csv harness.log.xz"
cd "$OUT" && tar -czf /tmp/logs.tgz $(ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep")) && \
  ls | grep -vxF -f <(tr ' ' '\n' <<< "$keep") | xargs rm -rf && mv /tmp/logs.tgz . && cd - > /dev/null
cat "$OUT/status.txt"
