#!/usr/bin/env bash
# Device call D of 2026-12-07's third session (issue 14): call A's checks again, only if the
# machine lent is an H200 (calls A-C were given H100s); on any other GPU it stops at once.
#   1. device_run.sh tests (.gpu/bins.tar.xz of this tree);  2. kernel harness tests (h_ship);
#   3. device_run.sh sanitizer, as far as the call's time goes.
#   carry: .gpu/bins.tar.xz .gpu/var/h_ship.o.xz
set -uo pipefail
source bench/scripts/device_env.sh
call_log callD
grep -q H200 "$L/device.txt" || { echo "not an H200: $(sed -n 3p "$L/device.txt")" >> "$st"; pack; cat "$st"; exit 3; }
OUT=$L/tests timeout 150 bash bench/scripts/device_run.sh tests > $L/device_run-tests.txt 2>&1
echo "device_run tests rc=$? at ${SECONDS}s" >> "$st"; cat $L/tests/status.txt >> "$st"; pack
link_harness h_ship && timeout 100 /tmp/h_ship --no-bench > $L/tests-h_ship.txt 2>&1
echo "harness tests h_ship rc=$?: $(tail -1 $L/tests-h_ship.txt) at ${SECONDS}s" >> "$st"; pack
OUT=$L/san timeout ${SAN_S:-240} bash bench/scripts/device_run.sh sanitizer > $L/device_run-san.txt 2>&1
echo "device_run sanitizer rc=$? at ${SECONDS}s" >> "$st"; cat $L/san/status.txt >> "$st"; pack
cat "$st"
