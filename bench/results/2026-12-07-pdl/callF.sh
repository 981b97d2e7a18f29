#!/usr/bin/env bash
# Device call F of 2026-12-07's fourth session (issue 14). If the GPU is an H200: first call D of
# 2026-12-07-h100-tests-probe (vendored tests, harness tests, sanitizer: the H200 criterion).
# Then, on any GPU: the parameter reduce launched as a programmatic dependent of the backward
# (Hopper PDL; h_pdl = this tree + h_pdl.diff: the backward kernels trigger their dependents
# at entry, the reduce waits for the backward's completion before reading the partials). The
# harness bench's `pdl` lines time backward + reduce plain and with PDL, alternating in one
# process (2 rounds each); then h_pdl's harness tests with every reduce so launched.
# And the reduce folded into the backward (h_fus = this tree + h_fus.diff: the last blocks of the
# backward to finish sum the partials, no second launch): `fused` lines, the same A/B; then
# h_fus's harness tests (their determinism test included) with every backward so launched.
#   carry: .gpu/var/h_pdl.o.xz .gpu/var/h_fus.o.xz (or .gpu/bins.tar.xz .gpu/var/h_ship.o.xz for
#   the H200 part: see below)
set -uo pipefail
source bench/scripts/device_env.sh
# (The 64 MiB a call carries holds the binaries or the two harness objects beside the tree, not
# both: without .gpu/bins.tar.xz the H200 part is left out.)
if grep -q H200 "$OUT/device.txt" && [ -f .gpu/bins.tar.xz ]; then
  SAN_S=200 bash bench/results/2026-12-07-h100-tests-probe/callD.sh
fi
call_log callF
link_harness h_pdl && link_harness h_fus || { pack; exit 1; }
s16=65536x256,262144x64,16384x1024,8192x2048,6711x2500,4096x4096,2048x8192,1678x10000,1366x12288,1024x16384,512x32768,256x65536
s32=32768x256,131072x64,8192x1024,4096x2048,2048x4096,1024x8192,839x10000,512x16384,256x32768,128x65536
LN_PDL=1 timeout 60 /tmp/h_pdl --bench-only --dtypes bf16 --shapes $s16 > $L/bench-bf16.txt 2>&1
echo "bench bf16 rc=$? at ${SECONDS}s" >> "$st"
LN_PDL=1 timeout 60 /tmp/h_pdl --bench-only --dtypes f32 --shapes $s32 > $L/bench-f32.txt 2>&1
echo "bench f32 rc=$? at ${SECONDS}s" >> "$st"; pack
LN_PDL_ALL=1 timeout 90 /tmp/h_pdl --no-bench > $L/tests-h_pdl-pdl.txt 2>&1
echo "harness tests h_pdl (LN_PDL_ALL) rc=$?: $(tail -1 $L/tests-h_pdl-pdl.txt) at ${SECONDS}s" >> "$st"; pack
LN_FUSED=1 timeout 60 /tmp/h_fus --bench-only --dtypes bf16 --shapes $s16 > $L/bench-fus-bf16.txt 2>&1
echo "bench fused bf16 rc=$? at ${SECONDS}s" >> "$st"
LN_FUSED=1 timeout 60 /tmp/h_fus --bench-only --dtypes f32 --shapes $s32 > $L/bench-fus-f32.txt 2>&1
echo "bench fused f32 rc=$? at ${SECONDS}s" >> "$st"; pack
LN_FUSED_ALL=1 timeout 90 /tmp/h_fus --no-bench > $L/tests-h_fus-fused.txt 2>&1
echo "harness tests h_fus (LN_FUSED_ALL) rc=$?: $(tail -1 $L/tests-h_fus-fused.txt) at ${SECONDS}s" >> "$st"; pack
cat "$st"; grep -h "^pdl\|^fused" $L/bench-*.txt
