#!/usr/bin/env bash
# Device call 2 (2026-12-05 evening): the harness at pins 0064–0065 (the shipped lists with the
# `sq` tiers) plus call2-sweep-tiers.diff (wider pair and forward candidates, sweep lists only):
# its tests, then the bf16 backward and forward sweeps at 4096–16384 columns that call 1 did not
# reach.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
xz -dc .gpu/var/h_q2.o.xz > /tmp/h_q2.o && nvcc -arch=sm_90 /tmp/h_q2.o -o /tmp/h_q2
timeout 120 /tmp/h_q2 --no-bench > "$OUT/tests-h_q2.txt" 2>&1
echo "tests h_q2 rc=$?: $(tail -1 "$OUT/tests-h_q2.txt")" | tee -a "$OUT/status.txt"
grep FAIL "$OUT/tests-h_q2.txt" | head -20
SB=4096x4096,3356x5000,2731x6144,2048x8192,1678x10000,1366x12288,1024x16384
B=l256v2s,l256v2sq,l320v2s,l320v2sq,l256v3s,l256v3sq,l512v2s,l512v2sq,l320v4s,l320v4sq,l256v5s,l256v5sq,l512v4sp,l512v4s,l512v4sq,l1024v4s
F=l128v4,l256v3,l256v4,l320v4,l512v3,l512v4,l512v8p,l1024v8,l384v4,l640v4,l768v4,l1024v3,l1024v4,l768v8,l1024v6,l256v2,l512v2,l1024v2
timeout 150 /tmp/h_q2 --bench-only --sweep --dtypes bf16 --shapes "$SB" --tiers "$B" > "$OUT/sweep-bwd-bf16.txt" 2>&1
echo "sweep bwd bf16 rc=$?" | tee -a "$OUT/status.txt"
timeout 120 /tmp/h_q2 --bench-only --sweep --dtypes bf16 --shapes "$SB" --tiers "$F" > "$OUT/sweep-fwd-bf16.txt" 2>&1
echo "sweep fwd bf16 rc=$?" | tee -a "$OUT/status.txt"
# The mutant: h_mut is h_q2 with row b's dw partial dropped in the pair loop (`aw.a[j] += dvb * xhb;`
# removed from layer_norm_bwd.cuh): its tests must fail for the `sq` tiers.
if [ -e .gpu/var/h_mut.o.xz ]; then
  xz -dc .gpu/var/h_mut.o.xz > /tmp/h_mut.o && nvcc -arch=sm_90 /tmp/h_mut.o -o /tmp/h_mut
  LN_VERBOSE=1 timeout 120 /tmp/h_mut --no-bench > "$OUT/tests-h_mut.txt" 2>&1
  echo "tests h_mut rc=$?: $(tail -1 "$OUT/tests-h_mut.txt"); failing tiers: $(grep FAIL "$OUT/tests-h_mut.txt" | grep -o 'tier-bwd-[a-z0-9]*' | sort -u | tr '\n' ' ')" | tee -a "$OUT/status.txt"
fi
