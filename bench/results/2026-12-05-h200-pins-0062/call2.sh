#!/usr/bin/env bash
# Device call 2 (2026-12-05): the kernel harness (bench/kernel-harness/ln_harness.cu, compiled
# here with `nvcc -O3 -arch=sm_90 -c`, linked on the device) against two candidate sets of
# backward tiers, shipped kernels otherwise as pin 0062:
#   h_p: prefetching `s` tiers (`sp`, call2-prefetch.diff on the tier registry)
#   h_q: `s` tiers that take their rows two at a time (`sq`, call2-pairs.diff)
# h_q's tests (every kernel, the candidates included, against a double reference), then the
# sweep of the backward tiers that fit the fine sweep's 16-bit shapes of 384–16384 columns, two
# alternating rounds (the shipped tiers are in both binaries).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
for v in h_p h_q; do
  xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v"
done
timeout 150 /tmp/h_q --no-bench > "$OUT/tests-h_q.txt" 2>&1
echo "tests h_q rc=$?: $(tail -1 "$OUT/tests-h_q.txt")" | tee -a "$OUT/status.txt"
grep FAIL "$OUT/tests-h_q.txt" | head -20
S=43691x384,32768x512,21846x768,16778x1000,16384x1024,10923x1536,8192x2048,6711x2500,5593x3000,5462x3072,4096x4096,3356x5000,2731x6144,2048x8192,1678x10000,1366x12288,1024x16384
T=l128v1,l256v1,l128v2,l160v2s,l128v3s,l256v2s,l320v2s,l256v3s,l512v2s,l256v5s,l320v4s,l512v4sp,l1024v4s
for round in 1 2; do
  timeout 75 /tmp/h_p --bench-only --sweep --shapes "$S" --tiers "$T,l128v2sp,l160v2sp,l128v3sp,l256v2sp,l256v3sp,l320v4sp,l128v1p,l256v1p" > "$OUT/sweep-h_p-$round.txt" 2>&1
  echo "sweep h_p $round rc=$?" | tee -a "$OUT/status.txt"
  timeout 75 /tmp/h_q --bench-only --sweep --shapes "$S" --tiers "$T,l128v2sq,l160v2sq,l128v3sq,l256v2sq,l256v3sq,l320v4sq,l512v2sq,l256v5sq" > "$OUT/sweep-h_q-$round.txt" 2>&1
  echo "sweep h_q $round rc=$?" | tee -a "$OUT/status.txt"
done
