# shellcheck shell=bash
# Upstream PR series (upstream/series/, see upstream/README.md), sourced by .ci/run.
#
# upstream-export-check (default, seconds, builds no candle): upstream/series/ is byte for byte
#   what `cargo xtask upstream-export` produces from upstream/stack.toml, the pin series and
#   upstream/resolutions/ (git am -3 replay onto pristine main 2a13b0f3 in a temp folder).
# upstream-apply (default, seconds): the series applies with `git apply` onto pristine upstream
#   main 2a13b0f3 (archive sha256 checked); DEP-3 headers complete.
# upstream-check (default): the same, then in the patched upstream tree after EACH PR rustfmt,
#   clippy -D warnings, `cargo test --release -p candle-nn`, candle-core grad_tests (+ the test
#   files the PR touches). It builds candle 0.11 and its dependencies (nothing shared with our
#   workspace, CARGO_TARGET_DIR target/upstream-check): 21.5 min cold on 2 cores shared with
#   another engineer's builds (load 5-7, 2026-11-30); about 6 min on idle cores by the ratio to
#   the end-only check (3.3 min cold idle). With 64 PRs (13 of them rebuild candle-core; this
#   step took 1239 s of a 3456 s CI run on 2026-12-07) CI runs it as UPSTREAM_TESTS_AT_END=1
#   (the default here): fmt + clippy after each PR (no clippy after the 8 that touch only
#   .cu/.cuh files and remove none: clippy builds no CUDA), the tests only after the last;
#   UPSTREAM_TESTS_AT_END=0 checks everything after each PR (locally:
#   `cargo xtask upstream-check --no-cuda`).
# upstream-cuda (opt-in: `.ci/run upstream-cuda`, or UPSTREAM_CUDA=1 to add it to the default
#   run): the full check including `cargo check -p candle-nn --features cuda`. Upstream main's
#   candle-kernels build script also compiles its moe/mmq static library with nvcc: 9.9 min
#   from cold (13.1 min for the end-only check; per PR an incremental check follows), too much
#   on top of the default run (45 min).

step_upstream-export-check() { run cargo xtask upstream-export --check; }

step_upstream-apply() { run cargo xtask upstream-check --quick; }

step_upstream-check() {
  local extra=()
  if [[ ${UPSTREAM_TESTS_AT_END:-1} == 1 ]]; then
    extra=(--tests-at-end)
  fi
  run cargo xtask upstream-check --no-cuda "${extra[@]}" 2>&1 | tee "$LOG_DIR/upstream-check.log"
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
