# Sourced by build_object.sh and static_sizes.sh: `harness_tree NAME [DIFF ...]` checks the
# arguments, moves to the repository root, takes the CUDA toolchain (../shared/gpu) and sets
# `src` to a temporary folder (removed on exit) with the tree's kernels and the kernel harness,
# DIFFs (paths as in the repository) applied to them, and `name` to NAME.
harness_tree() {
  [ $# -ge 1 ] || { echo "usage: $0 NAME [DIFF ...]" >&2; exit 2; }
  local root d diffs=()
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  name=$1
  shift
  for d in "$@"; do diffs+=("$(realpath "$d")"); done
  cd "$root"
  # One install at a time: two builds started together on a fresh machine raced (nvcc missing).
  eval "$(flock /tmp/cuda-toolchain.lock ../shared/gpu/cuda-toolchain.sh)"
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  cp candle-patch/candle-kernels/src/*.cu* bench/kernel-harness/ln_harness.cu \
    bench/kernel-harness/harness_common.cuh "$src/"
  for d in "${diffs[@]}"; do
    sed -e "s#candle-patch/candle-kernels/src/##g" -e "s#bench/kernel-harness/##g" "$d" |
      (cd "$src" && patch -s -p1)
  done
}
