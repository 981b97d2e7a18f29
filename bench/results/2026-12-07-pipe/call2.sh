#!/usr/bin/env bash
# Device call 2 (issue 14), only on an H200: (1) the kernel harness tests (h_ship = this tree's
# kernels) and the sanitizer steps that call D of 18:10 UTC did not reach in its time
# (racecheck of candle-nn's ops tests, memcheck of candle-core's column sums and broadcasts,
# AdamW, LSTM); (2) the bulk-copy pipeline experiments, tests and one bench round.
#   carry: .gpu/bins.tar.xz .gpu/var/h_ship.o.xz .gpu/var/pipe_exp.o.xz .gpu/var/pipe_fwd_exp.o.xz
set -uo pipefail
source bench/scripts/device_env.sh
call_log call2
grep -q H200 "$L/device.txt" || { echo "not an H200: $(sed -n 3p "$L/device.txt")" >> "$st"; pack; cat "$st"; exit 3; }
link_harness h_ship && timeout 100 /tmp/h_ship --no-bench > $L/tests-h_ship.txt 2>&1
echo "harness tests h_ship rc=$?: $(tail -n 1 $L/tests-h_ship.txt) at ${SECONDS}s" >> "$st"; pack
for e in pipe_exp pipe_fwd_exp; do
  link_harness $e || continue
  timeout 100 /tmp/$e --no-bench > $L/tests-$e.txt 2>&1
  echo "$e tests rc=$?: $(grep '^tests:' $L/tests-$e.txt) at ${SECONDS}s" >> "$st"
  timeout 100 /tmp/$e --no-test > $L/bench-$e.txt 2>&1
  echo "$e bench rc=$? at ${SECONDS}s" >> "$st"; pack
done
B=/tmp/gpu-bins
rm -rf "$B" && mkdir -p "$B" && tar -C "$B" --strip-components=1 -xJf .gpu/bins.tar.xz
san() { # name tool binary filters..
  local n=$1 tool=$2 bin=$3; shift 3
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 1 "$B/$bin" --test-threads=1 "$@" > $L/$n.log 2>&1
  echo "$n rc=$? at ${SECONDS}s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^test result' $L/$n.log | tr '\n' ' ')" >> "$st"; pack
}
san racecheck-candle-nn-ops racecheck candle-nn-ops ln_ lno_
san memcheck-candle-core-tensor_tests memcheck candle-core-tensor_tests sum_dims binary_broadcast
san memcheck-candle-nn-optim memcheck candle-nn-optim _gpu
san memcheck-candle-nn-rnn memcheck candle-nn-rnn _gpu
cat "$st"; grep -h FAIL $L/tests-*.txt | head -20
