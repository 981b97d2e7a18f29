#!/usr/bin/env bash
# Device call 3: the staged pairs as they would ship: tiers `sqa` in the registry (smem 3), the
# copies issued after the means' reduction into one stage (h_s1), or at the top of a pair into
# the other of two stages (h_s2, -DLN_BWD_STAGE_BUFS=2). Builds (xz'd in .gpu/var,
# `nvcc -O3 -gencode arch=compute_90,code=sm_90 [-DLN_BWD_STAGE_BUFS=2] -c ln_harness.cu`):
#   h_base = main (5e04895), as in calls 1 and 2; h_s1, h_s2 = the working tree at 09:33 UTC.
# (The harness benches f32 and bf16 only: the f16 lines of calls 1 and 2 never ran.)
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
R=/tmp/call3 && mkdir -p $R
st="$R/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$R/device.txt" 2>&1
for v in h_base h_s1 h_s2; do
  (xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v" || echo "link $v failed" >> "$st") &
done
wait
echo "linked at ${SECONDS}s" >> "$st"
timeout 150 /tmp/h_s1 --no-bench > $R/tests-s1.txt 2>&1 &
timeout 150 /tmp/h_s2 --no-bench > $R/tests-s2.txt 2>&1 &
wait
echo "tests at ${SECONDS}s: s1 $(tail -1 $R/tests-s1.txt); s2 $(tail -1 $R/tests-s2.txt)" >> "$st"
grep -m5 FAIL $R/tests-s1.txt $R/tests-s2.txt >> "$st"
S16=10923x1536,8192x2048,6711x2500,5593x3000,5462x3072,4096x4096,3356x5000,2731x6144,2048x8192,1678x10000,1366x12288,1024x16384
for round in 1 2 3; do
  for v in base s1 s2; do
    timeout 60 /tmp/h_$v --bench-only --dtypes bf16 --shapes "$S16" 2>&1 | grep "^bench" > $R/bench-$v-$round.txt
    echo "bench $v round $round at ${SECONDS}s: $(wc -l < $R/bench-$v-$round.txt) lines" >> "$st"
  done
done
timeout 100 compute-sanitizer --tool memcheck /tmp/h_s1 --bench-only --dtypes bf16 --shapes 2048x2048,1100x4096,1100x10000 > /tmp/mc.txt 2>&1
tail -3 /tmp/mc.txt > $R/memcheck-s1-tail.txt
timeout 100 compute-sanitizer --tool racecheck /tmp/h_s1 --bench-only --dtypes bf16 --shapes 1100x4096 > /tmp/rc1.txt 2>&1
tail -3 /tmp/rc1.txt > $R/racecheck-s1-tail.txt
timeout 100 compute-sanitizer --tool racecheck /tmp/h_s2 --bench-only --dtypes bf16 --shapes 1100x4096 > /tmp/rc2.txt 2>&1
tail -3 /tmp/rc2.txt > $R/racecheck-s2-tail.txt
echo "sanitizer at ${SECONDS}s: memcheck s1 $(tail -1 /tmp/mc.txt); racecheck s1 $(tail -1 /tmp/rc1.txt); s2 $(tail -1 /tmp/rc2.txt)" >> "$st"
tar -C /tmp -czf "$OUT/call3.tgz" call3
cp "$st" "$OUT/status.txt"
cat "$st"
