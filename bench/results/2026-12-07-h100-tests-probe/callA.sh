#!/usr/bin/env bash
# Device call A of 2026-12-07's third session (issue 14): issue 14's correctness criteria on an
# H200 for pins 0001-0071 (nothing in the kernels changed since 2026-12-07 morning's H100 run).
#   1. every kernel-harness test of this tree (.gpu/var/h_ship.o.xz);
#   2. device_run.sh tests,sanitizer (.gpu/bins.tar.xz of this tree): vendored candle tests, shim
#      and TFT tests on the GPU, compute-sanitizer memcheck + racecheck on the layer-norm tests;
#   3. every kernel-harness test of h_exp = this tree + the sweep candidates of
#      ../2026-12-07-sweep-passes/fwd-p-tiers.diff and blocks/h_m2-tiers.diff (the 16-bit tests
#      that stopped h_m2 before the harness fix 5403808).
#   carry: .gpu/bins.tar.xz .gpu/var/h_ship.o.xz .gpu/var/h_exp.o.xz
set -uo pipefail
source bench/scripts/device_env.sh
call_log callA
link_harness h_ship && {
  timeout 120 /tmp/h_ship --no-bench > $L/tests-h_ship.txt 2>&1
  echo "harness tests h_ship rc=$?: $(tail -1 $L/tests-h_ship.txt) at ${SECONDS}s" >> "$st"
  grep FAIL $L/tests-h_ship.txt | head -5 >> "$st"
}
pack
OUT=$L/run timeout 330 bash bench/scripts/device_run.sh tests,sanitizer > $L/device_run.txt 2>&1
echo "device_run tests,sanitizer rc=$? at ${SECONDS}s" >> "$st"
cat $L/run/status.txt >> "$st"
pack
link_harness h_exp && {
  timeout $((560 - SECONDS)) /tmp/h_exp --no-bench > $L/tests-h_exp.txt 2>&1
  echo "harness tests h_exp rc=$?: $(tail -1 $L/tests-h_exp.txt) at ${SECONDS}s" >> "$st"
  grep FAIL $L/tests-h_exp.txt | head -5 >> "$st"
}
pack
cat "$st"
