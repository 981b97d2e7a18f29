#!/usr/bin/env bash
# Device call 1 (2026-12-06, second session): the split backward's dx kernel loads a row ahead,
# and the parameter reduce takes a column per thread for at most 32 parts. Kernel harness builds
# (`nvcc -O3 -gencode arch=compute_90,code=sm_90 -c bench/kernel-harness/ln_harness.cu`, xz'd in
# .gpu/var):
#   h_wp2  = pin 0066 (main);
#   h_new  = + both changes (and the harness's reduce grid as the host's);
#   h_pmut = h_new loading row + 1 after a tile's last row instead of the next tile's first;
#   h_rmut = h_new adding all but the last part in the column-per-thread reduce.
# Their tests (in parallel with h_new's memcheck), the A/B of h_wp2, h_new and h_new with
# LN_SPLIT_GRID_FLOOR=1 over two alternating rounds, ncu of h_new's split kernels, then the GPU
# build of the branch (build_gpu.sh): vendored, shim and TFT tests, the grid bench beside PyTorch
# with the f64 numerics check (report.md: the README and UPSTREAM tables) and the fine sweep
# beside PyTorch's kernels (sweep.csv, sweep.png); compute-sanitizer is call 2's.
# Everything is packed into call1.tgz (a call brings back few files).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
R=/tmp/call1 && mkdir -p $R
st="$R/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$R/device.txt" 2>&1
for v in h_wp2 h_new h_pmut h_rmut; do
  (xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v" || echo "link $v failed" >> "$st") &
done
wait
echo "linked at ${SECONDS}s" >> "$st"
timeout 150 /tmp/h_new --no-bench > $R/tests-h_new.txt 2>&1 &
for v in h_pmut h_rmut; do
  LN_VERBOSE=1 timeout 150 /tmp/$v --no-bench > /tmp/tests-$v.txt 2>&1 &
done
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/h_new --no-bench > /tmp/memcheck.txt 2>&1 &
wait
echo "tests h_new at ${SECONDS}s: $(tail -1 $R/tests-h_new.txt)" >> "$st"
grep -m20 FAIL $R/tests-h_new.txt >> "$st"
for v in h_pmut h_rmut; do
  echo "tests $v: $(tail -1 /tmp/tests-$v.txt); FAIL lines: $(grep -c FAIL /tmp/tests-$v.txt)" >> "$st"
  grep FAIL /tmp/tests-$v.txt | head -40 > $R/tests-$v-fails.txt
done
echo "memcheck h_new: $(grep -E 'ERROR SUMMARY|tests:' /tmp/memcheck.txt | tr '\n' ' ')" >> "$st"
tail -4 /tmp/memcheck.txt > $R/memcheck-h_new-tail.txt
S16=560x30001,420x40001,335x50001,257x65535,256x65537,512x32768,420x40000,1024x16384
S32=420x20000,280x30001,256x32768,129x65535,128x65536,1024x16384
for round in 1 2; do
  for v in h_wp2 h_new h_newfloor; do
    bin=/tmp/${v/floor/}
    { [ $v = h_newfloor ] && export LN_SPLIT_GRID_FLOOR=1 || unset LN_SPLIT_GRID_FLOOR
      timeout 40 $bin --bench-only --dtypes bf16 --shapes "$S16"
      timeout 40 $bin --bench-only --dtypes f32 --shapes "$S32"; } 2>&1 | grep "^bench" > $R/bench-$v-$round.txt
    echo "bench $v round $round at ${SECONDS}s: $(wc -l < $R/bench-$v-$round.txt) lines" >> "$st"
  done
done
unset LN_SPLIT_GRID_FLOOR
mkdir -p $R/ncu
for p in f32:420x20000 bf16:512x32768 bf16:257x65535; do
  timeout 30 ncu -k regex:bwd --launch-count 3 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    /tmp/h_new --bench-only --dtypes "${p%%:*}" --shapes "${p#*:}" > "$R/ncu/${p/:/-}.txt" 2>&1
  echo "ncu $p rc=$? at ${SECONDS}s" >> "$st"
done
OUT=$R/run timeout $((570 - SECONDS)) bash bench/scripts/device_run.sh tests,bench,sweep > $R/device_run.txt 2>&1
echo "device_run rc=$? at ${SECONDS}s" >> "$st"
cat $R/run/status.txt >> "$st" 2>/dev/null
grep -A12 "^dtype dir" $R/run/sweep-torch.log >> "$st" 2>/dev/null
tar -C /tmp -czf "$OUT/call1.tgz" call1
cp "$st" "$OUT/status.txt"
cat "$st"
