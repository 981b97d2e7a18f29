#!/usr/bin/env bash
# Device call 2 (2026-12-04 afternoon): call 1's variants failed the harness's misaligned-pointer
# tests (blocks that do not take spans go through load_span / store_span with phase 0 on rows
# at any alignment). D: the whole-word fast path (a plain __ldg of a uint4, the store as inline
# PTX st.global.v4.b32) only where the block takes spans (block-uniform flag), store_words /
# load_words otherwise; C: element by element otherwise. Tests of both (D also under
# compute-sanitizer memcheck), then pin 0054 (h_v6), D and C benched alternating, two rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
st="$OUT/status.txt"
for v in h_v6 h_sD h_sC; do
  xz -dc .gpu/var/$v.o.xz > /tmp/$v.o && nvcc -arch=sm_90 /tmp/$v.o -o /tmp/$v || echo "link $v failed" | tee -a "$st"
done
for v in h_sD h_sC; do
  timeout 200 /tmp/$v --no-bench > "$OUT/tests-$v.txt" 2>&1
  echo "tests $v rc=$?: $(tail -1 "$OUT/tests-$v.txt")" | tee -a "$st"
done
SHAPES=6711x2501,5591x3001,4194x4001,2796x6001,2158x7777,1678x9999,1119x15001,5593x3000,4096x4096,16762x1001,8385x2001
for round in 1 2; do
  for v in h_v6 h_sD h_sC; do
    timeout 120 /tmp/$v --bench-only --shapes $SHAPES 2>&1 | grep "^bench" > "$OUT/bench-$v-$round.txt"
    echo "bench $v round $round rc=$?" >> "$st"
  done
done
timeout 400 compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/h_sD --no-bench > /tmp/memcheck-h_sD.txt 2>&1
echo "memcheck h_sD rc=$?: $(grep -E 'ERROR SUMMARY|tests:' /tmp/memcheck-h_sD.txt | tr '\n' ' ')" | tee -a "$st"
tail -5 /tmp/memcheck-h_sD.txt > "$OUT/memcheck-h_sD-tail.txt"
cat "$st"
