#!/bin/bash
# usage: ab.sh filter rounds binA binB ...  -> lines: bin bench median_us min_us (from criterion's sample.json)
export GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=268435456 LN_CPU_IN_POOL=1
f=$1; r=$2; shift 2
cd /work/main
for i in $(seq $r); do for b in "$@"; do
  rm -rf target/criterion/layer_norm_cpu
  $b --bench "$f" --warm-up-time 0.3 --measurement-time 1 --sample-size 20 --noplot >/dev/null 2>&1
  python3 - $(basename $b) <<'PY'
import json,glob,sys,statistics,os
for p in sorted(glob.glob("target/criterion/layer_norm_cpu/*/*/new/sample.json")):
    s=json.load(open(p)); per=[t/i/1e3 for t,i in zip(s["times"],s["iters"])]
    parts=p.split("/"); print(sys.argv[1], parts[3]+"/"+parts[4], round(statistics.median(per),1), round(min(per),1))
PY
done; done
