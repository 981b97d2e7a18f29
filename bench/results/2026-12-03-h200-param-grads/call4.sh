#!/usr/bin/env bash
# Device call 4: does the TFT's training step move? pin 0052's tft (`old`, .gpu/var/tft_old.xz)
# against this tree's (`new`), `tft --profile` at the default size (50 steps) and at the paper's
# (20 steps), fused LayerNorm, alternating, three rounds.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
B=/tmp/gpu-bins && rm -rf $B && mkdir -p $B && tar -C $B --strip-components=1 -xJf .gpu/bins.tar.xz
xz -dc .gpu/var/tft_old.xz > /tmp/tft_old && chmod +x /tmp/tft_old
W=$OUT/tft && mkdir -p "$W"
for r in 1 2 3; do
  for v in old new; do
    bin=$B/tft-bin-tft; [ $v = old ] && bin=/tmp/tft_old
    timeout 100 $bin --device cuda --profile 50 --layer-norm kernel > "$W/default-$v-$r.log" 2>&1
    echo "default $v $r rc=$?" | tee -a "$OUT/status.txt"
    timeout 150 $bin --device cuda --dataset synthetic --preset paper --profile 20 --layer-norm kernel > "$W/paper-$v-$r.log" 2>&1
    echo "paper $v $r rc=$?" | tee -a "$OUT/status.txt"
  done
done
grep -iE "step|total" "$W/default-new-1.log" | head -8
tar -C "$W" -czf "$OUT/call4.tgz" . && rm -rf "$W"
