#!/usr/bin/env bash
# Device call 1 (2026-12-04, afternoon): (a) the new vendored test layer_norm_many_rows_16bit on
# the shipped build (pin 0054 + the test) and on a mutant whose span partials are written back
# unshifted (it must fail there); (b) the kernel harness with the backward's `s` tiers able to
# run in thread-block clusters (h_cl.o, bench-only switch LN_BWD_CLUSTER=C): tests at C = 1, 2, 4,
# then C = 1, 2, 4 benched alternating, two rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
st="$OUT/status.txt"
B=/tmp/gpu-bins; mkdir -p $B; xz -dc .gpu/var/ops.xz > $B/candle-nn-ops; chmod +x $B/candle-nn-ops
timeout 300 "$B/candle-nn-ops" layer_norm ln_ --test-threads 1 > "$OUT/vendored-ops-ln.txt" 2>&1
echo "vendored ops (ln) rc=$?" | tee -a "$st"
grep -E "^test .*(16bit|grad_gpu|many_rows)" "$OUT/vendored-ops-ln.txt" | tee -a "$st"
xz -dc .gpu/var/mut-ops.xz > /tmp/mut-ops && chmod +x /tmp/mut-ops
timeout 200 /tmp/mut-ops ln_ --test-threads 1 > "$OUT/mutant-ops-ln.txt" 2>&1
echo "MUTANT ops (ln) rc=$? (must fail)" | tee -a "$st"
grep -E "^test .*gpu" "$OUT/mutant-ops-ln.txt" | tee -a "$st"
xz -dc .gpu/var/h_cl.o.xz > /tmp/h_cl.o && nvcc -arch=sm_90 /tmp/h_cl.o -o /tmp/h_cl || echo "link failed" | tee -a "$st"
for c in 2 4 1; do
  LN_BWD_CLUSTER=$c timeout 240 /tmp/h_cl --no-bench > "$OUT/tests-c$c.txt" 2>&1
  echo "harness tests cluster $c rc=$?: $(tail -1 "$OUT/tests-c$c.txt")" | tee -a "$st"
done
SHAPES=6711x2501,5591x3001,4194x4001,2796x6001,2158x7777,1678x9999,1119x15001,5593x3000,4096x4096,1024x8192
for round in 1 2; do
  for c in 1 2 4; do
    LN_BWD_CLUSTER=$c LN_BWD_CLUSTER_INFO=1 timeout 120 /tmp/h_cl --bench-only --shapes $SHAPES > "$OUT/bench-c$c-$round.txt" 2>&1
    echo "bench cluster $c round $round rc=$?" >> "$st"
  done
done
cat "$st"
