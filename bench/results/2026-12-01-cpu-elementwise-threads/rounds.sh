#!/bin/bash
# Three rounds: HEAD (4b7bed3) bench binary and the new one (pins 0042-0044), criterion medians
# out of a pool and in one (LN_CPU_IN_POOL=1), then PyTorch's CPU script, same shapes.
cd /work/main
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
run() { # name binary [pool]
  if [ -n "$3" ]; then export LN_CPU_IN_POOL=1; else unset LN_CPU_IN_POOL; fi
  $2 --bench '(fused_fwd|fused_bwd|fused_fwd_bwd|mul)/' --warm-up-time 1 --measurement-time 2 2>&1 \
    | grep -E "^layer|time:" | grep -v "%" | paste - - | awk -v n="$1" '{print n, $1, $5, $6}'
}
for r in 1 2 3; do
  echo "## round $r $(date -u +%H:%M:%S)"
  run old ./cpu-before
  run new ./cpu-after
  run new_pool ./cpu-after 1
  python3 bench/scripts/cpu_torch.py 2>/dev/null | grep -E "^\|" | grep -v "shape\|---" | awk -F'|' -v r=$r '{print "torch", $2, $3, $5}'
done
echo "## done $(date -u +%H:%M:%S)"
