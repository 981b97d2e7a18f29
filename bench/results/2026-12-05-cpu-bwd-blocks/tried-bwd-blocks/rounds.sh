#!/bin/bash
# The cpu layer-norm backward a block of rows at a time (dalpha/dbeta added in registers) and the
# op on the calling thread when rayon has one thread, against the pin before (BASE) and PyTorch
# CPU: three rounds with two threads (criterion medians from a worker of a rayon pool, as tft
# runs; PyTorch with two threads), f32/bf16/f16 backward and autograd step, then two rounds with
# one thread (RAYON_NUM_THREADS=1, no pool), f32 forward and backward.
# BASE, NEW: bench binaries of `cargo bench -p ln-bench --bench cpu --no-run`; TORCH: a python
# with torch (CPU). Run from the repository root. Output: "<who> <bench>/<shape> <us>".
BASE=${BASE:?} NEW=${NEW:?} TORCH=${TORCH:-python3}
ab=$(dirname "$0")/../../2026-12-04-cpu-simd-rows/ab.sh
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
torch_round() {
  $TORCH bench/scripts/cpu_torch.py --reps 7 --threads $1 --dtypes $2 | grep '^| [0-9]' |
    awk -F'|' '{gsub(/ /,"",$2); gsub(/ /,"",$3); gsub(/ /,"",$5); print "torch", "fused_"$3"/"$2, $5}'
}
for i in 1 2 3; do
  echo "# round $i, 2 threads"
  LN_CPU_DTYPES=f32,bf16,f16 $ab '(fused_bwd|fused_fwd_bwd)/' base=$BASE new=$NEW
  torch_round 2 f32,bf16,f16
done
for i in 1 2; do
  echo "# round $i, 1 thread"
  LN_CPU_DTYPES=f32 ONE_THREAD=1 $ab '(fused_bwd|fused_fwd)/' base=$BASE new=$NEW
  torch_round 1 f32
done
