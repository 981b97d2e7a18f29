#!/usr/bin/env bash
# Device call 6 (2026-12-04, ~16:35 UTC): do the harness tests guard pin 0056's words kernels?
# h_mut.o: pin 0056 with a mutant bwd_split_dx whose `words` instances store each full slot of
# dx one slot too early (`slot - 1`); every other kernel as shipped. The harness's tests.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
xz -dc .gpu/var/h_mut.o.xz > /tmp/h_mut.o && nvcc -arch=sm_90 /tmp/h_mut.o -o /tmp/h_mut || echo "link failed"
timeout 200 /tmp/h_mut --no-bench > "$OUT/tests-h_mut.txt" 2>&1
echo "tests h_mut rc=$?: $(tail -1 "$OUT/tests-h_mut.txt")" | tee "$OUT/status.txt"
grep -E "FAIL" "$OUT/tests-h_mut.txt" | sed -E 's/ +/ /g' | cut -c1-140 | sort | uniq -c | sort -rn | head -20
