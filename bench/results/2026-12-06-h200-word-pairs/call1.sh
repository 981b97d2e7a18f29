#!/usr/bin/env bash
# Device call 1 (2026-12-06): the kernel harness builds of bench/results/2026-12-05-h200-clusters
# (`nvcc -O3 -arch=sm_90 -c bench/kernel-harness/ln_harness.cu`, carried xz'd in .gpu/var):
#   h_base  = the kernels at pin 0065;
#   h_wp    = + pairs for the `words` instances of the `sq` tiers (pin 0066);
#   h_wpmut = h_wp with row b of a words pair stored with row a's dx: its tests must fail.
# h_wp's tests, the mutant's, the A/B bench of h_base and h_wp over two rounds, ncu of h_wp's
# backward at the sweep's worst points, memcheck and racecheck of h_wp.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
st="$OUT/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
for v in h_base h_wp h_wpmut; do
  xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v" || echo "link $v failed" | tee -a "$st"
done
timeout 80 /tmp/h_wp --no-bench > "$OUT/tests-h_wp.txt" 2>&1
echo "tests h_wp rc=$? at ${SECONDS}s: $(tail -1 "$OUT/tests-h_wp.txt")" >> "$st"
grep -m20 FAIL "$OUT/tests-h_wp.txt" >> "$st"
LN_VERBOSE=1 timeout 80 /tmp/h_wpmut --no-bench > /tmp/tests-h_wpmut.txt 2>&1
echo "tests h_wpmut rc=$? at ${SECONDS}s: $(tail -1 /tmp/tests-h_wpmut.txt); FAIL lines: $(grep -c FAIL /tmp/tests-h_wpmut.txt); failing tiers: $(grep FAIL /tmp/tests-h_wpmut.txt | grep -o 'tiers=[a-z0-9/-]*' | sort -u | tr '\n' ' ')" >> "$st"
grep FAIL /tmp/tests-h_wpmut.txt | head -40 > "$OUT/tests-h_wpmut-fails.txt"
S=16761x1001,6711x2500,5591x3001,2731x6144,2158x7777,1678x10000,1119x15001,1024x16384,839x20001,683x24575
for round in 1 2; do
  for v in h_base h_wp; do
    timeout 40 "/tmp/$v" --bench-only --dtypes bf16 --shapes "$S" 2>&1 | grep "^bench" > "$OUT/bench-$v-$round.txt"
    echo "bench $v round $round rc=${PIPESTATUS[0]} at ${SECONDS}s" >> "$st"
  done
done
# ncu: the backward kernels (main, and the split path's two) of the first bench launch at the
# sweep's worst points; caches flushed before each profiled launch (ncu's default).
mkdir -p "$OUT/ncu"
for p in bf16:257x65535 bf16:560x30001 bf16:512x32768 bf16:839x20000 bf16:16761x1001 bf16:50383x333 f32:129x65535 f32:420x20000 f32:1678x10000; do
  [ "$SECONDS" -gt 250 ] && { echo "ncu skipped from $p (time)" >> "$st"; break; }
  timeout 60 ncu -k regex:bwd --launch-count 3 --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
    /tmp/h_wp --bench-only --dtypes "${p%%:*}" --shapes "${p#*:}" > "$OUT/ncu/${p/:/-}.txt" 2>&1
  echo "ncu $p rc=$? at ${SECONDS}s" >> "$st"
done
for tool in memcheck racecheck; do
  timeout $(( (470 - SECONDS) / 2 )) compute-sanitizer --tool $tool --error-exitcode 1 /tmp/h_wp --no-bench > /tmp/$tool.txt 2>&1
  echo "$tool h_wp rc=$? at ${SECONDS}s: $(grep -E 'ERROR SUMMARY|tests:' /tmp/$tool.txt | tr '\n' ' ')" >> "$st"
  tail -4 /tmp/$tool.txt > "$OUT/$tool-h_wp-tail.txt"
done
cat "$st"
