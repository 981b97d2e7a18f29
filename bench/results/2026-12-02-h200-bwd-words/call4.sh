#!/usr/bin/env bash
# Device call 4: what limits the sweep's worst backward points (call 3), with ncu on the kernel
# harness's bench (table choice and launch rules as layer_norm_cuda.rs): the first launch of the
# point's kernel, sections SpeedOfLight, Occupancy, LaunchStats, WarpStateStats,
# MemoryWorkloadAnalysis. 16-bit 3001 (words instance) beside 3000 (8-byte vectors, same tier)
# and beside its element accesses (LN_NO_WORDS=1); 15001, 2500, and 7777 for reference.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
nvcc -arch=sm_90 .gpu/lnh.o -o /tmp/lnh
prof() { # label, shape, kernel, env...
  local label=$1 shape=$2 kernel=$3; shift 3
  env "$@" timeout 120 ncu -k "regex:^$kernel\$" -c 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    /tmp/lnh --bench-only --shapes "$shape" > "$OUT/ncu-$label.txt" 2>&1
  echo "$label rc=$?" | tee -a "$OUT/status.txt"
}
prof 3001-words 5591x3001 layernorm_bwd_l128v3s_words_bf16
prof 3001-elem 5591x3001 layernorm_bwd_l128v3s_bf16 LN_NO_WORDS=1
prof 3000 5593x3000 layernorm_bwd_l128v3s_bf16
prof 15001-words 1119x15001 layernorm_bwd_l512v4sp_words_bf16
prof 2500 6711x2500 layernorm_bwd_l128v3s_bf16
prof 7777-words 2158x7777 layernorm_bwd_l512v2s_words_bf16
for f in "$OUT"/ncu-*.txt; do
  echo "== $(basename "$f")"
  grep -E "Duration|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|Stall Long|L1/TEX Hit|L2 Hit|Block Limit" "$f" | head -20
done | tee "$OUT/ncu-summary.txt"
