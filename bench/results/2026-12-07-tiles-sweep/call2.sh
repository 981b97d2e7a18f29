#!/usr/bin/env bash
# Device call 2 of 2026-12-07, the same tree and binaries as call 1 (branch tiles2, 413afb8):
#   1. the fine sweep again (a replicate of call 1's, for the spread);
#   2. ncu of the backward kernels (h_tile3) at call 1's worst sweep points and at points near
#      the 16-bit median;
#   3. the harness's narrow widths again, rule against resident (bf16), a replicate of call 1's.
set -uo pipefail
source bench/scripts/device_env.sh
L=/tmp/call2 && rm -rf $L && mkdir -p $L
st="$L/status.txt"
pack() { tar -C /tmp -czf "$OUT/call2.tgz" call2; cp "$st" "$OUT/status.txt"; }
cp "$OUT/device.txt" $L/
link_harness h_tile3 || exit 1
OUT=$L/run timeout 120 bash bench/scripts/device_run.sh sweep > $L/device_run.txt 2>&1
echo "device_run sweep rc=$? at ${SECONDS}s" >> "$st"
tar -C $L/run -xzf $L/run/logs.tgz sweep-torch.log sweep.csv 2>/dev/null
grep -A7 "^dtype dir" $L/run/sweep-torch.log >> "$st" 2>/dev/null
pack
mkdir -p $L/ncu
for p in bf16:560x30001 bf16:2158x7777 bf16:1119x15001 bf16:1366x12288 bf16:683x24576 bf16:839x20000 \
  bf16:5593x3000 bf16:2731x6144 f32:560x15001 f32:683x12288 f32:1079x7777; do
  timeout 40 ncu -k regex:bwd --launch-count 3 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    /tmp/h_tile3 --bench-only --dtypes "${p%%:*}" --shapes "${p#*:}" > "$L/ncu/${p/:/-}.txt" 2>&1
  echo "ncu $p rc=$? at ${SECONDS}s" >> "$st"
done
pack
W=254201x66,233017x72,209716x80,172961x97,149797x112,132105x127,123362x136,95326x176,74899x224,67109x250,65281x257,55925x300,50383x333,37450x448,32833x511,32705x513,27963x600,21846x768,21593x777,16795x999,16778x1000,16761x1001,16401x1023
for m in rule resident; do
  [ $m = resident ] && e=(LN_NO_TILE=1) || e=()
  env ${e[@]+"${e[@]}"} timeout 60 /tmp/h_tile3 --bench-only --dtypes bf16 --shapes "$W" > $L/bench-bf16-$m-2.txt 2>&1
done
echo "harness bench at ${SECONDS}s" >> "$st"
pack
cat "$st"
