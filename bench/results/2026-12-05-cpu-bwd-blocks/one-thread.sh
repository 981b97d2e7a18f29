#!/bin/bash
# The cpu layer norm on the calling thread when rayon has one thread (pin 0061) against the pin
# before (BASE) and PyTorch CPU with one thread: two rounds, f32 and bf16 forward and backward
# (criterion medians, RAYON_NUM_THREADS=1, called from outside any pool), then one round with
# two threads from a worker of a pool (the path there is unchanged).
# BASE, NEW: bench binaries of `cargo bench -p ln-bench --bench cpu --no-run`; TORCH: a python
# with torch (CPU). Run from the repository root. Output: "<who> <bench>/<shape> <us>".
BASE=${BASE:?} NEW=${NEW:?} TORCH=${TORCH:-python3}
ab=$(dirname "$0")/../2026-12-04-cpu-simd-rows/ab.sh
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
export LN_CPU_DTYPES=f32,bf16
torch_round() {
  $TORCH bench/scripts/cpu_torch.py --reps 7 --threads $1 --dtypes f32,bf16 | grep '^| [0-9]' |
    awk -F'|' '{gsub(/ /,"",$2); gsub(/ /,"",$3); gsub(/ /,"",$5); print "torch", "fused_"$3"/"$2, $5}'
}
for i in 1 2; do
  echo "# round $i, 1 thread"
  ONE_THREAD=1 $ab '(fused_bwd|fused_fwd)/' base=$BASE new=$NEW
  torch_round 1
done
echo "# round 3, 2 threads"
$ab '(fused_bwd|fused_fwd)/' base=$BASE new=$NEW
torch_round 2
