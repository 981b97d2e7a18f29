#!/bin/bash
# The backward of narrow rows with dalpha/dbeta in registers (NEW) against the pin before (BASE)
# and PyTorch's CPU kernel, the same thread count: rounds alternating one thread (RAYON_NUM_THREADS=1)
# and two threads from a worker of a pool (as tft runs). Widths of one to four AVX-512 vectors
# (the narrow path), 80 (five vectors: the row path, both binaries) and 1024 (control).
# BASE, NEW: bench binaries of `cargo bench -p ln-bench --bench cpu --no-run`; TORCH: a python
# with torch. Run from the repository root. Output: "<who> <bench>/<shape> <us>".
BASE=${BASE:?} NEW=${NEW:?} TORCH=${TORCH:-python3} ROUNDS=${ROUNDS:-2}
ab=$(dirname "$0")/../2026-12-04-cpu-simd-rows/ab.sh
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
export LN_CPU_DTYPES=f32,bf16
export LN_CPU_SHAPES=16384x16,8192x32,5461x48,4096x64,3277x80,256x1024
torch_round() {
  $TORCH bench/scripts/cpu_torch.py --reps 7 --threads $1 --dtypes $LN_CPU_DTYPES --shapes $LN_CPU_SHAPES |
    grep '^| [0-9]' | grep '| bwd |' |
    awk -F'|' '{gsub(/ /,"",$2); gsub(/ /,"",$3); gsub(/ /,"",$5); print "torch", "fused_"$3"/"$2, $5}'
}
for i in $(seq $ROUNDS); do
  echo "# round $i, 1 thread"
  ONE_THREAD=1 $ab 'fused_bwd/' base=$BASE new=$NEW
  torch_round 1
  echo "# round $i, 2 threads"
  $ab 'fused_bwd/' base=$BASE new=$NEW
  torch_round 2
done
