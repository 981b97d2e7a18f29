#!/usr/bin/env bash
# Device call 4: pin 0052's family_bench (`old`: softmax rows of 16-bit odd widths element by
# element in the tiers, past 32768 columns the streaming kernel) and pin 0053's (`new`, words
# instances), alternating, two rounds. Both binaries come as .gpu/prev/family_bench_<pin>.xz.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/ab && mkdir -p $B "$OUT/ab"
xz -dc .gpu/prev/family_bench_0052.xz > $B/fold && xz -dc .gpu/prev/family_bench_0053.xz > $B/fnew
chmod +x $B/*
for r in 1 2; do
  for v in old new; do
    timeout 200 $B/f$v --device cuda --csv "$OUT/ab/family_$v-$r.csv" > "$OUT/ab/family_$v-$r.txt" 2>&1
    echo "family $v-$r rc=$?" | tee -a "$OUT/status.txt"
  done
done
tar -C "$OUT" -czf "$OUT/ab.tgz" ab && rm -rf "$OUT/ab"
cat "$OUT/status.txt"
