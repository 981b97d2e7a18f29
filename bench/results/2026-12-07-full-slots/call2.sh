#!/usr/bin/env bash
# Device call 2 (issue 14; prepared 2026-12-07, sixth session, not yet run): only if call 1's
# A/B shows `h_pk` and `h_full` faster. The CUDA binaries of branch `exp-pk-full` (commit
# 5a478df: packed-dx.diff + ../2026-12-07-pipe/full-slots.diff on candle-patch/, built with
# CANDLE_KERNELS_FATBIN_ARCHS=90 bash bench/scripts/build_gpu.sh into .gpu/bins-pkfull.tar.xz):
#   1. device_run.sh tests (vendored CUDA tests, shim, TFT);
#   2. device_run.sh sweep (the fine sweep beside PyTorch's kernels, three passes);
#   3. device_run.sh sanitizer, as far as the call's time goes.
#   carry: .gpu/bins-pkfull.tar.xz
set -uo pipefail
source bench/scripts/device_env.sh
call_log call2
cp .gpu/bins-pkfull.tar.xz .gpu/bins.tar.xz || { echo "no .gpu/bins-pkfull.tar.xz" >> "$st"; pack; exit 1; }
OUT=$L/tests timeout 150 bash bench/scripts/device_run.sh tests > $L/device_run-tests.txt 2>&1
echo "device_run tests rc=$? at ${SECONDS}s" >> "$st"; cat $L/tests/status.txt >> "$st"; pack
OUT=$L/sweep timeout 200 bash bench/scripts/device_run.sh sweep > $L/device_run-sweep.txt 2>&1
echo "device_run sweep rc=$? at ${SECONDS}s" >> "$st"
tar -C $L/sweep -xzf $L/sweep/logs.tgz && rm $L/sweep/logs.tgz; grep -A9 "^dtype dir" $L/sweep/sweep-torch.log >> "$st"; pack
OUT=$L/san timeout 200 bash bench/scripts/device_run.sh sanitizer > $L/device_run-san.txt 2>&1
echo "device_run sanitizer rc=$? at ${SECONDS}s" >> "$st"; cat $L/san/status.txt >> "$st"; pack
cat "$st"
