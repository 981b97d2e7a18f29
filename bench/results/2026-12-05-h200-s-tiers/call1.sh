#!/usr/bin/env bash
# Device call 1 (2026-12-05 evening): the harness candidates of ../2026-12-05-h200-pins-0062/call3.sh
# (h_s: call3-kernels.diff — pairs `sq`, prefetch `sp`, and `s` tiers of 32/64 lanes with one
# shared-memory partial slice per row group) and h_f: h_s plus forward sweep tiers sized for the
# widths between the shipped ones (forward-tiers.diff). h_s's tests; the bf16 backward sweep at
# 768–16384 columns; the forward sweep (f32 and bf16) at the same widths. Tensors >= 32 MiB.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
for v in h_s h_f; do
  xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v"
done
timeout 120 /tmp/h_s --no-bench > "$OUT/tests-h_s.txt" 2>&1
echo "tests h_s rc=$?: $(tail -1 "$OUT/tests-h_s.txt")" | tee -a "$OUT/status.txt"
grep FAIL "$OUT/tests-h_s.txt" | head -20
SB=21846x768,16384x1024,10923x1536,8192x2048,6711x2500,5593x3000,4096x4096,3356x5000,2731x6144,2048x8192,1678x10000,1366x12288,1024x16384
SF=10923x768,8192x1024,5462x1536,4096x2048,3356x2500,2797x3000,2048x4096,1678x5000,1366x6144,1024x8192,839x10000,683x12288,512x16384
T=l128v1,l256v1,l128v2,l160v2s,l128v3s,l256v2s,l320v2s,l256v3s,l512v2s,l256v5s,l320v4s,l512v4sp,l1024v4s
T=$T,l128v2sq,l160v2sq,l128v3sq,l256v2sq,l256v3sq,l320v4sq,l512v2sq,l256v5sq
T=$T,l128v1p,l256v1p,l128v2sp,l128v3sp,l256v2sp,l256v3sp,l320v4sp
T=$T,l32v2s,l32v4s,l32v8s,l64v2s,l64v4s,l32v4,l32v8,l64v1,l64v2,l128v4,l256v2,l512v4,l128v2s,l128v4s,l256v4,l256v4s,l512v4s,l512v1s,l1024v1s,l1024v2s
F=l32v4,l128v2,l128v4,l256v4,l512v4,l512v8p,l1024v8,l32v8,l64v2,l256v2,l512v2,l1024v2,l1024v4
F=$F,l64v3,l64v5,l160v2,l160v4,l192v4,l256v3,l320v2,l320v4,l384v4,l512v3,l640v4,l768v4
timeout 170 /tmp/h_s --bench-only --sweep --dtypes bf16 --shapes "$SB" --tiers "$T" > "$OUT/sweep-bwd-h_s.txt" 2>&1
echo "sweep bwd h_s rc=$?" | tee -a "$OUT/status.txt"
timeout 100 /tmp/h_f --bench-only --sweep --dtypes f32 --shapes "$SF" --tiers "$F" > "$OUT/sweep-fwd-f32-h_f.txt" 2>&1
echo "sweep fwd f32 h_f rc=$?" | tee -a "$OUT/status.txt"
timeout 100 /tmp/h_f --bench-only --sweep --dtypes bf16 --shapes "$SB" --tiers "$F" > "$OUT/sweep-fwd-bf16-h_f.txt" 2>&1
echo "sweep fwd bf16 h_f rc=$?" | tee -a "$OUT/status.txt"
