#!/usr/bin/env bash
# Device call 1 (2026-12-06, fifth session): the backward of rows past the widest tier on
# thread-block clusters (sm_90), pin 0071. Ran from commit bda9ab7 (the harness object h_cl1 and
# .gpu/bins.tar.xz built there; pin 0071 was reverted after this call). It writes more than the
# 8 files a device call returns: only the bench-*.txt, cluster_exp.txt and device.txt came back.
#   1. bench/kernel-harness/cluster_exp.cu (.gpu/var/cluster_exp.o.xz): cluster kernels of several
#      tiers and sizes against the split backward and l1024v4s, same process, each with its
#      parameter reduce, checked against a double reference first;
#   2. the kernel harness with the cluster backward (.gpu/var/h_cl1.o.xz): every test, then the
#      wide sweep widths with the host's choice and with LN_NO_CLUSTER=1 (the split backward);
#   3. the vendored CUDA tests of the layer norm, RMS norm and their gradients (.gpu/bins.tar.xz,
#      pins 0001-0071);
#   4. the fine sweep's hidden sizes from 10000 beside PyTorch's kernels (gpu_bench --sweep-from);
#   5. compute-sanitizer memcheck and racecheck on the cluster kernels (cluster_exp, one width).
set -uo pipefail
source bench/scripts/device_env.sh
st="$OUT/status.txt"
B=/tmp/gpu-bins
rm -rf "$B" && mkdir -p "$B" && tar -C "$B" --strip-components=1 -xJf .gpu/bins.tar.xz
link_harness cluster_exp && link_harness h_cl1 || exit 1
timeout 120 /tmp/cluster_exp > "$OUT/cluster_exp.txt" 2>&1
echo "cluster_exp rc=$? at ${SECONDS}s: $(grep '^tests:' "$OUT/cluster_exp.txt")" >> "$st"
timeout 150 /tmp/h_cl1 --no-bench > "$OUT/tests-h_cl1.txt" 2>&1
echo "harness tests rc=$?: $(tail -1 "$OUT/tests-h_cl1.txt") at ${SECONDS}s" >> "$st"
grep FAIL "$OUT/tests-h_cl1.txt" | head -5 >> "$st"
W=1119x15001,1024x16384,839x20000,683x24576,560x30001,512x32768,420x40000,342x49152,336x50000,257x65535,256x65536
for d in bf16 f16 f32; do
  timeout 40 /tmp/h_cl1 --bench-only --dtypes $d --shapes "$W" > "$OUT/bench-$d-cluster.txt" 2>&1
  LN_NO_CLUSTER=1 timeout 40 /tmp/h_cl1 --bench-only --dtypes $d --shapes "$W" > "$OUT/bench-$d-split.txt" 2>&1
done
echo "harness bench at ${SECONDS}s" >> "$st"
for t in fused_grads layer_norm ops; do
  timeout 100 "$B/candle-nn-$t" --test-threads=4 _gpu > "$OUT/test-$t.txt" 2>&1
  echo "vendored $t _gpu rc=$?: $(grep '^test result' "$OUT/test-$t.txt") at ${SECONDS}s" >> "$st"
  grep -E "^test .*FAILED" "$OUT/test-$t.txt" | head -5 >> "$st"
done
if [ $SECONDS -lt 330 ]; then
  timeout 100 "$B/bench-bin-gpu_bench" --device cuda --sweep --sweep-from 10000 --dtypes f32,bf16,f16 --csv "$OUT/sweep-candle.csv" > "$OUT/sweep-candle.log" 2>&1
  echo "gpu_bench sweep rc=$? at ${SECONDS}s" >> "$st"
  timeout 100 python3 bench/scripts/sweep_torch.py --candle-csv "$OUT/sweep-candle.csv" --csv "$OUT/sweep.csv" > "$OUT/sweep-torch.log" 2>&1
  echo "sweep_torch rc=$? at ${SECONDS}s" >> "$st"
fi
for tool in memcheck racecheck; do
  [ $SECONDS -lt 470 ] || break
  timeout 50 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/cluster_exp --dtypes bf16 --test-cols 65535 --no-bench > "$OUT/sanitizer-$tool.txt" 2>&1
  echo "compute-sanitizer $tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.txt" | head -1) at ${SECONDS}s" >> "$st"
done
cat "$st"
