#!/bin/bash
# Pin 0059 (16-bit rows through layer_norm_x86) against pins 0057-0058 and PyTorch, bf16 and f16:
# two rounds of both criterion binaries (2 threads from a rayon worker, ab.sh) and PyTorch
# (bench/scripts/cpu_torch.py --dtypes bf16,f16, 2 threads). BASE, NEW: bench binaries of
# `cargo bench -p ln-bench --bench cpu --no-run`; TORCH: a python with torch (CPU).
BASE=${BASE:?} NEW=${NEW:?} TORCH=${TORCH:-python3}
here=$(dirname "$0")
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
export LN_CPU_DTYPES=bf16,f16
for i in 1 2; do
  echo "# round $i, 2 threads"
  $here/ab.sh '(fused_bwd|fused_fwd)/' base=$BASE new=$NEW
  $TORCH bench/scripts/cpu_torch.py --reps 7 --threads 2 --dtypes bf16,f16 | grep '^| [0-9]' |
    awk -F'|' '{gsub(/ /,"",$2); gsub(/ /,"",$3); gsub(/ /,"",$5); print "torch", "fused_"$3"/"$2, $5}'
done
