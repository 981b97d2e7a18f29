#!/usr/bin/env bash
# Device call 1 (2026-12-06, fourth session), pins 0001-0070 (.gpu/bins.tar.xz of 10:16 UTC; its
# gpu_bench still writes a `frac_copy` column of the H200's copy, which report.py now ignores and
# recomputes; the rebuilt one would not fit the 64 MiB a call carries beside the pack):
#   1. device_run.sh bench,sweep: the grid and the fine sweep beside PyTorch, every "% copy" now
#      against the copy speed measured on this GPU in the same run (ceiling.measure_copy_gbps);
#   2. ncu on the backward's worst points of the 2026-12-06 sweep (call 5 of ../2026-12-06-staged-pairs),
#      through the kernel harness of pins 0001-0070 at 7aa893c (.gpu/var/h_def.o.xz: the reduce's
#      bound read from the registry), the host's kernel choice, after the harness's tests;
#   3. the harness's tier sweep (every backward kernel whose row fits) at the 16-bit widths at
#      or below 55% of a same-bytes copy.
set -uo pipefail
source bench/scripts/device_env.sh
R=$OUT && st="$R/status.txt"
OUT=$R/run bash bench/scripts/device_run.sh bench,sweep > "$R/device_run.txt" 2>&1
echo "device_run bench,sweep rc=$? at ${SECONDS}s" >> "$st"
link_harness h_def || exit 1
timeout 200 /tmp/h_def --no-bench > "$R/tests-h_def.txt" 2>&1
echo "harness tests rc=$?: $(tail -1 "$R/tests-h_def.txt") at ${SECONDS}s" >> "$st"
SECTIONS="--section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats"
mkdir -p /tmp/ncu
for p in bf16:16761x1001 bf16:5591x3001 bf16:1366x12288 bf16:839x20000 bf16:512x32768 bf16:50383x333 f32:839x10000; do
  dt=${p%%:*} s=${p#*:}
  timeout 60 ncu $SECTIONS -k "regex:layernorm_bwd_[a-z0-9_]*_$dt\$" -c 3 /tmp/h_def --bench-only --dtypes "$dt" --shapes "$s" > "/tmp/ncu/ncu-$dt-$s-bwd.txt" 2>&1
  echo "ncu $dt $s rc=$? at ${SECONDS}s" >> "$st"
done
tar -C /tmp -czf "$R/ncu.tgz" ncu
S16=174763x96,172961x97,87382x192,83469x201,50383x333,16761x1001,5591x3001,2158x7777,1678x10000,1119x15001,839x20000,683x24576
[ $SECONDS -lt 430 ] && timeout 140 /tmp/h_def --bench-only --sweep --dtypes bf16 --shapes "$S16" > "$R/sweep-bwd-bf16.txt" 2>&1
echo "harness sweep rc=$? at ${SECONDS}s" >> "$st"
cat "$R/run/status.txt" >> "$st"
cat "$st"
