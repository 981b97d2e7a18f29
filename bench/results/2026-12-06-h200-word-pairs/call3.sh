#!/usr/bin/env bash
# Device call 3 (2026-12-06), the last of the session's device time, so a separate call 2 for
# the harness alone was folded in: spans for the split backward's `words` instances
# (split-spans.diff, rejected). Kernel harness builds (`nvcc -O3 -gencode
# arch=compute_90,code=sm_90 -c bench/kernel-harness/ln_harness.cu`, xz'd in .gpu/var):
#   h_wp2   = pin 0066 (word pairs): the split kernels load and store odd rows in pieces;
#   h_ss    = + the split kernels take rows as spans of aligned words;
#   h_ssmut = h_ss with dw / db partials written at span columns (no phase): must fail.
# Then a GPU build of the branch (build_gpu.sh, .gpu/bins.tar.xz): vendored tests, the f64
# numerics check against PyTorch, memcheck and racecheck (device_run.sh); ncu of the worst
# points in between. Everything is packed into call3.tgz (a call brings back few files).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
R=/tmp/call3 && mkdir -p $R
st="$OUT/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
for v in h_wp2 h_ss h_ssmut; do
  xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v" || echo "link $v failed" | tee -a "$st"
done
timeout 90 /tmp/h_ss --no-bench > $R/tests-h_ss.txt 2>&1
echo "tests h_ss rc=$? at ${SECONDS}s: $(tail -1 $R/tests-h_ss.txt)" >> "$st"
grep -m20 FAIL $R/tests-h_ss.txt >> "$st"
LN_VERBOSE=1 timeout 90 /tmp/h_ssmut --no-bench > /tmp/tests-h_ssmut.txt 2>&1
echo "tests h_ssmut rc=$? at ${SECONDS}s: $(tail -1 /tmp/tests-h_ssmut.txt); FAIL lines: $(grep -c FAIL /tmp/tests-h_ssmut.txt)" >> "$st"
grep FAIL /tmp/tests-h_ssmut.txt | head -40 > $R/tests-h_ssmut-fails.txt
S16=560x30001,420x40001,335x50001,257x65535,256x65537,512x32768,420x40000
S32=420x20000,280x30001,256x32768,129x65535
for v in h_wp2 h_ss; do
  { timeout 40 "/tmp/$v" --bench-only --dtypes bf16 --shapes "$S16"
    timeout 40 "/tmp/$v" --bench-only --dtypes f32 --shapes "$S32"; } 2>&1 | grep "^bench" > $R/bench-$v-1.txt
  echo "bench $v at ${SECONDS}s: $(wc -l < $R/bench-$v-1.txt) lines" >> "$st"
done
# ncu of h_ss's backward kernels at the sweep's worst points (call 1's were not brought back).
mkdir -p $R/ncu
for p in bf16:257x65535 bf16:512x32768 bf16:50383x333 bf16:16761x1001 f32:420x20000; do
  timeout 30 ncu -k regex:bwd --launch-count 2 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    /tmp/h_ss --bench-only --dtypes "${p%%:*}" --shapes "${p#*:}" > "$R/ncu/${p/:/-}.txt" 2>&1
  echo "ncu $p rc=$? at ${SECONDS}s" >> "$st"
done
OUT=$R/run timeout $((520 - SECONDS)) bash bench/scripts/device_run.sh tests,numerics,sanitizer > $R/device_run.txt 2>&1
echo "device_run rc=$? at ${SECONDS}s" >> "$st"
cat $R/run/status.txt >> "$st" 2>/dev/null
tar -C /tmp -czf "$OUT/call3.tgz" call3
cat "$st"
