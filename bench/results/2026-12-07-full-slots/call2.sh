#!/usr/bin/env bash
# Device call 2 (issue 14, 2026-12-07, seventh session): the candidate `h_pkfma` of call 1
# (../2026-12-07-full-slots/packed-dx.diff + fma-dx.diff) as the host runs it.
#   1. f32 A/B of the harness objects h_ship / h_pkfma (call 1 timed 16-bit only; fma-dx.diff
#      changes the f32 backward too), two rounds alternating, the split widths among them;
#   2. device_run.sh tests (vendored CUDA tests, shim, TFT) on the binaries of branch
#      exp-pk-fma (the two diffs on candle-patch/, CANDLE_KERNELS_FATBIN_ARCHS=90
#      bench/scripts/build_gpu.sh, packed as .gpu/bins-pkfma.tar.xz);
#   3. device_run.sh sweep (the fine sweep beside PyTorch's kernels, three passes, f64 check);
#   4. device_run.sh sanitizer in the time left.
#   (2026-12-08: step 1 also times the 16-bit split backward and big forward, and the RMS norm
#   by `call2.sh family`: ../2026-12-08-sass-map/ found their SASS changed too; on an H200 it
#   adds the 32 / 128 MiB size probe, which has only run on an H100.)
# Three calls, as the carry (64 MiB with the tree) holds only one of the three sets of files:
#   call2.sh ab     carry: .gpu/var/h_ship.o.xz .gpu/var/h_pkfma.o.xz      (step 1, ~120 s; H200 ~160 s)
#   call2.sh family carry: .gpu/var/family-ship.xz .gpu/var/family-pkfma.xz (family_bench of
#                   main and of exp-pk-fma, stripped, xz; rms_norm changed, softmax and rope are
#                   the control; two rounds alternating, ~100 s)
#   call2.sh host   carry: .gpu/bins-pkfma.tar.xz (steps 2-4; DEADLINE=s ends the sanitizer
#                   by then; NO_SWEEP=1 leaves step 3 out)
set -uo pipefail
source bench/scripts/device_env.sh
if [ "${1:-}" = ab ]; then
call_log call2ab
for v in h_ship h_pkfma; do link_harness $v || { pack; exit 1; }; done
shapes=131072x64,32768x256,8192x1024,5592x1500,4096x2048,2796x3000,2048x4096,1079x7777,1024x8192,839x10000,512x16384,256x32768,128x65536
wide16=512x32768,256x65536,128x131072 # 16-bit split backward past 32768 columns, big forward past 65536
for round in 1 2; do
  for v in h_ship h_pkfma; do
    timeout 60 /tmp/$v --bench-only --dtypes f32 --shapes $shapes 2>&1 | grep "^bench" > $L/bench-$v-$round.txt
    echo "bench f32 $v round $round rc=${PIPESTATUS[0]} at ${SECONDS}s" >> "$st"
    timeout 60 /tmp/$v --bench-only --dtypes bf16,f16 --shapes $wide16 2>&1 | grep "^bench" > $L/bench16-$v-$round.txt
    echo "bench 16-bit wide $v round $round rc=${PIPESTATUS[0]} at ${SECONDS}s" >> "$st"
  done
done
if grep -q H200 "$L/device.txt"; then # the size probe of ../2026-12-07-h100-tests-probe, never run on an H200
  bash bench/results/2026-12-07-h100-tests-probe/size_probe.sh /tmp/h_ship $L
  echo "size probe (H200) at ${SECONDS}s" >> "$st"
fi
pack; cat "$st"; exit 0
fi
if [ "${1:-}" = family ]; then
call_log call2family
for v in ship pkfma; do xz -dc .gpu/var/family-$v.xz > /tmp/family-$v && chmod +x /tmp/family-$v; done
for round in 1 2; do
  for v in ship pkfma; do
    timeout 90 /tmp/family-$v --device cuda --csv $L/family-$v-$round.csv > $L/family-$v-$round.log 2>&1
    echo "family $v round $round rc=$? at ${SECONDS}s" >> "$st"
  done
done
python3 bench/scripts/family_ab.py $L/family-ship-1.csv,$L/family-ship-2.csv \
  $L/family-pkfma-1.csv,$L/family-pkfma-2.csv > $L/family-ab.md 2>> "$st"
pack; cat "$st"; cat $L/family-ab.md; exit 0
fi
call_log call2
cp .gpu/bins-pkfma.tar.xz .gpu/bins.tar.xz || { echo "no .gpu/bins-pkfma.tar.xz" >> "$st"; pack; exit 1; }
OUT=$L/tests timeout 160 bash bench/scripts/device_run.sh tests > $L/device_run-tests.txt 2>&1
echo "device_run tests rc=$? at ${SECONDS}s" >> "$st"; cat $L/tests/status.txt >> "$st"; pack
if [ -z "${NO_SWEEP:-}" ]; then
  OUT=$L/sweep timeout 200 bash bench/scripts/device_run.sh sweep > $L/device_run-sweep.txt 2>&1
  echo "device_run sweep rc=$? at ${SECONDS}s" >> "$st"
  tar -C $L/sweep -xzf $L/sweep/logs.tgz && rm $L/sweep/logs.tgz
  grep -A9 "^dtype dir" $L/sweep/sweep-torch.log >> "$st"; pack
fi
left=$((${DEADLINE:-585} - SECONDS))
OUT=$L/san timeout $left bash bench/scripts/device_run.sh sanitizer > $L/device_run-san.txt 2>&1
echo "device_run sanitizer rc=$? at ${SECONDS}s (limit ${left}s)" >> "$st"; cat $L/san/status.txt >> "$st"
pack
cat "$st"
