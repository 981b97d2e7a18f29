#!/usr/bin/env bash
# Device call 2: the staged pairs with the stage in their own kernels (no unstaged path beside
# it) and x staged after the means' reduction, dy after the sums'. Builds (xz'd in .gpu/var,
# `nvcc -O3 -gencode arch=compute_90,code=sm_90 [-DLAYER_NORM_BWD_STAGE] -c ln_harness.cu`):
#   h_base   = main (5e04895), as in call 1;
#   h_stage2 = the change, -DLAYER_NORM_BWD_STAGE;
#   h_smut   = h_stage2 with the next pair's row a of dy staged from the current pair's row a.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
R=/tmp/call2 && mkdir -p $R
st="$R/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$R/device.txt" 2>&1
for v in h_base h_stage2 h_smut; do
  (xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v" || echo "link $v failed" >> "$st") &
done
wait
echo "linked at ${SECONDS}s" >> "$st"
timeout 150 /tmp/h_stage2 --no-bench > $R/tests-stage2.txt 2>&1 &
LN_VERBOSE=1 timeout 150 /tmp/h_smut --no-bench > /tmp/tests-smut.txt 2>&1 &
wait
echo "tests stage2 at ${SECONDS}s: $(tail -1 $R/tests-stage2.txt)" >> "$st"
grep -m10 FAIL $R/tests-stage2.txt >> "$st"
echo "tests smut: $(tail -1 /tmp/tests-smut.txt); FAIL lines: $(grep -c FAIL /tmp/tests-smut.txt)" >> "$st"
grep FAIL /tmp/tests-smut.txt | cut -c1-200 > $R/tests-smut-fails.txt
S16=10923x1536,8192x2048,6711x2500,5593x3000,5462x3072,4096x4096,3356x5000,2731x6144,2048x8192,1678x10000,1366x12288,1024x16384
S16b=4096x4096,2731x6144,5593x3000,1678x10000
for round in 1 2 3; do
  for v in base stage2; do
    { timeout 60 /tmp/h_$v --bench-only --dtypes bf16 --shapes "$S16"
      timeout 60 /tmp/h_$v --bench-only --dtypes f16 --shapes "$S16b"; } 2>&1 | grep "^bench" > $R/bench-$v-$round.txt
    echo "bench $v round $round at ${SECONDS}s: $(wc -l < $R/bench-$v-$round.txt) lines" >> "$st"
  done
done
timeout 100 compute-sanitizer --tool memcheck /tmp/h_stage2 --bench-only --dtypes bf16 --shapes 2048x2048,1100x4096,1100x10000 > /tmp/mc.txt 2>&1
tail -3 /tmp/mc.txt > $R/memcheck-tail.txt
timeout 150 compute-sanitizer --tool racecheck /tmp/h_stage2 --bench-only --dtypes bf16 --shapes 1100x4096 > /tmp/rc.txt 2>&1
tail -3 /tmp/rc.txt > $R/racecheck-tail.txt
echo "sanitizer at ${SECONDS}s: memcheck $(tail -1 /tmp/mc.txt); racecheck $(tail -1 /tmp/rc.txt)" >> "$st"
tar -C /tmp -czf "$OUT/call2.tgz" call2
cp "$st" "$OUT/status.txt"
cat "$st"
