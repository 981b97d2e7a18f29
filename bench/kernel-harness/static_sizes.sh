#!/usr/bin/env bash
# Static size of every kernel of a kernel-harness build, with no GPU and no cuobjdump: the tree's
# kernels and harness, with DIFFs applied to a copy (as build_object.sh), compiled for sm_90 to
# a cubin; prints one line per kernel: SASS bytes (the ELF section .text.<kernel>, 16 bytes an
# instruction), registers, spill stores/loads (ptxas -v), demangled name. ~5 min of one core.
#   bench/kernel-harness/static_sizes.sh NAME [DIFF ...] > sizes-NAME.txt
set -euo pipefail
source "$(dirname "$0")/harness_tree.sh"
harness_tree "$@"
(cd "$src" && nvcc -O3 -std=c++17 -arch=sm_90 -cubin -I . -Xptxas -v ln_harness.cu -o "$name.cubin" 2> ptxas.txt)
python3 bench/kernel-harness/static_sizes.py "$src/$name.cubin" "$src/ptxas.txt"
