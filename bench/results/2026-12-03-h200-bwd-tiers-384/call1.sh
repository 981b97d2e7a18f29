#!/usr/bin/env bash
# Device call 1: the kernel harness with three candidate 16-bit backward tiers for rows of
# 257-384 vectors (l384v1s: one slot per thread, shared-memory partials, 3 blocks per SM;
# l384v1: register partials, 2; l192v2s: two slots, 5), with their `words` instances
# (tiers-384.diff). Every test, then the sweep of every fitting backward kernel at the widths
# around 3000 (odd and aligned), two rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
xz -dc .gpu/var/h_tiers.o.xz > /tmp/h_tiers.o && nvcc -arch=sm_90 /tmp/h_tiers.o -o /tmp/h_tiers || echo "link failed" | tee -a "$OUT/status.txt"
W=$OUT/w && mkdir -p "$W"
{ timeout 150 /tmp/h_tiers --no-bench; } > "$W/harness.log" 2>&1
echo "harness rc=$? $(grep -E '^tests:' "$W/harness.log")" | tee -a "$OUT/status.txt"
grep -E "^attr bf16 +bwd (l128v3s|l384v1s|l384v1|l192v2s|l256v2s|l256v3s) " "$W/harness.log" | tee -a "$OUT/status.txt"
SHAPES=5591x3001,6711x2501,4194x4001,2796x6001,5593x3000,6711x2500,4194x4000,8385x2001
for round in 1 2; do
  timeout 200 /tmp/h_tiers --bench-only --sweep --shapes $SHAPES --tiers l128v3s,l384v1s,l384v1,l192v2s,l256v2s,l256v3s,l512v2s > "$W/sweep-$round.txt" 2>&1
  echo "sweep round $round rc=$?" | tee -a "$OUT/status.txt"
done
grep -E "^sweep bf16 .* bwd " "$W/sweep-2.txt" | cut -c1-110
tar -C "$W" -czf "$OUT/call1.tgz" . && rm -rf "$W"
