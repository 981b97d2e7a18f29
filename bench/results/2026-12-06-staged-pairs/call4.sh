#!/usr/bin/env bash
# Device call 4: where in a pair the copies of the next are issued, and the weights. Builds (xz'd
# in .gpu/var, `nvcc -O3 -gencode arch=compute_90,code=sm_90 <flags> -c ln_harness.cu`, the
# working tree at 09:46 UTC):
#   h_s3 = -DLN_BWD_STAGE_ISSUE=1: one stage, the copies after the sums' loop, before their
#          reduction (where call 1 issued them);
#   h_s4 = -DLN_BWD_STAGE_BUFS=2 -DLN_BWD_STAGE_W=1: two stages, the copies at the top of a pair,
#          the weights in shared memory after the stages (no global load in a pair but the copies);
#   h_s5 = -DLN_BWD_STAGE_W=1: h_s1 of call 3 with the weights in shared memory.
#   h_base = main (5e04895).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
R=/tmp/call4 && mkdir -p $R
st="$R/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$R/device.txt" 2>&1
for v in h_base h_s3 h_s4 h_s5; do
  (xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v" || echo "link $v failed" >> "$st") &
done
wait
echo "linked at ${SECONDS}s" >> "$st"
for v in s3 s4 s5; do timeout 150 /tmp/h_$v --no-bench > $R/tests-$v.txt 2>&1 & done
wait
echo "tests at ${SECONDS}s: s3 $(tail -1 $R/tests-s3.txt); s4 $(tail -1 $R/tests-s4.txt); s5 $(tail -1 $R/tests-s5.txt)" >> "$st"
grep -m5 FAIL $R/tests-s*.txt >> "$st"
S16=10923x1536,8192x2048,6711x2500,5593x3000,5462x3072,4096x4096,3356x5000,2731x6144,2048x8192,1678x10000,1366x12288
for round in 1 2 3; do
  for v in base s3 s4 s5; do
    timeout 60 /tmp/h_$v --bench-only --dtypes bf16 --shapes "$S16" 2>&1 | grep "^bench" > $R/bench-$v-$round.txt
    echo "bench $v round $round at ${SECONDS}s: $(wc -l < $R/bench-$v-$round.txt) lines" >> "$st"
  done
done
tar -C /tmp -czf "$OUT/call4.tgz" call4
cp "$st" "$OUT/status.txt"
cat "$st"
