#!/usr/bin/env bash
# Builds a kernel harness object here (no GPU needed) for a device call to link (device_env.sh,
# link_harness NAME): the tree's kernels and harness, with DIFFs (paths as in the repository)
# applied to a copy, compiled for sm_90 into .gpu/var/NAME.o.xz. ~5-6 min of one core.
#   bench/kernel-harness/build_object.sh NAME [DIFF ...]
set -euo pipefail
source "$(dirname "$0")/harness_tree.sh"
harness_tree "$@"
(cd "$src" && nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I . -c ln_harness.cu -o "$name.o")
mkdir -p .gpu/var
xz -T1 -c "$src/$name.o" > ".gpu/var/$name.o.xz"
echo "built .gpu/var/$name.o.xz"
