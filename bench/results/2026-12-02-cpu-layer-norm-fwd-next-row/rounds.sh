#!/bin/bash
# Three rounds: criterion (cpu-new = pin 0048, cpu-p49 = pin 0049) then PyTorch, 2 threads, as tft runs.
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
cd /work/main
for i in 1 2 3; do
  /tmp/ab.sh '(fused_fwd|fused_fwd_bwd)/' 1 /tmp/cpu-new /tmp/cpu-p49
  python3 bench/scripts/cpu_torch.py --reps 7 | grep '^| [0-9]' | awk -F'|' '{gsub(/ /,"",$2); gsub(/ /,"",$3); gsub(/ /,"",$5); print "torch", "fused_"$3"/"$2, $5, $5}'
done
