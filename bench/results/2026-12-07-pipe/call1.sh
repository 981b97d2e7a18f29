#!/usr/bin/env bash
# Device call 1 (issue 14): the bulk-copy pipeline experiments (bench/kernel-harness/pipe_exp.cu,
# the backward; pipe_fwd_exp.cu, the forward; objects built here with `nvcc -O3 -std=c++17
# -gencode arch=compute_90,code=sm_90 -c`) against the shipped resident tiers: their tests,
# then the bench, two rounds.
#   carry: .gpu/var/pipe_exp.o.xz .gpu/var/pipe_fwd_exp.o.xz
set -uo pipefail
source bench/scripts/device_env.sh
call_log call1
for e in pipe_exp pipe_fwd_exp; do
  link_harness $e || continue
  timeout 100 /tmp/$e --no-bench > $L/tests-$e.txt 2>&1
  echo "$e tests rc=$?: $(grep '^tests:' $L/tests-$e.txt) at ${SECONDS}s" >> "$st"; pack
done
for round in 1 2; do
  for e in pipe_exp pipe_fwd_exp; do
    timeout 100 /tmp/$e --no-test > $L/bench-$e-$round.txt 2>&1
    echo "$e bench round $round rc=$? at ${SECONDS}s" >> "$st"; pack
  done
done
cat "$st"; grep -h FAIL $L/tests-*.txt | head -20
