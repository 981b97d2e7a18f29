#!/bin/bash
# ab.sh FILTER LABEL=BIN [LABEL=BIN ...]: criterion medians (µs) per binary, one line per bench.
# Two threads from a worker of a rayon pool (LN_CPU_IN_POOL=1, as tft runs); with ONE_THREAD=1
# one thread (RAYON_NUM_THREADS=1, no pool).
filter=$1; shift
cd "$(dirname "$0")/../../.."
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456
if [ -n "${ONE_THREAD:-}" ]; then export RAYON_NUM_THREADS=1; else export LN_CPU_IN_POOL=1; fi
for lb in "$@"; do
  label=${lb%%=*}; bin=${lb#*=}
  (cd bench && $bin --bench "$filter" --warm-up-time 1 --measurement-time 2 --noplot --discard-baseline 2>/dev/null) |
    awk -v l=$label '/^layer_norm_cpu\// {name=$1; sub("layer_norm_cpu/","",name)} /^ +time:/ && name!="" {v=$4; u=$5; if(u=="ms") v=v*1000; printf "%s %s %.1f\n", l, name, v; name=""}'
done
