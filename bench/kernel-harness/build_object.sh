#!/usr/bin/env bash
# Builds a kernel harness object here (no GPU needed) for a device call to link (device_env.sh,
# link_harness NAME): the tree's kernels and harness, with DIFFs (paths as in the repository)
# applied to a copy, compiled for sm_90 into .gpu/var/NAME.o.xz. ~5-6 min of one core.
#   bench/kernel-harness/build_object.sh NAME [DIFF ...]
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
  sed -e "s#candle-patch/candle-kernels/src/##g" -e "s#bench/kernel-harness/##g" "$d" | (cd "$src" && patch -p1)
done
(cd "$src" && nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I . -c ln_harness.cu -o "$name.o")
mkdir -p .gpu/var
xz -T1 -c "$src/$name.o" > ".gpu/var/$name.o.xz"
echo "built .gpu/var/$name.o.xz"
