#!/bin/bash
# Issue 14's CPU shapes (the bench's default grid: 4096x64, 2048x1024, 512x4096, 64x16384 and
# the odd 3000x333, 257x5000), forward and backward op, f32 and bf16, at pin 0065 (no CPU change
# since pin 0063) beside PyTorch's CPU kernels with the same thread count: ROUNDS rounds of one
# thread (RAYON_NUM_THREADS=1) and two threads (from a worker of a pool, as tft runs). The same
# binary runs twice per round ("base" and "new"), so the table's two columns are a replicate.
# BIN: the bench binary of `cargo bench -p ln-bench --bench cpu --no-run`; TORCH: a python with
# torch (CPU). Run from the repository root. Output: "<who> <bench>/<shape> <us>".
BIN=${BIN:?} TORCH=${TORCH:-python3} ROUNDS=${ROUNDS:-2}
ab=$(dirname "$0")/../2026-12-04-cpu-simd-rows/ab.sh
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
export LN_CPU_DTYPES=f32,bf16
torch_round() {
  $TORCH bench/scripts/cpu_torch.py --reps 7 --threads $1 --dtypes f32,bf16 | grep '^| [0-9]' |
    awk -F'|' '{gsub(/ /,"",$2); gsub(/ /,"",$3); gsub(/ /,"",$5); print "torch", "fused_"$3"/"$2, $5}'
}
for i in $(seq "$ROUNDS"); do
  echo "# round $i, 1 thread"
  ONE_THREAD=1 $ab '(fused_bwd|fused_fwd)/' base=$BIN new=$BIN
  torch_round 1
  echo "# round $i, 2 threads"
  $ab '(fused_bwd|fused_fwd)/' base=$BIN new=$BIN
  torch_round 2
done
