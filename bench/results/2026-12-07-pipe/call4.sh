#!/usr/bin/env bash
# Device call 4 (issue 14): the pipeline backward with more threads a row (t512v1, t1024v1,
# t1024v2: fewer registers, more warps an SM), 16-bit rows of 2048 to 16384 columns, tests of
# those widths then one bench round.
#   carry: .gpu/var/pipe_exp.o.xz
set -uo pipefail
source bench/scripts/device_env.sh
call_log call4
link_harness pipe_exp || { pack; exit 1; }
timeout 60 /tmp/pipe_exp --no-bench --dtypes bf16 --test-cols 4096,8192,16384 > $L/tests.txt 2>&1
echo "tests rc=$?: $(grep '^tests:' $L/tests.txt) at ${SECONDS}s" >> "$st"; pack
timeout 90 /tmp/pipe_exp --no-test --dtypes bf16,f16 --cols 2048,4096,6144,8192,12288,16384 > $L/bench.txt 2>&1
echo "bench rc=$? at ${SECONDS}s" >> "$st"; pack
cat "$st"
