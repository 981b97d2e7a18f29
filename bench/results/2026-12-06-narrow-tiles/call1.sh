#!/usr/bin/env bash
# Device call 1 (2026-12-06, sixth session): the layer norm's backward of narrow rows by tiles of
# consecutive rows staged in shared memory (layer_norm_bwd.cuh, bwd_tile; the registry's
# LAYER_NORM_BWD_TILE_TIERS), from the tree of this commit, most important first (the session's
# device time was short: each step is packed as it ends, and the later ones are skipped past
# their start times):
#   1. tile_exp (.gpu/var/tile_exp.o.xz): tile tiers, tile sizes, rereading or not, against the
#      resident tier the host took before, checked against a double reference first; its mutant
#      tile_mut (copy_tile_out leaves the words a tile shares with its neighbours unwritten) on
#      the tests of two odd widths; then the timings beside a device copy of the same bytes;
#   2. the vendored CUDA tests of the layer norm (ops, layer_norm, fused_grads; .gpu/bins.tar.xz);
#   3. the kernel harness (.gpu/var/h_tile2.o.xz): the narrow sweep widths with the host's choice
#      (tile tiers) and with LN_NO_TILE=1 (the resident tiers), then every test;
#   4. the fine sweep's widths up to 1024 beside PyTorch's kernels (gpu_bench --sweep-to);
#   5. compute-sanitizer memcheck and racecheck on tile_exp's tests of two widths.
# Objects: `nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I candle-patch/candle-kernels/src -c`.
# Everything is packed into $OUT/call1.tgz beside status.txt (a call returns at most 8 files).
set -uo pipefail
source bench/scripts/device_env.sh
st="$OUT/status.txt"
L=/tmp/call1 && rm -rf $L && mkdir -p $L
B=/tmp/gpu-bins
pack() { cp "$OUT/device.txt" "$st" $L/ 2>/dev/null; tar -C /tmp -czf "$OUT/call1.tgz" call1; }
link_harness tile_exp && link_harness h_tile2 && link_harness tile_mut || exit 1
timeout 100 /tmp/tile_exp --no-bench --dtypes bf16,f16 > $L/tile-tests.txt 2>&1
echo "tile_exp tests rc=$? at ${SECONDS}s: $(grep '^tests:' $L/tile-tests.txt)" >> "$st"
grep FAIL $L/tile-tests.txt | head -5 >> "$st"
timeout 40 /tmp/tile_mut --no-bench --dtypes bf16 --test-cols 97,333 > $L/tile-mutant.txt 2>&1
echo "tile_exp mutant (copy_tile_out without its partial words) rc=$?: $(grep '^tests:' $L/tile-mutant.txt)" >> "$st"
timeout 80 /tmp/tile_exp --no-test --dtypes bf16,f16 > $L/tile-bench.txt 2>&1
echo "tile_exp bench rc=$? at ${SECONDS}s" >> "$st"
pack
rm -rf "$B" && mkdir -p "$B" && tar -C "$B" --strip-components=1 -xJf .gpu/bins.tar.xz
for t in ops layer_norm fused_grads; do
  timeout 90 "$B/candle-nn-$t" --test-threads=4 _gpu > $L/test-$t.txt 2>&1
  echo "vendored $t _gpu rc=$?: $(grep '^test result' $L/test-$t.txt) at ${SECONDS}s" >> "$st"
  grep -E "^test .*FAILED|panicked" $L/test-$t.txt | head -5 >> "$st"
done
pack
W16=524288x32,349526x48,262144x64,174763x96,172961x97,131072x128,87382x192,83469x201,65536x256,50383x333,43691x384,32768x512,21846x768,16384x1024
for d in bf16 f16; do
  timeout 40 /tmp/h_tile2 --bench-only --dtypes $d --shapes "$W16" > $L/bench-$d-tile.txt 2>&1
  LN_NO_TILE=1 timeout 40 /tmp/h_tile2 --bench-only --dtypes $d --shapes "$W16" > $L/bench-$d-resident.txt 2>&1
done
echo "harness bench at ${SECONDS}s" >> "$st"
pack
if [ $SECONDS -lt 330 ]; then
  timeout 150 /tmp/h_tile2 --no-bench > $L/harness-tests.txt 2>&1
  echo "harness tests rc=$?: $(tail -1 $L/harness-tests.txt) at ${SECONDS}s" >> "$st"
  grep FAIL $L/harness-tests.txt | head -5 >> "$st"
  pack
fi
if [ $SECONDS -lt 420 ]; then
  timeout 60 "$B/bench-bin-gpu_bench" --device cuda --sweep --sweep-to 1024 --dtypes bf16,f16,f32 --csv $L/sweep-candle.csv > $L/sweep-candle.log 2>&1
  echo "gpu_bench sweep rc=$? at ${SECONDS}s" >> "$st"
  timeout 60 python3 bench/scripts/sweep_torch.py --candle-csv $L/sweep-candle.csv --csv $L/sweep.csv > $L/sweep-torch.log 2>&1
  echo "sweep_torch rc=$? at ${SECONDS}s" >> "$st"
  pack
fi
for tool in memcheck racecheck; do
  [ $SECONDS -lt 500 ] || break
  timeout 40 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/tile_exp --dtypes bf16 --test-cols 97,333 --no-bench > $L/sanitizer-$tool.txt 2>&1
  echo "compute-sanitizer $tool tile_exp rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/sanitizer-$tool.txt | head -1) at ${SECONDS}s" >> "$st"
  pack
done
# 6. (added 2026-12-06, seventh session) tile_exp built with -DTILE_COLS (.gpu/var/tile_cols.o.xz):
#    the column-phase variant k_tile_cols (dw / db by the block's columns, rows to 1024 columns).
if [ $SECONDS -lt 540 ] && link_harness tile_cols; then
  timeout 30 /tmp/tile_cols --no-bench --dtypes bf16 --test-cols 97,333,1001 > $L/cols-tests.txt 2>&1
  echo "tile_cols tests rc=$?: $(grep '^tests:' $L/cols-tests.txt) at ${SECONDS}s" >> "$st"
  grep FAIL $L/cols-tests.txt | head -5 >> "$st"
  timeout 30 /tmp/tile_cols --no-test --dtypes bf16 --cols 96,97,192,201,333,384,512,1000,1001,1024 > $L/cols-bench.txt 2>&1
  echo "tile_cols bench rc=$? at ${SECONDS}s" >> "$st"
  pack
fi
cat "$st"
