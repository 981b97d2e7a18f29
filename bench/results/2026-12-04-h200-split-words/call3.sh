#!/usr/bin/env bash
# Device call 3 (2026-12-04, ~16:00 UTC): call 1 again with the split backward's `words` code in
# kernels of their own (h_w2.o: layernorm_bwd_split_{stats,dx}_words_<16-bit dtype>, chosen by
# the host for rows that fit no 8-byte vector; the other kernels as pin 0055) against pin 0055
# (h_sD.o): the harness's tests of h_w2, both benched alternating, two rounds, memcheck of h_w2.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
st="$OUT/status.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > "$OUT/device.txt" 2>&1
for v in h_sD h_w2; do
  xz -dc .gpu/var/$v.o.xz > /tmp/$v.o && nvcc -arch=sm_90 /tmp/$v.o -o /tmp/$v || echo "link $v failed" | tee -a "$st"
done
timeout 200 /tmp/h_w2 --no-bench > "$OUT/tests-h_w2.txt" 2>&1
echo "tests h_w2 rc=$?: $(tail -1 "$OUT/tests-h_w2.txt")" | tee -a "$st"
SHAPES=560x30001,560x30000,257x65535,256x65536,171x49153,171x49152,5591x3001,4096x4096
for round in 1 2; do
  for v in h_sD h_w2; do
    timeout 60 /tmp/$v --bench-only --shapes $SHAPES 2>&1 | grep "^bench" > "$OUT/bench-$v-$round.txt"
    echo "bench $v round $round rc=$?" >> "$st"
  done
done
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/h_w2 --no-bench > /tmp/memcheck-h_w2.txt 2>&1
echo "memcheck h_w2 rc=$?: $(grep -E 'ERROR SUMMARY|tests:' /tmp/memcheck-h_w2.txt | tr '\n' ' ')" | tee -a "$st"
tail -5 /tmp/memcheck-h_w2.txt > "$OUT/memcheck-h_w2-tail.txt"
cat "$st"
