//! `CANDLE_LN_BACKEND` is read at the first use (own test binary: the process-wide state must
//! be fresh).

use candle_layer_norm_compat::{backend, set_backend, Backend, BACKEND_ENV_VAR};

#[test]
fn env_var_selects_composite_at_first_use_and_set_backend_overrides() {
    assert_eq!(BACKEND_ENV_VAR, "CANDLE_LN_BACKEND");
    // Single test in this binary: no other thread reads the environment concurrently.
    std::env::set_var(BACKEND_ENV_VAR, "Composite");
    assert_eq!(backend(), Backend::Composite);
    // Read once: later changes of the variable are ignored.
    std::env::set_var(BACKEND_ENV_VAR, "auto");
    assert_eq!(backend(), Backend::Composite);
    set_backend(Backend::Auto);
    assert_eq!(backend(), Backend::Auto);
}
