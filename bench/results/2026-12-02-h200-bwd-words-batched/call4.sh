#!/usr/bin/env bash
# Device call 4: the backward's words instances with a slot loaded as the aligned 16-byte word
# that holds its start plus the next lane's word passed by a shuffle (`S`, harness built with
# -DLNX_SHFL: `shfl-loads.diff`), against pin 0050's harness (`old`). S's correctness
# (--no-bench), its tests under compute-sanitizer memcheck (time-boxed), then both benches at
# 16-bit rows without vectors, alternating, two rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
for v in old S; do nvcc -arch=sm_90 .gpu/var/lnh_$v.o -o /tmp/lnh_$v || echo "link $v failed"; done
{ timeout 200 /tmp/lnh_S --no-bench; } > "$OUT/harness-S.log" 2>&1
echo "harness S rc=$? $(grep -E '^tests:' "$OUT/harness-S.log")" | tee -a "$OUT/status.txt"
shapes=16762x1001,8385x2001,5591x3001,4194x4001,2796x6001,2158x7777,1678x9999,1119x15001,6711x2501
for r in 1 2; do
  for v in old S; do
    /tmp/lnh_$v --bench-only --shapes $shapes > "$OUT/bench-$v-$r.txt" 2>&1
  done
done
{ timeout 240 compute-sanitizer --tool memcheck --print-limit 20 /tmp/lnh_S --no-bench; } > "$OUT/memcheck-S.log" 2>&1
echo "memcheck S rc=$? $(grep -E 'ERROR SUMMARY|^tests:' "$OUT/memcheck-S.log" | tr '\n' ' ')" | tee -a "$OUT/status.txt"
cd "$OUT" && xz -T0 harness-S.log memcheck-S.log
