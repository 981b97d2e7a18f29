#!/bin/bash
# Pin 0059 as rewritten on 2026-12-04 evening (16-bit rows converted in the vector registers)
# against pin 0059 as it was (a block at a time through f32 buffers) and PyTorch 2.15 CPU, for
# f32, bf16 and f16: two rounds with 2 threads (criterion medians from a worker of a rayon pool,
# as tft runs; PyTorch with 2 threads), then one round with one thread (new and PyTorch).
# BASE, NEW: bench binaries of `cargo bench -p ln-bench --bench cpu --no-run`; TORCH: a python
# with torch (CPU). Run from the repository root. Output: "<who> <bench>/<shape> <us>".
BASE=${BASE:?} NEW=${NEW:?} TORCH=${TORCH:-python3}
ab=$(dirname "$0")/../2026-12-04-cpu-simd-rows/ab.sh
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
export LN_CPU_DTYPES=f32,bf16,f16
torch_round() {
  $TORCH bench/scripts/cpu_torch.py --reps 7 --threads $1 --dtypes f32,bf16,f16 | grep '^| [0-9]' |
    awk -F'|' '{gsub(/ /,"",$2); gsub(/ /,"",$3); gsub(/ /,"",$5); print "torch", "fused_"$3"/"$2, $5}'
}
for i in 1 2; do
  echo "# round $i, 2 threads"
  $ab '(fused_bwd|fused_fwd_bwd|fused_fwd)/' base=$BASE new=$NEW
  torch_round 2
done
echo "# 1 thread"
ONE_THREAD=1 $ab '(fused_bwd|fused_fwd_bwd|fused_fwd)/' new=$NEW
torch_round 1
