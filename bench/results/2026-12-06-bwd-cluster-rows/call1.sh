#!/usr/bin/env bash
# Device call 1 (2026-12-06, third session): the backward of rows past the tiers in thread-block
# clusters (bwd_cluster, kernel harness only: LN_BWD_CLUSTER=256 or 512). Kernel harness builds
# (`nvcc -O3 -gencode arch=compute_90,code=sm_90 -c bench/kernel-harness/ln_harness.cu`, xz'd in
# .gpu/var):
#   h_cl    = this tree (the split backward by default, the cluster backward with the switch);
#   h_clmut = h_cl with the merge's between-block term (n_r (mean_r - mean)^2) left out.
# Tests of h_cl under each switch and of h_clmut, memcheck and racecheck of the cluster kernel,
# the A/B of split / cluster256 / cluster512 at the sweep's wide shapes (two alternating rounds),
# ncu of the cluster kernel. Everything is packed into call1.tgz.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
R=/tmp/call1 && mkdir -p $R
st="$R/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$R/device.txt" 2>&1
for v in h_cl h_clmut; do
  (xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v" || echo "link $v failed" >> "$st") &
done
wait
echo "linked at ${SECONDS}s" >> "$st"
timeout 170 /tmp/h_cl --no-bench > $R/tests-split.txt 2>&1 &
LN_BWD_CLUSTER=256 timeout 170 /tmp/h_cl --no-bench > $R/tests-c256.txt 2>&1 &
LN_BWD_CLUSTER=512 timeout 170 /tmp/h_cl --no-bench > $R/tests-c512.txt 2>&1 &
LN_BWD_CLUSTER=512 LN_VERBOSE=1 timeout 170 /tmp/h_clmut --no-bench > /tmp/tests-mut512.txt 2>&1 &
wait
for v in split c256 c512; do
  echo "tests $v at ${SECONDS}s: $(tail -1 $R/tests-$v.txt)" >> "$st"
  grep -m10 FAIL $R/tests-$v.txt >> "$st"
done
echo "tests mut512: $(tail -1 /tmp/tests-mut512.txt); FAIL lines: $(grep -c FAIL /tmp/tests-mut512.txt)" >> "$st"
grep FAIL /tmp/tests-mut512.txt | head -40 > $R/tests-mut512-fails.txt
grep -m12 "^attr\|^device" $R/tests-c512.txt > $R/attr.txt
S16=839x20000,683x24576,512x32768,420x40000,342x49152,336x50000,256x65536,2048x32768
S32=420x20000,342x24576,256x32768,210x40000,171x49152,168x50000,128x65536,1024x32768
for round in 1 2; do
  for v in split c256 c512; do
    { [ $v = split ] && unset LN_BWD_CLUSTER || export LN_BWD_CLUSTER=${v#c}
      timeout 60 /tmp/h_cl --bench-only --dtypes bf16 --shapes "$S16"
      timeout 60 /tmp/h_cl --bench-only --dtypes f32 --shapes "$S32"; } 2>&1 | grep "^bench" > $R/bench-$v-$round.txt
    echo "bench $v round $round at ${SECONDS}s: $(wc -l < $R/bench-$v-$round.txt) lines" >> "$st"
  done
done
unset LN_BWD_CLUSTER
for tool in memcheck racecheck; do
  LN_BWD_CLUSTER=512 timeout 60 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/h_cl --bench-only \
    --dtypes bf16 --shapes 64x65536,40x20000 > /tmp/$tool.txt 2>&1
  echo "$tool c512 rc=$? at ${SECONDS}s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/$tool.txt | tr '\n' ' ')" >> "$st"
  tail -5 /tmp/$tool.txt > $R/$tool-tail.txt
done
mkdir -p $R/ncu
for p in bf16:512x32768 f32:256x32768; do
  LN_BWD_CLUSTER=512 timeout 40 ncu -k regex:cluster --launch-count 2 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    /tmp/h_cl --bench-only --dtypes "${p%%:*}" --shapes "${p#*:}" > "$R/ncu/${p/:/-}.txt" 2>&1
  echo "ncu $p rc=$? at ${SECONDS}s" >> "$st"
done
tar -C /tmp -czf "$OUT/call1.tgz" call1
cp "$st" "$OUT/status.txt"
cat "$st"
