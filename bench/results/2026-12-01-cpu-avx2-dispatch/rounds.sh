#!/bin/bash
# Rounds of criterion medians (in a rayon pool, as `tft` runs): the bench binary of pins
# 0001-0045 (`base`: baseline x86-64 build), the same tree built with
# RUSTFLAGS="-C target-cpu=x86-64-v3" (`v3`), the experiment of avx2-dispatch.diff (`dispatch`: AVX2 row loops chosen at
# run time, baseline build), then PyTorch's CPU script; same shapes, 2 threads.
cd /work/main
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
export LN_CPU_IN_POOL=1
run() { $2 --bench '(fused_fwd|fused_bwd|fused_fwd_bwd)/' --warm-up-time 1 --measurement-time 2 2>&1 \
  | grep -E "^layer|time:" | grep -v "%" | paste - - | awk -v n="$1" '{print n, $1, $5, $6}'; }
for r in 1 2; do
  echo "## round $r $(date -u +%H:%M:%S)"
  run base /tmp/cpu-base
  run dispatch /tmp/cpu-disp
  run v3 /tmp/cpu-v3
  python3 bench/scripts/cpu_torch.py 2>/dev/null | grep -E "^\|" | grep -v "shape\|---" | awk -F'|' '{print "torch", $2, $3, $5}'
done
echo "## done $(date -u +%H:%M:%S)"
