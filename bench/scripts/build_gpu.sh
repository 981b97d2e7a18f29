#!/usr/bin/env bash
# Builds every CUDA binary the device run needs (here, without a GPU) and packs them into
# .gpu/bins.tar.xz (ignored, carried to the device machine). Needs ../shared/gpu/cuda-toolchain.sh.
#   bench/scripts/build_gpu.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
eval "$(../shared/gpu/cuda-toolchain.sh)"
stage=.gpu/bins
rm -rf "$stage" && mkdir -p "$stage"

# Prints the test executables of a cargo invocation ("name path" per line).
executables() {
  cargo "$@" --message-format=json 2>/dev/null | python3 -c '
import json, sys, os
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        kind = m["target"]["kind"][0]
        name = m["target"]["name"] if kind in ("test", "example") else kind + "-" + m["target"]["name"]
        print(name, m["executable"])'
}
collect() { # prefix, cargo args...
  local prefix=$1; shift
  cargo "$@" >&2 || { echo "build failed: cargo $*" >&2; exit 1; }
  executables "$@" | while read -r name exe; do
    cp "$exe" "$stage/$prefix-$name"; strip "$stage/$prefix-$name"
  done
}
# Vendored candle tests (upstream style, test_device! _gpu variants).
collect candle-nn test --release --no-run --manifest-path candle-patch/Cargo.toml -p candle-nn --features cuda --test ops --test layer_norm --test optim --test rnn --test fused_grads
collect candle-core test --release --no-run --manifest-path candle-patch/Cargo.toml -p candle-core --features cuda --test grad_tests --test cuda_pool_tests --test cuda_device_tests --test tensor_tests
# Our crates.
collect shim test --release --no-run -p candle-layer-norm-compat --features kernel,cuda --test kernel --test composite
collect shim build --release -p candle-layer-norm-compat --features kernel,cuda --example ab_bench
collect bench build --release -p ln-bench --features cuda --bin gpu_bench
collect bench build --release -p ln-bench --features cuda --bin first_launch
collect bench build --release -p ln-bench --features cuda --bin family_bench
collect bench build --release -p ln-bench --features cuda --bin op_overhead
if [ -d tft ]; then
  (collect tft build --release -p tft --features cuda --bins) || echo "WARNING: tft binary not built" >&2
  (collect tft test --release --no-run -p tft --features cuda --test cuda) || echo "WARNING: tft tests not built" >&2
fi
ls -la "$stage"
# A dictionary that spans every binary, so the PTX and fatbin each of them embeds is stored once:
# with pins 0001-0065 (18 binaries, 747 MB) `-9` (64 MiB) packed 80.7 MB, over the 64 MiB a
# device call carries; preset 1 with an 800 MiB dictionary 19.8 MB in 36 s (2026-12-05). One
# thread: xz splits a multi-threaded stream into blocks that do not share the dictionary.
tar -C .gpu -cf - bins | xz -T1 --lzma2=preset=1,dict=800MiB > .gpu/bins.tar.xz
rm -rf "$stage"
ls -la .gpu/bins.tar.xz
