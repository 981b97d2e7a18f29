#!/usr/bin/env bash
# Device call 2: the cluster backward against the resident tiers at middle widths; the
# harness's new `ramp` test against the split backward with its merge broken; the split's
# statistics kernel taking the rows from the last to the first. Builds (xz'd in .gpu/var,
# `nvcc -O3 -gencode arch=compute_90,code=sm_90 -c bench/kernel-harness/ln_harness.cu`):
#   h_cl2  = call 1's h_cl + the bench switch LN_BWD_FORCE_SPLIT=1 (every backward past the tiers);
#   h_smut = h_cl2 with the split merge's between-segment term (n_s (mean_s - mean)^2) left out;
#   h_rev  = main (a54cab3) with bwd_split_stats taking the rows from the last to the first.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
R=/tmp/call2 && mkdir -p $R
st="$R/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$R/device.txt" 2>&1
for v in h_cl2 h_smut h_rev; do
  (xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v" || echo "link $v failed" >> "$st") &
done
wait
echo "linked at ${SECONDS}s" >> "$st"
LN_VERBOSE=1 timeout 170 /tmp/h_smut --no-bench > /tmp/tests-smut.txt 2>&1 &
timeout 170 /tmp/h_rev --no-bench > $R/tests-h_rev.txt 2>&1 &
wait
echo "tests h_rev at ${SECONDS}s: $(tail -1 $R/tests-h_rev.txt)" >> "$st"
grep -m10 FAIL $R/tests-h_rev.txt >> "$st"
echo "tests smut: $(tail -1 /tmp/tests-smut.txt); FAIL lines: $(grep -c FAIL /tmp/tests-smut.txt); ramp FAIL lines: $(grep FAIL /tmp/tests-smut.txt | grep -c ' ramp ')" >> "$st"
grep FAIL /tmp/tests-smut.txt | cut -c1-220 > $R/tests-smut-fails.txt
S16=4096x4096,2731x6144,2048x8192,1366x12288,1024x16384
S32=2048x4096,1366x6144,1024x8192,683x12288,512x16384
for round in 1 2; do
  for v in tier split c256 c512; do
    { unset LN_BWD_CLUSTER LN_BWD_FORCE_SPLIT
      [ $v = tier ] || export LN_BWD_FORCE_SPLIT=1
      case $v in c*) export LN_BWD_CLUSTER=${v#c};; esac
      timeout 60 /tmp/h_cl2 --bench-only --dtypes bf16 --shapes "$S16"
      timeout 60 /tmp/h_cl2 --bench-only --dtypes f32 --shapes "$S32"; } 2>&1 | grep "^bench" > $R/bench-$v-$round.txt
    echo "bench $v round $round at ${SECONDS}s: $(wc -l < $R/bench-$v-$round.txt) lines" >> "$st"
  done
done
# The split backward with its statistics rows in reverse (h_rev) against the same kernels in
# order (h_cl2 without switches), the sweep's widths past the tiers and more rows.
W16=512x32768,2048x32768,420x40000,256x65536,560x30001,257x65535
W32=420x20000,256x32768,1024x32768,128x65536,280x30001,129x65535
unset LN_BWD_CLUSTER LN_BWD_FORCE_SPLIT
for round in 1 2; do
  for v in h_cl2 h_rev; do
    { timeout 60 /tmp/$v --bench-only --dtypes bf16 --shapes "$W16"
      timeout 60 /tmp/$v --bench-only --dtypes f32 --shapes "$W32"; } 2>&1 | grep "^bench" > $R/bench-rev-$v-$round.txt
    echo "bench $v round $round at ${SECONDS}s: $(wc -l < $R/bench-rev-$v-$round.txt) lines" >> "$st"
  done
done
tar -C /tmp -czf "$OUT/call2.tgz" call2
cp "$st" "$OUT/status.txt"
cat "$st"
