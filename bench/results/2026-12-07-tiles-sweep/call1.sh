#!/usr/bin/env bash
# Device call 1 of 2026-12-07 (ninth session of issue 14), from the branch tiles2: l32v4t (16-bit
# rows of 513-1024 columns without 8-byte vectors) in the registry with the host's tile rule.
#   1. the vendored CUDA tests of the layer norm (.gpu/bins.tar.xz of this tree, pins 0001-0071);
#   2. the fine sweep 64-65536 beside PyTorch's kernels with the rule (device_run.sh sweep);
#   3. every kernel-harness test (.gpu/var/h_tile3.o.xz: this tree's kernels, built at 7dd9c91);
#   4. the harness at the narrow widths with the rule, LN_NO_TILE=1 (resident tiers) and
#      LN_TILE_ANY=1, and h_tb8 (LAYER_NORM_BWD_TILE_BYTES 8192 instead of 16384) with the rule;
#   5. compute-sanitizer memcheck and racecheck on the vendored ln_tiles_16bit_gpu;
#   6. ncu of the backward kernels at the sweep's worst points (bf16, f16, f32).
# Packed into $OUT/call1.tgz after each step, status.txt beside it.
# A/B table: python3 bench/kernel-harness/ab_table.py call1 bf16-resident bf16-rule bf16-any bf16-tb8
set -uo pipefail
source bench/scripts/device_env.sh
L=/tmp/call1 && rm -rf $L && mkdir -p $L
st="$L/status.txt"
pack() { tar -C /tmp -czf "$OUT/call1.tgz" call1; cp "$st" "$OUT/status.txt"; }
cp "$OUT/device.txt" $L/
link_harness h_tile3 || exit 1
link_harness h_tb8 || echo "no h_tb8" >> "$st"
B=/tmp/gpu-bins
rm -rf "$B" && mkdir -p "$B" && tar -C "$B" --strip-components=1 -xJf .gpu/bins.tar.xz
for t in ops layer_norm fused_grads; do
  timeout 90 "$B/candle-nn-$t" --test-threads=4 _gpu > $L/test-$t.txt 2>&1
  echo "vendored $t _gpu rc=$?: $(grep '^test result' $L/test-$t.txt) at ${SECONDS}s" >> "$st"
  grep -E "^test .*FAILED|panicked" $L/test-$t.txt | head -5 >> "$st"
done
pack
OUT=$L/run timeout 120 bash bench/scripts/device_run.sh sweep > $L/device_run.txt 2>&1
echo "device_run sweep rc=$? at ${SECONDS}s" >> "$st"
grep -A12 "^dtype dir" $L/run/sweep-torch.log >> "$st" 2>/dev/null
pack
timeout 150 /tmp/h_tile3 --no-bench > $L/harness-tests.txt 2>&1
echo "harness tests rc=$?: $(tail -1 $L/harness-tests.txt) at ${SECONDS}s" >> "$st"
grep FAIL $L/harness-tests.txt | head -5 >> "$st"
pack
W=254201x66,233017x72,209716x80,172961x97,167773x100,149797x112,139811x120,132105x127,123362x136,104858x160,95326x176,83887x200,74899x224,72316x232,67109x250,65794x255,65281x257,55925x300,52429x320,50534x332,50383x333,49933x336,37450x448,33555x500,32833x511,32705x513,27963x600,26215x640,23968x700,21846x768,21593x777,16795x999,16778x1000,16761x1001,16711x1004,16401x1023
for m in rule resident any tb8; do
  h=/tmp/h_tile3; e=()
  case $m in resident) e=(LN_NO_TILE=1) ;; any) e=(LN_TILE_ANY=1) ;; tb8) h=/tmp/h_tb8 ;; esac
  [ -x $h ] && env ${e[@]+"${e[@]}"} timeout 60 $h --bench-only --dtypes bf16 --shapes "$W" > $L/bench-bf16-$m-1.txt 2>&1
done
for m in rule resident; do
  [ $m = resident ] && e=(LN_NO_TILE=1) || e=()
  env ${e[@]+"${e[@]}"} timeout 60 /tmp/h_tile3 --bench-only --dtypes f16 --shapes "$W" > $L/bench-f16-$m-1.txt 2>&1
done
echo "harness bench at ${SECONDS}s" >> "$st"
pack
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 1 $B/candle-nn-ops --test-threads=1 ln_tiles_16bit_gpu > $L/sanitizer-vendored-$tool.txt 2>&1
  echo "compute-sanitizer $tool ops ln_tiles_16bit_gpu rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' $L/sanitizer-vendored-$tool.txt | head -2 | tr '\n' ' ') at ${SECONDS}s" >> "$st"
  pack
done
# ncu at the sweep's worst backward points (ours % of a same-bytes copy), two per dtype.
mkdir -p $L/ncu
pts=$(python3 - "$L/run/sweep.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["level"] == "bwd"]
out = []
for d in ("bf16", "f16", "f32"):
    rs = sorted((r for r in rows if r["dtype"] == d), key=lambda r: float(r["ours_gbps"]) / float(r["copy_gbps"]))
    out += [f'{d}:{r["rows"]}x{r["cols"]}' for r in rs[:2]]
print(" ".join(out))
PY
)
echo "ncu points: $pts" >> "$st"
for p in $pts; do
  [ $SECONDS -gt 540 ] && break
  timeout 30 ncu -k regex:bwd --launch-count 3 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    /tmp/h_tile3 --bench-only --dtypes "${p%%:*}" --shapes "${p#*:}" > "$L/ncu/${p/:/-}.txt" 2>&1
  echo "ncu $p rc=$? at ${SECONDS}s" >> "$st"
  pack
done
pack
cat "$st"
