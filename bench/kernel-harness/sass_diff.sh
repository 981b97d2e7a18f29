#!/usr/bin/env bash
# Which production kernels a kernel diff changes, instruction by instruction, with no GPU: the
# tree's candle-kernels/src/layer_norm.cu and the same with DIFFs applied (paths as in the
# repository, as build_object.sh) compiled for sm_90 to cubins, disassembled with nvdisasm and
# compared kernel by kernel (sass_diff.py): a kernel whose SASS is the same in both cannot
# time differently, so a device call needs to time only the ones listed. nvdisasm and
# cuobjdump (not in ../shared/gpu's toolchain) come from NVIDIA's PyPI wheels, pinned by hash,
# into ~/.cache/ln-sass. ~3 min of two cores (3 min 15 s here, 2026-12-08).
#   bench/kernel-harness/sass_diff.sh DIFF [DIFF ...] > sass-diff.md
set -euo pipefail
source "$(dirname "$0")/harness_tree.sh"
harness_tree sass "$@"
tools=${LN_SASS_TOOLS:-$HOME/.cache/ln-sass}
if [ ! -x "$tools/nvidia/cu13/bin/nvdisasm" ]; then
  mkdir -p "$tools/wheels"
  cat > "$tools/wheels/req.txt" <<'REQ'
nvidia-cuda-nvdisasm==13.5.37 --hash=sha256:d3fdbdd49fa53e2e4aacd3db8259d052bd2b049ececdcb69e92e083c6728e7ca
nvidia-cuda-cuobjdump==13.5.37 --hash=sha256:38780fee50863252a0b8926357faa91615ca1c8346490563f33a06100cd73f58
REQ
  pip download -q --no-deps --only-binary=:all: --require-hashes -r "$tools/wheels/req.txt" \
    -d "$tools/wheels" >&2
  for w in "$tools"/wheels/*.whl; do python3 -m zipfile -e "$w" "$tools"; done
  chmod +x "$tools"/nvidia/cu13/bin/*
fi
bin=$tools/nvidia/cu13/bin
cubin() { # source folder, output stem
  (cd "$1" && nvcc -O3 -std=c++17 -arch=sm_90 -cubin -I . layer_norm.cu -o "$2.cubin")
  "$bin/nvdisasm" -c "$2.cubin" > "$2.sass"
  "$bin/cuobjdump" --dump-resource-usage "$2.cubin" > "$2.res"
}
cubin candle-patch/candle-kernels/src "$src/base" &
base_pid=$!
cubin "$src" "$src/new"
wait $base_pid
python3 bench/kernel-harness/sass_diff.py "$src/base" "$src/new"
