#!/bin/bash
# Three rounds of pin 0053's cpu bench (criterion medians, 2 threads, from a worker of a rayon pool
# as tft runs) then PyTorch (bench/scripts/cpu_torch.py, 2 threads); then one round of each with
# one thread. BIN: the bench binary of `cargo bench -p ln-bench --bench cpu --no-run`; TORCH: a
# python with torch 2.15 (CPU). Output: "<who> <bench>/<shape> <us>".
BIN=${BIN:?} TORCH=${TORCH:-python3}
here=$(dirname "$0")
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
torch_round() {
  $TORCH bench/scripts/cpu_torch.py --reps 7 --threads $1 | grep '^| [0-9]' |
    awk -F'|' '{gsub(/ /,"",$2); gsub(/ /,"",$3); gsub(/ /,"",$5); print "torch", "fused_"$3"/"$2, $5}'
}
for i in 1 2 3; do
  echo "# round $i, 2 threads"
  $here/ab.sh '(fused_bwd|fused_fwd_bwd|fused_fwd)/' candle=$BIN
  torch_round 2
done
echo "# 1 thread"
ONE_THREAD=1 $here/ab.sh '(fused_bwd|fused_fwd_bwd|fused_fwd)/' candle=$BIN
torch_round 1
