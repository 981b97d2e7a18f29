# shellcheck shell=bash
# Upstream PR series (upstream/series/, see upstream/README.md), sourced by .ci/run.
#
# upstream-export-check (default, seconds, builds no candle): upstream/series/ is byte for byte
#   what `cargo xtask upstream-export` produces from upstream/stack.toml, the pin series and
#   upstream/resolutions/ (git am -3 replay onto pristine main 2a13b0f3 in a temp folder).
# upstream-apply (default, seconds): the series applies with `git apply` onto pristine upstream
#   main 2a13b0f3 (archive sha256 checked); DEP-3 headers complete.
# upstream-check (default): the same, then in the patched upstream tree rustfmt, clippy -D
#   warnings, `cargo test --release -p candle-nn`, candle-core grad_tests. It builds candle 0.11
#   and its dependencies (nothing shared with our workspace, CARGO_TARGET_DIR
#   target/upstream-check): measured 3.3 min from cold on 2 cores (2026-11-30), 45 s warm.
# upstream-cuda (opt-in: `.ci/run upstream-cuda`, or UPSTREAM_CUDA=1 to add it to the default
#   run): the full check including `cargo check -p candle-nn --features cuda`. Upstream main's
#   candle-kernels build script also compiles its moe/mmq static library with nvcc: 9.9 min
#   from cold (13.1 min for the whole check), too much on top of the default run (45 min).

step_upstream-export-check() { run cargo xtask upstream-export --check; }

step_upstream-apply() { run cargo xtask upstream-check --quick; }

step_upstream-check() {
  run cargo xtask upstream-check --no-cuda 2>&1 | tee "$LOG_DIR/upstream-check.log"
}

step_upstream-cuda() {
  if [[ ! -x $SHARED/gpu/cuda-toolchain.sh ]]; then
    log "missing $SHARED/gpu/cuda-toolchain.sh"
    return 1
  fi
  (
    eval "$("$SHARED/gpu/cuda-toolchain.sh")"
    run cargo xtask upstream-check
  ) 2>&1 | tee "$LOG_DIR/upstream-cuda.log"
}

add_step upstream-export-check --before clippy
add_step upstream-apply --before clippy
add_step upstream-check --before cuda-check
if [[ ${UPSTREAM_CUDA:-0} == 1 ]]; then
  add_step upstream-cuda
fi
