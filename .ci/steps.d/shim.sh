# shellcheck shell=bash
# compat-shim in its default configuration (composite backend, no `kernel` feature), sourced by
# .ci/run. README's workspace test command builds the shim with `kernel` (the tft crate enables
# it and cargo unifies features), so the default configuration needs its own run; alone,
# `-p candle-layer-norm-compat` builds only the shim's own default features.
step_shim-default() {
  cargo_test_logged shim-default cargo test --release -p candle-layer-norm-compat
}
add_step shim-default --before vendored-tests
