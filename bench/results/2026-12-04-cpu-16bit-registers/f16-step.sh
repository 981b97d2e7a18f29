#!/bin/bash
# Pin 0060 (f16 binary ops in f32 blocks) on the f16 autograd step (`fused_fwd_bwd`: y =
# layer_norm(x), (y * dy).backward()), two rounds against the build before it (pins up to 0059)
# and PyTorch (2 threads). BASE, NEW: bench binaries; TORCH: a python with torch (CPU).
BASE=${BASE:?} NEW=${NEW:?} TORCH=${TORCH:-python3}
ab=$(dirname "$0")/../2026-12-04-cpu-simd-rows/ab.sh
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
export LN_CPU_DTYPES=f16
for i in 1 2; do
  echo "# round $i, 2 threads"
  $ab 'fused_fwd_bwd/' base=$BASE new=$NEW
  $TORCH bench/scripts/cpu_torch.py --reps 7 --threads 2 --dtypes f16 | grep '^| [0-9]' |
    awk -F'|' '{gsub(/ /,"",$2); gsub(/ /,"",$3); gsub(/ /,"",$5); print "torch", "fused_"$3"/"$2, $5}' | grep fwd_bwd
done
