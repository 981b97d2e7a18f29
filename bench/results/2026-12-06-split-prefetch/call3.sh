#!/usr/bin/env bash
# Device call 3 (2026-12-06, second session): call 1's column-per-thread reduce unrolled all 32
# parts and took 54 registers instead of 32, so its 1024-thread blocks fit once per SM and the
# slice path (more than 32 parts: the resident tiers) ran slower (bf16 1024x16384 reduce 7.5 ->
# 15.9 us). Now the loop adds parts 8 at a time (32 registers, ptxas -v here) and takes up to 64
# parts. Harness builds (as in call 1):
#   h_wp2  = pin 0066 (main);
#   h_new  = + the split dx kernel loading a row ahead + this reduce;
#   h_rmut = h_new leaving out the last part of dw in the column-per-thread reduce.
# Their tests, the A/B over two alternating rounds, then the GPU build of the branch
# (build_gpu.sh): vendored, shim and TFT tests, grid bench with the f64 numerics check, fine
# sweep, and compute-sanitizer memcheck and racecheck with the time left. Packed in call3.tgz.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
R=/tmp/call3 && mkdir -p $R
st="$R/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$R/device.txt" 2>&1
for v in h_wp2 h_new h_rmut; do
  (xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v" || echo "link $v failed" >> "$st") &
done
wait
timeout 150 /tmp/h_new --no-bench > $R/tests-h_new.txt 2>&1 &
LN_VERBOSE=1 timeout 150 /tmp/h_rmut --no-bench > /tmp/tests-h_rmut.txt 2>&1 &
wait
echo "tests h_new at ${SECONDS}s: $(tail -1 $R/tests-h_new.txt)" >> "$st"
grep -m20 FAIL $R/tests-h_new.txt >> "$st"
echo "tests h_rmut: $(tail -1 /tmp/tests-h_rmut.txt); FAIL lines: $(grep -c FAIL /tmp/tests-h_rmut.txt)" >> "$st"
grep FAIL /tmp/tests-h_rmut.txt | head -40 > $R/tests-h_rmut-fails.txt
S16=16761x1001,4096x4096,1024x16384,560x30001,512x32768,420x40000,420x40001,257x65535,256x65536
S32=8192x1024,1024x16384,420x20000,280x30001,256x32768,129x65535,128x65536
for round in 1 2; do
  for v in h_wp2 h_new; do
    { timeout 40 /tmp/$v --bench-only --dtypes bf16 --shapes "$S16"
      timeout 40 /tmp/$v --bench-only --dtypes f32 --shapes "$S32"; } 2>&1 | grep "^bench" > $R/bench-$v-$round.txt
    echo "bench $v round $round at ${SECONDS}s: $(wc -l < $R/bench-$v-$round.txt) lines" >> "$st"
  done
done
OUT=$R/run timeout $((330 - SECONDS)) bash bench/scripts/device_run.sh tests,bench,sweep > $R/device_run.txt 2>&1
echo "device_run tests,bench,sweep rc=$? at ${SECONDS}s" >> "$st"
cat $R/run/status.txt >> "$st" 2>/dev/null
tar -xzOf $R/run/logs.tgz ./sweep-torch.log 2>/dev/null | grep -A12 "dtype dir" >> "$st"
OUT=$R/san timeout $((575 - SECONDS)) bash bench/scripts/device_run.sh sanitizer > $R/device_run_san.txt 2>&1
echo "device_run sanitizer rc=$? at ${SECONDS}s" >> "$st"
cat $R/san/status.txt >> "$st" 2>/dev/null
tar -C /tmp -czf "$OUT/call3.tgz" call3
cp "$st" "$OUT/status.txt"
cat "$st"
