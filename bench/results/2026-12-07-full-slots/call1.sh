#!/usr/bin/env bash
# Device call 1 (issue 14; prepared 2026-12-07, sixth session, not yet run: no device was lent
# that session): the prepared calls 4 and 5 of
# ../2026-12-07-pipe/ in one call. Tests first, concurrently (correctness only): `h_full` (the
# pair tiers without a per-element test where all the thread's slots are full), the mutant
# `h_fullmut` (every slot taken as full: its tests must fail; 90 s are enough to see FAIL lines),
# the pipeline experiment's 16-bit variants; then the benches one at a time: A/B h_ship/h_full
# alternating, two rounds, and the pipeline variants, two rounds. Added here: `h_pk`
# (`packed-dx.diff`: the forward's y and the backward's dx converted two 16-bit elements at a
# time, same bits), and `h_pkfma` (that plus `fma-dx.diff`: xhat and dx by two fused
# multiply-adds an element each, not the same bits), tested and benched beside the two.
#   carry: .gpu/var/h_ship.o.xz .gpu/var/h_full.o.xz .gpu/var/h_fullmut.o.xz .gpu/var/pipe_exp.o.xz
#          .gpu/var/h_pk.o.xz .gpu/var/h_pkfma.o.xz
set -uo pipefail
source bench/scripts/device_env.sh
call_log call1
for v in h_ship h_full h_fullmut pipe_exp h_pk h_pkfma; do link_harness $v || { pack; exit 1; }; done
echo "linked at ${SECONDS}s" >> "$st"
timeout 240 /tmp/h_full --no-bench > $L/tests-h_full.txt 2>&1 & p1=$!
timeout 90 /tmp/h_fullmut --no-bench > $L/tests-h_fullmut.txt 2>&1 & p2=$!
timeout 240 /tmp/h_pk --no-bench > $L/tests-h_pk.txt 2>&1 & p4=$!
timeout 240 /tmp/h_pkfma --no-bench > $L/tests-h_pkfma.txt 2>&1 & p5=$!
timeout 150 /tmp/pipe_exp --no-bench --dtypes bf16,f16 --test-cols 2048,8192,16384 > $L/tests-pipe.txt 2>&1 & p3=$!
wait $p1; echo "tests h_full rc=$?: $(tail -n 1 $L/tests-h_full.txt) at ${SECONDS}s" >> "$st"
wait $p2; echo "tests h_fullmut rc=$? (must fail): $(grep -c FAIL $L/tests-h_fullmut.txt) FAIL lines at ${SECONDS}s" >> "$st"
wait $p3; echo "tests pipe rc=$?: $(grep '^tests:' $L/tests-pipe.txt) at ${SECONDS}s" >> "$st"
wait $p4; echo "tests h_pk rc=$?: $(tail -n 1 $L/tests-h_pk.txt) at ${SECONDS}s" >> "$st"
wait $p5; echo "tests h_pkfma rc=$?: $(tail -n 1 $L/tests-h_pkfma.txt) at ${SECONDS}s" >> "$st"; pack
shapes=262144x64,65536x256,16384x1024,10923x1536,8192x2048,5593x3000,4096x4096,2731x6144,2048x8192,1678x10000,1366x12288,1024x16384,5591x3001,2158x7777
for round in 1 2; do
  for v in h_ship h_full h_pk h_pkfma; do
    timeout 60 /tmp/$v --bench-only --dtypes bf16,f16 --shapes $shapes 2>&1 | grep "^bench" > $L/bench-$v-$round.txt
    echo "bench $v round $round rc=${PIPESTATUS[0]} at ${SECONDS}s" >> "$st"
  done
done
pack
for round in 1 2; do
  timeout 100 /tmp/pipe_exp --no-test --dtypes bf16,f16 --cols 2048,4096,6144,8192,12288,16384 > $L/bench-pipe-$round.txt 2>&1
  echo "bench pipe round $round rc=$? at ${SECONDS}s" >> "$st"; pack
done
# The SASS of the two builds (no cuobjdump on the build machine), for reading the loops.
for v in h_ship h_pkfma; do
  timeout 60 cuobjdump -sass /tmp/$v.o 2>&1 | xz -T0 -c > $L/sass-$v.txt.xz
  echo "sass $v rc=${PIPESTATUS[0]} at ${SECONDS}s" >> "$st"
done
pack
cat "$st"
