#!/usr/bin/env bash
# Device call 3: is a shipped tier other than the host's choice faster at the sweep's worst 16-bit
# backward points? Pin 0050's kernel harness (`--sweep`: every kernel whose row fits, 16-bit odd
# widths through the tiers' `words` instances where they have one), two rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
nvcc -arch=sm_90 .gpu/var/lnh_old.o -o /tmp/lnh
shapes=5591x3001,5593x3000,6711x2500,6711x2501,1119x15001,1119x15000,2158x7777
for r in 1 2; do
  /tmp/lnh --bench-only --sweep --shapes $shapes > "$OUT/sweep-$r.txt" 2>&1
done
grep -h "^sweep bf16.* bwd\|^bench bf16" "$OUT"/sweep-1.txt | head -150
