#!/usr/bin/env bash
# Device call 2 (2026-12-06, fifth session): at 16-bit widths past l512v4sq, where the host
# takes l1024v4s (partials in shared memory, up to the opt-in maximum) and then the split
# backward, which of the two is faster across the range? The kernel harness of pins 0001-0070
# (.gpu/var/h_def.o.xz, 7aa893c), every backward kernel whose row fits, restricted to the two.
set -uo pipefail
source bench/scripts/device_env.sh
st="$OUT/status.txt"
link_harness h_def || exit 1
S=1024x16392,933x18000,839x20000,763x22000,683x24576,646x26000,600x28000
for round in 1 2; do
  timeout 100 /tmp/h_def --bench-only --sweep --dtypes bf16,f16 --tiers l1024v4s,split --shapes "$S" > "$OUT/sweep-r$round.txt" 2>&1
  echo "round $round rc=$? at ${SECONDS}s" >> "$st"
done
grep -h "^sweep.*bwd" "$OUT"/sweep-r*.txt >> "$st"
cat "$st"
