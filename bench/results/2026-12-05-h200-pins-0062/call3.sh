#!/usr/bin/env bash
# Device call 3 (2026-12-05): call 2's candidates for bf16 only (`--dtypes bf16`, new harness
# flag): h_s is ln_harness.cu against the kernels, both with call3-kernels.diff applied (call 2's
# pairs, its prefetch tiers but l160v2sp, and `s` tiers of 32 and 64 lanes: several rows per
# block, each row group with its own slice of shared-memory partials); its tests first, then the
# backward tiers that fit the fine
# sweep's bf16 shapes of 1000–16384 columns (the registry's sweep tiers too), ROUNDS rounds (default 1).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
xz -dc .gpu/var/h_s.o.xz > /tmp/h_s.o && nvcc -arch=sm_90 /tmp/h_s.o -o /tmp/h_s
S=16778x1000,16384x1024,10923x1536,8192x2048,6711x2500,5593x3000,5462x3072,4096x4096,3356x5000,2731x6144,2048x8192,1678x10000,1366x12288,1024x16384
T=l128v1,l256v1,l160v2s,l128v3s,l256v2s,l320v2s,l256v3s,l512v2s,l256v5s,l320v4s,l512v4sp,l1024v4s
T=$T,l128v2sq,l160v2sq,l128v3sq,l256v2sq,l256v3sq,l320v4sq,l512v2sq,l256v5sq
T=$T,l128v1p,l256v1p,l128v2sp,l128v3sp,l256v2sp,l256v3sp,l320v4sp
# The registry's sweep tiers: fewer lanes per row (l32v*: a warp per row, no block barrier; l64v*), and more.
T=$T,l32v2s,l32v4s,l32v8s,l64v2s,l64v4s,l32v4,l32v8,l64v1,l64v2,l128v4,l256v2,l512v4,l128v2s,l128v4s,l256v4,l256v4s,l512v4s,l512v1s,l1024v1s,l1024v2s
timeout 150 /tmp/h_s --no-bench > "$OUT/tests-h_s.txt" 2>&1
echo "tests h_s rc=$?: $(tail -1 "$OUT/tests-h_s.txt")" | tee -a "$OUT/status.txt"
for round in $(seq "${ROUNDS:-1}"); do
  timeout 150 /tmp/h_s --bench-only --sweep --dtypes bf16 --shapes "$S" --tiers "$T" > "$OUT/sweep-h_s-$round.txt" 2>&1
  echo "sweep h_s $round rc=$?" | tee -a "$OUT/status.txt"
done
