#!/usr/bin/env bash
# Device call 4 (issue 14; prepared 2026-12-07, not yet run): is the 16-bit backward held by
# occupancy and per-element work? The pipeline backward with more threads a row (t512v1,
# t1024v1, t1024v2), rereading its slots from the stage (`rr`, fewer registers held), with
# registers capped for more blocks an SM (`m<N>`), and with dx converted two elements at a time
# (`pk`), at 16-bit rows of 2048 to 16384 columns: tests, then the bench twice.
#   carry: .gpu/var/pipe_exp.o.xz (pipe_exp.cu of this tree, built as in README.md)
set -uo pipefail
source bench/scripts/device_env.sh
call_log call4
link_harness pipe_exp || { pack; exit 1; }
timeout 120 /tmp/pipe_exp --no-bench --dtypes bf16,f16 --test-cols 2048,8192,16384 > $L/tests.txt 2>&1
echo "tests rc=$?: $(grep '^tests:' $L/tests.txt) at ${SECONDS}s" >> "$st"; pack
for round in 1 2; do
  timeout 120 /tmp/pipe_exp --no-test --dtypes bf16,f16 --cols 2048,4096,6144,8192,12288,16384 > $L/bench-$round.txt 2>&1
  echo "bench round $round rc=$? at ${SECONDS}s" >> "$st"; pack
done
cat "$st"; grep FAIL $L/tests.txt | head -20
