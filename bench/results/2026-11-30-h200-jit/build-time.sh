#!/usr/bin/env bash
# Clean build of candle-kernels before (PTX only) and after (PTX + layer-norm fatbin), then
# per-module nvcc costs: PTX (bindgen_cuda's flags) and fatbin (build.rs's flags).
set -uo pipefail
cd /work/wt-fatbin
eval "$(../shared/gpu/cuda-toolchain.sh)"
cp Cargo.lock candle-patch/candle-kernels/Cargo.lock
M="--offline --release --manifest-path candle-patch/candle-kernels/Cargo.toml --target-dir target"
for mode in before after; do
  cargo clean $M -p candle-kernels 2>&1 | tail -1
  echo "== $mode $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ $mode = before ]; then export CANDLE_KERNELS_FATBIN_ARCHS=; else unset CANDLE_KERNELS_FATBIN_ARCHS; fi
  /usr/bin/time -f "$mode: %e s wall, %U s user, %S s sys" cargo build $M 2>&1 | grep -E "Finished|wall|error"
  ls -la target/release/build/candle-kernels-*/out/*.fatbin 2>/dev/null
done
unset CANDLE_KERNELS_FATBIN_ARCHS
rm -f candle-patch/candle-kernels/Cargo.lock
cd candle-patch/candle-kernels
G=""; for a in 80 86 89 90; do G="$G --generate-code=arch=compute_$a,code=sm_$a"; done
G="$G --generate-code=arch=compute_90,code=compute_90"
F="--default-stream per-thread -Isrc"
mkdir -p /tmp/fb/m
for f in src/*.cu; do
  n=$(basename $f .cu)
  echo "== $n $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -f "$n ptx: %e s wall, %U s user, %S s sys" nvcc --gpu-architecture=sm_90 --ptx $F -o /tmp/fb/m/$n.ptx $f 2>&1 | grep -E "wall|error"
  /usr/bin/time -f "$n fatbin: %e s wall, %U s user, %S s sys" nvcc --fatbin -Xfatbin -compress-all $G --threads 2 $F -o /tmp/fb/m/$n.fatbin $f 2>&1 | grep -E "wall|error"
done
ls -la /tmp/fb/m
date -u
