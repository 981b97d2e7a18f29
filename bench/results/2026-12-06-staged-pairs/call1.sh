#!/usr/bin/env bash
# Device call 1: the backward's pairs (16-bit `sq` tiers) with the next pair's x and dy rows
# staged in shared memory by cp.async while the current pair is reduced. Builds (xz'd in
# .gpu/var, `nvcc -O3 -gencode arch=compute_90,code=sm_90 -c bench/kernel-harness/ln_harness.cu`):
#   h_base  = main (5e04895);
#   h_stage = the same with -DLAYER_NORM_BWD_STAGE (the staged path; run with LN_BWD_STAGE=1,
#             without it the host gives no room and the kernels take their loads as before).
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda-13.0/bin:$PATH
R=/tmp/call1 && mkdir -p $R
st="$R/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$R/device.txt" 2>&1
for v in h_base h_stage; do
  (xz -dc ".gpu/var/$v.o.xz" > "/tmp/$v.o" && nvcc -arch=sm_90 "/tmp/$v.o" -o "/tmp/$v" || echo "link $v failed" >> "$st") &
done
wait
echo "linked at ${SECONDS}s" >> "$st"
LN_BWD_STAGE=1 timeout 150 /tmp/h_stage --no-bench > $R/tests-stage.txt 2>&1 &
timeout 150 /tmp/h_stage --no-bench > $R/tests-stage-off.txt 2>&1 &
wait
echo "tests stage at ${SECONDS}s: $(tail -1 $R/tests-stage.txt)" >> "$st"
echo "tests stage-off: $(tail -1 $R/tests-stage-off.txt)" >> "$st"
grep -m10 FAIL $R/tests-stage.txt >> "$st"
S16=10923x1536,8192x2048,5593x3000,5462x3072,4096x4096,3356x5000,2731x6144,2048x8192,1678x10000,1366x12288,1024x16384
for round in 1 2; do
  for v in base stage off; do
    case $v in base) b=/tmp/h_base;; *) b=/tmp/h_stage;; esac
    { unset LN_BWD_STAGE; [ $v = stage ] && export LN_BWD_STAGE=1
      timeout 60 $b --bench-only --dtypes bf16 --shapes "$S16"
      timeout 60 $b --bench-only --dtypes f16 --shapes "4096x4096,2731x6144"; } 2>&1 | grep "^bench" > $R/bench-$v-$round.txt
    echo "bench $v round $round at ${SECONDS}s: $(wc -l < $R/bench-$v-$round.txt) lines" >> "$st"
  done
done
export LN_BWD_STAGE=1
timeout 90 compute-sanitizer --tool memcheck /tmp/h_stage --bench-only --dtypes bf16 --shapes 4096x4096,2731x6144 > /tmp/mc.txt 2>&1
tail -3 /tmp/mc.txt > $R/memcheck-tail.txt
timeout 90 compute-sanitizer --tool racecheck /tmp/h_stage --bench-only --dtypes bf16 --shapes 4096x4096 > /tmp/rc.txt 2>&1
tail -3 /tmp/rc.txt > $R/racecheck-tail.txt
echo "sanitizer at ${SECONDS}s: memcheck $(tail -1 /tmp/mc.txt); racecheck $(tail -1 /tmp/rc.txt)" >> "$st"
tar -C /tmp -czf "$OUT/call1.tgz" call1
cp "$st" "$OUT/status.txt"
cat "$st"
