#!/usr/bin/env bash
# Device call 1: do the backward's `words` instances gain when a row's pieces are all loaded
# before any is joined (load_packs)? Kernel harness objects compiled on the build machine, linked
# here: `old` = pin 0050 (pieces joined slot by slot), `A` = x, dy and w batched (dy/w two slots
# at a time in the wide shared-memory tiers), `B` = x (and resident dy) only, `C` = x batched, dy
# and w one slot at a time. Correctness of every variant (--no-bench), then its bench at 16-bit
# rows without vectors, one shape per tier, variants alternating, two rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
vars="old A B C"
for v in $vars; do
  o=.gpu/var/lnh_$v.o
  nvcc -arch=sm_90 "$o" -o /tmp/lnh_$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
for v in A B C; do
  { timeout 240 /tmp/lnh_$v --no-bench; } > "$OUT/harness-$v.log" 2>&1
  echo "harness $v rc=$? $(grep -E '^tests:' "$OUT/harness-$v.log")" | tee -a "$OUT/status.txt"
done
shapes=16762x1001,8385x2001,5591x3001,4194x4001,2796x6001,2158x7777,1678x9999,1119x15001,560x30001
for r in 1 2; do
  for v in $vars; do
    /tmp/lnh_$v --bench-only --shapes $shapes > "$OUT/bench-$v-$r.txt" 2>&1
  done
done
for v in $vars; do
  grep -h "^bench bf16\|^bench f16" "$OUT"/bench-$v-*.txt | awk -v v=$v '{print $2, $3, $14, v, $17}'
done | sort -k1,2 -k4 | tee -a "$OUT/status.txt"
cd "$OUT" && for v in A B C; do xz -T0 harness-$v.log; done
