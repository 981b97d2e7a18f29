#!/usr/bin/env bash
# Device call (2026-12-04 afternoon): the span's whole-word accesses without store_words' and
# load_words' alignment branches (h_s1.o: a plain uint4 store / __ldg, the span's words are
# 16-byte aligned by construction) and with the store as inline PTX st.global.v4.b32 (h_s2.o),
# against pin 0054 (h_v6.o). ncu showed the shipped l128v3s words instance storing slot 0 of
# dx as four 32-bit STG.E (4x the sectors). Tests of s1 and s2, then the three benched
# alternating, two rounds, then ncu's SASS page of the backward at bf16 5591x3001 for s1 and s2.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
st="$OUT/status.txt"
for v in h_v6 h_s1 h_s2; do
  xz -dc .gpu/var/$v.o.xz > /tmp/$v.o && nvcc -arch=sm_90 /tmp/$v.o -o /tmp/$v || echo "link $v failed" | tee -a "$st"
done
for v in h_s1 h_s2; do
  timeout 200 /tmp/$v --no-bench > "$OUT/tests-$v.txt" 2>&1
  echo "tests $v rc=$?: $(tail -1 "$OUT/tests-$v.txt")" | tee -a "$st"
done
SHAPES=6711x2501,5591x3001,4194x4001,2796x6001,2158x7777,1678x9999,1119x15001,5593x3000,4096x4096,16762x1001
for round in 1 2; do
  for v in h_v6 h_s1 h_s2; do
    timeout 120 /tmp/$v --bench-only --shapes $SHAPES 2>&1 | grep "^bench" > "$OUT/bench-$v-$round.txt"
    echo "bench $v round $round rc=$?" >> "$st"
  done
done
mkdir -p /tmp/n
for v in h_s1 h_s2; do
  timeout 150 ncu --section SourceCounters --page source --print-source sass --csv -k "regex:layernorm_bwd_[a-z0-9_]*_bf16\$" -c 1 /tmp/$v --bench-only --shapes 5591x3001 > "/tmp/n/sass-$v.csv" 2>&1
  echo "ncu $v rc=$?" >> "$st"
  echo "$v: $(grep -c 'STG.E.128' /tmp/n/sass-$v.csv) STG.E.128, $(grep -c '"  *STG.E desc' /tmp/n/sass-$v.csv) STG.E (32-bit) in the SASS" | tee -a "$st"
done
cd /tmp/n && tar -czf "$OUT/ncu.tgz" . 
cat "$st"
