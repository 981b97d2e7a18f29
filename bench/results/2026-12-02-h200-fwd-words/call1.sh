#!/usr/bin/env bash
# Device call 1: the forward's `words` instances (aligned pieces for 16-bit rows without
# vectors), in every forward tier for this call (PIECES = WORDS), to see where they pay. Kernel
# harness objects compiled on the build machine, linked here: `old` = pin 0050 (HEAD's kernels),
# `fw` = with the forward words instances. Correctness of `fw` (--no-bench, every case printed);
# its bench at odd 16-bit widths (one shape per forward tier, tensors >= 32 MiB), `fw`, `fw` with
# LN_NO_WORDS=1 (element accesses, the same binary) and `old`, alternating, two rounds; the sweep
# of every fitting forward kernel (tiers' words instances and the `big` kernel) at the widest.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
for v in old fw; do
  nvcc -arch=sm_90 .gpu/var/lnh_$v.o -o /tmp/lnh_$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
{ LN_VERBOSE=1 timeout 300 /tmp/lnh_fw --no-bench; } > "$OUT/harness-fw.log" 2>&1
echo "harness fw rc=$? $(grep -E '^tests:' "$OUT/harness-fw.log"), fwd words cases: $(grep -c 'tiers=[a-z0-9]*-words/' "$OUT/harness-fw.log")" | tee -a "$OUT/status.txt"
shapes=172961x97,83469x201,50383x333,16762x1001,5591x3001,2158x7777,1119x15001,560x30001,334x50257,256x65535,16384x1024,4096x4096
for r in 1 2; do
  /tmp/lnh_fw --bench-only --shapes $shapes > "$OUT/bench-fw-$r.txt" 2>&1
  LN_NO_WORDS=1 /tmp/lnh_fw --bench-only --shapes $shapes > "$OUT/bench-elem-$r.txt" 2>&1
  /tmp/lnh_old --bench-only --shapes $shapes > "$OUT/bench-old-$r.txt" 2>&1
done
for v in fw elem old; do
  grep -h "^bench bf16\|^bench f16" "$OUT"/bench-$v-*.txt | awk -v v=$v '{print $2, $3, $5, v, $8}'
done | sort -k1,2 -k4 | tee -a "$OUT/status.txt"
/tmp/lnh_fw --bench-only --sweep --shapes 1119x15001,560x30001,334x50257,256x65535 > "$OUT/sweep-fw.txt" 2>&1
grep "^sweep bf16.* fwd" "$OUT/sweep-fw.txt" | tee -a "$OUT/status.txt"
cd "$OUT" && xz -T0 harness-fw.log
