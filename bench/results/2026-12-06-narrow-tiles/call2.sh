#!/usr/bin/env bash
# Superseded: ../2026-12-07-tiles-sweep/call1.sh ran these steps (2026-12-07 03:40 UTC).
# NOT RUN: the session's device time ended in refused starts (2026-12-07 01:50 UTC). Written for
# the tree of 0a333a8, where the registry had l32v4t; main ships without it (the harness object
# and bins named below are of 0a333a8: rebuild them from a tree with l32v4t before running this).
# Device call 2 (2026-12-07): the tile tiers with the host's rule of this commit (layer_norm_cuda.rs,
# tile_tier: the first tile tier that holds the row, where the row fills more than half of it and
# has no 8-byte vectors or leaves lanes of a one-vector tier idle; l32v4t added for 513-1024):
#   1. the vendored CUDA tests of the layer norm (.gpu/bins.tar.xz, pins 0001-0071);
#   2. compute-sanitizer memcheck and racecheck on tile_exp's tests at 1001 columns
#      (.gpu/var/tile_exp.o.xz, built at 238317d: bwd_tile's 32 x 4 rereading layout, l32v4t's);
#   3. every kernel-harness test (.gpu/var/h_tile3.o.xz);
#   4. the harness at widths call 1 did not time, with the rule, with LN_NO_TILE=1 (the resident
#      tiers) and LN_TILE_ANY=1 (a tile tier wherever one holds the row), 32 MiB tensors;
#   5. compute-sanitizer on the vendored ln_tiles_16bit_gpu, then device_run.sh sweep.
# (Ordered for a short call: refused starts left 344 s of device time.)
# Packed into $OUT/call2.tgz after each step, status.txt beside it.
# A/B table: python3 bench/kernel-harness/ab_table.py call2 bf16-resident bf16-rule bf16-any
set -uo pipefail
source bench/scripts/device_env.sh
L=/tmp/call2 && rm -rf $L && mkdir -p $L
st="$L/status.txt"
pack() { tar -C /tmp -czf "$OUT/call2.tgz" call2; cp "$st" "$OUT/status.txt"; }
link_harness h_tile3 && link_harness tile_exp || exit 1
W=254201x66,233017x72,209716x80,172961x97,167773x100,149797x112,139811x120,132105x127,123362x136,104858x160,95326x176,83887x200,74899x224,72316x232,67109x250,65794x255,65281x257,55925x300,52429x320,50534x332,50383x333,49933x336,37450x448,33555x500,32833x511,32705x513,27963x600,26215x640,23968x700,21846x768,21593x777,16795x999,16778x1000,16761x1001,16711x1004,16401x1023
B=/tmp/gpu-bins
rm -rf "$B" && mkdir -p "$B" && tar -C "$B" --strip-components=1 -xJf .gpu/bins.tar.xz
for t in ops layer_norm fused_grads; do
  timeout 90 "$B/candle-nn-$t" --test-threads=4 _gpu > $L/test-$t.txt 2>&1
  echo "vendored $t _gpu rc=$?: $(grep '^test result' $L/test-$t.txt) at ${SECONDS}s" >> "$st"
  grep -E "^test .*FAILED|panicked" $L/test-$t.txt | head -5 >> "$st"
done
pack
for tool in memcheck racecheck; do
  timeout 40 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/tile_exp --dtypes bf16 --test-cols 1001 --no-bench > $L/sanitizer-$tool.txt 2>&1
  echo "compute-sanitizer $tool tile_exp 1001 rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/sanitizer-$tool.txt | head -1) at ${SECONDS}s" >> "$st"
done
pack
timeout 150 /tmp/h_tile3 --no-bench > $L/harness-tests.txt 2>&1
echo "harness tests rc=$?: $(tail -1 $L/harness-tests.txt) at ${SECONDS}s" >> "$st"
grep FAIL $L/harness-tests.txt | head -5 >> "$st"
pack
for m in rule resident any; do
  case $m in rule) e=() ;; resident) e=(LN_NO_TILE=1) ;; any) e=(LN_TILE_ANY=1) ;; esac
  env ${e[@]+"${e[@]}"} timeout 60 /tmp/h_tile3 --bench-only --dtypes bf16 --shapes "$W" > $L/bench-bf16-$m-1.txt 2>&1
done
for m in rule resident; do
  [ $m = resident ] && e=(LN_NO_TILE=1) || e=()
  env ${e[@]+"${e[@]}"} timeout 60 /tmp/h_tile3 --bench-only --dtypes f16 --shapes "$W" > $L/bench-f16-$m-1.txt 2>&1
done
echo "harness bench at ${SECONDS}s" >> "$st"
pack
# The vendored test of the tile tiers alone under the sanitizers (device_run.sh's sanitizer
# phase runs it among every ln_ / lno_ test of ops).
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 1 $B/candle-nn-ops --test-threads=1 ln_tiles_16bit_gpu > $L/sanitizer-vendored-$tool.txt 2>&1
  echo "compute-sanitizer $tool ops ln_tiles_16bit_gpu rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/sanitizer-vendored-$tool.txt | head -1) at ${SECONDS}s" >> "$st"
  pack
done
# The fine sweep beside PyTorch's kernels with the time left.
OUT=$L/run timeout $((590 - SECONDS)) bash bench/scripts/device_run.sh sweep > $L/device_run.txt 2>&1
echo "device_run sweep rc=$? at ${SECONDS}s" >> "$st"
cat $L/run/status.txt >> "$st" 2>/dev/null
pack
cat "$st"
