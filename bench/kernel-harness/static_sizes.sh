#!/usr/bin/env bash
# Static size of every kernel of a kernel-harness build, with no GPU and no cuobjdump: the tree's
# kernels and harness, with DIFFs applied to a copy (as build_object.sh), compiled for sm_90 to
# a cubin; prints one line per kernel: SASS bytes (the ELF section .text.<kernel>, 16 bytes an
# instruction), registers, spill stores/loads (ptxas -v), demangled name. ~5 min of one core.
#   bench/kernel-harness/static_sizes.sh NAME [DIFF ...] > sizes-NAME.txt
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 NAME [DIFF ...]" >&2; exit 2; }
root="$(cd "$(dirname "$0")/../.." && pwd)"
name=$1; shift
diffs=()
for d in "$@"; do diffs+=("$(realpath "$d")"); done
cd "$root"
eval "$(../shared/gpu/cuda-toolchain.sh)"
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cp candle-patch/candle-kernels/src/*.cu* bench/kernel-harness/ln_harness.cu bench/kernel-harness/harness_common.cuh "$src/"
for d in "${diffs[@]}"; do
  sed -e "s#candle-patch/candle-kernels/src/##g" -e "s#bench/kernel-harness/##g" "$d" | (cd "$src" && patch -s -p1)
done
(cd "$src" && nvcc -O3 -std=c++17 -arch=sm_90 -cubin -I . -Xptxas -v ln_harness.cu -o "$name.cubin" 2> ptxas.txt)
python3 "$root/bench/kernel-harness/static_sizes.py" "$src/$name.cubin" "$src/ptxas.txt"
