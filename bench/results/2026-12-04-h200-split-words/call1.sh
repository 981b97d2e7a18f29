#!/usr/bin/env bash
# Device call 1 (2026-12-04, ~15:45 UTC): the split backward (rows past the backward tiers)
# with 16-bit rows without vectors in aligned pieces (h_sw.o: bwd_split_stats / bwd_split_dx
# dispatch such rows to an instance with load_pack / store_pack WORDS, as fwd_big does) against
# pin 0055 (h_sD.o, the same kernels as pin 0055): the kernel harness's tests of h_sw, both
# benched alternating at split widths (odd and aligned) and two resident controls, two rounds,
# then compute-sanitizer memcheck of h_sw. (Pin 0055's build is call 2: the carried files of
# both would pass the 64 MiB a call takes.)
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
st="$OUT/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
for v in h_sD h_sw; do
  xz -dc .gpu/var/$v.o.xz > /tmp/$v.o && nvcc -arch=sm_90 /tmp/$v.o -o /tmp/$v || echo "link $v failed" | tee -a "$st"
done
timeout 200 /tmp/h_sw --no-bench > "$OUT/tests-h_sw.txt" 2>&1
echo "tests h_sw rc=$?: $(tail -1 "$OUT/tests-h_sw.txt")" | tee -a "$st"
SHAPES=560x30001,560x30000,257x65535,256x65536,171x49153,171x49152,5591x3001,4096x4096
for round in 1 2; do
  for v in h_sD h_sw; do
    timeout 60 /tmp/$v --bench-only --shapes $SHAPES 2>&1 | grep "^bench" > "$OUT/bench-$v-$round.txt"
    echo "bench $v round $round rc=$?" >> "$st"
  done
done
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/h_sw --no-bench > /tmp/memcheck-h_sw.txt 2>&1
echo "memcheck h_sw rc=$?: $(grep -E 'ERROR SUMMARY|tests:' /tmp/memcheck-h_sw.txt | tr '\n' ' ')" | tee -a "$st"
tail -5 /tmp/memcheck-h_sw.txt > "$OUT/memcheck-h_sw-tail.txt"
cat "$st"
