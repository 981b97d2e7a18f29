#!/usr/bin/env bash
# Device call 1: the kernel harness with the `words` instances loading a full slot from the two
# aligned 16-byte words around it (`al`), and also storing it as one aligned 16-byte word with
# the neighbour lane's part passed by a shuffle (`st`), against pin 0052's harness (`old`): every
# test of each new binary, then the bench at the odd 16-bit widths and two aligned controls,
# alternating, two rounds. Binaries come as .gpu/var/h_<v>.o.xz.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
VARIANTS="${VARIANTS:-old al st}"
for v in $VARIANTS; do
  xz -dc .gpu/var/h_$v.o.xz > /tmp/h_$v.o && nvcc -arch=sm_90 /tmp/h_$v.o -o /tmp/h_$v || echo "link $v failed" | tee -a "$OUT/status.txt"
done
W=$OUT/w && mkdir -p "$W"
for v in $VARIANTS; do
  [ $v = old ] && continue
  { timeout 100 /tmp/h_$v --no-bench; } > "$W/harness-$v.log" 2>&1
  echo "harness $v rc=$? $(grep -E '^tests:' "$W/harness-$v.log")" | tee -a "$OUT/status.txt"
done
SHAPES=16762x1001,8385x2001,6711x2501,5591x3001,5593x3000,4194x4001,2796x6001,2158x7777,1678x9999,1119x15001,560x30001,256x65535,16384x1024
for round in 1 2; do
  for v in $VARIANTS; do
    timeout 60 /tmp/h_$v --bench-only --shapes $SHAPES > "$W/bench-$v-$round.txt" 2>&1
    echo "bench $v round $round rc=$?" | tee -a "$OUT/status.txt"
  done
done
for v in $VARIANTS; do grep -E "^bench (bf16|f16) " "$W/bench-$v-2.txt" | sed "s/^/$v /"; done | sort -k3,3 -k4,4 -s | cut -c1-150
tar -C "$W" -czf "$OUT/call1.tgz" . && rm -rf "$W"
