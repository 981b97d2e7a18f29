#!/usr/bin/env bash
# Device call 5 (issue 14; prepared 2026-12-07, not yet run): the pair tiers' loops without a
# test an element where all the thread's slots are in the row (`full-slots.diff`, harness
# `h_full`), A/B against `h_ship` (this tree's kernels) in the kernel harness, two rounds, its
# tests and memcheck (bench/kernel-harness/ab.sh); then the mutant `h_fullmut`
# (`full-slots-mutant.diff`: every slot taken as full), whose tests must fail.
#   carry: .gpu/var/h_ship.o.xz .gpu/var/h_full.o.xz .gpu/var/h_fullmut.o.xz
set -uo pipefail
source bench/scripts/device_env.sh
call_log call5
shapes=10923x1536,8192x2048,5593x3000,4096x4096,2731x6144,2048x8192,1678x10000,1366x12288,1024x16384,5591x3001,2158x7777
OUT=$L timeout 400 bash bench/kernel-harness/ab.sh h_ship h_full $shapes 2 > $L/ab.txt 2>&1
echo "ab rc=$? at ${SECONDS}s" >> "$st"; pack
link_harness h_fullmut && timeout 100 /tmp/h_fullmut --no-bench > $L/tests-h_fullmut.txt 2>&1
echo "mutant tests rc=$? (must fail): $(tail -n 1 $L/tests-h_fullmut.txt) at ${SECONDS}s" >> "$st"; pack
cat "$st"
