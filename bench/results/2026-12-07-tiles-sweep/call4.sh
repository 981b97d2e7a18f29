#!/usr/bin/env bash
# NOT RUN: every device start after call 3 was refused (2026-12-07 04:03-04:37 UTC).
# Device call 4 of 2026-12-07, the binaries of calls 1-3: the fine sweep in three passes
# (device_run.sh sweep from aba5848: each point the median of three passes of ours, of
# PyTorch's kernels and of the same-bytes copy), twice, to see whether the per-point medians hold
# from one run to the next where single passes did not (calls 1-3).
set -uo pipefail
source bench/scripts/device_env.sh
L=/tmp/call4 && rm -rf $L && mkdir -p $L
cp "$OUT/device.txt" $L/
for run in 1 2; do
  [ $run = 2 ] && [ $SECONDS -gt 120 ] && break # the second run only if the device time allows
  OUT=$L/run$run timeout 200 bash bench/scripts/device_run.sh sweep > $L/device_run-$run.txt 2>&1
  echo "device_run sweep (3 passes) run $run rc=$? at ${SECONDS}s" >> $L/status.txt
  tar -C $L/run$run -xzf $L/run$run/logs.tgz && rm $L/run$run/logs.tgz
  grep -A9 "^dtype dir" $L/run$run/sweep-torch.log >> $L/status.txt
  tar -C /tmp -czf "$OUT/call4.tgz" call4
done
cat $L/status.txt
