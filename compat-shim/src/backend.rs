//! Process-wide backend selection (runtime override of the compile-time choice).

use std::sync::atomic::{AtomicU8, Ordering};

/// Name of the environment variable read once, at the first use of the backend selection.
///
/// `CANDLE_LN_BACKEND=composite` forces the composite; `auto` (or unset, or empty) keeps the
/// default. Any other value is ignored with a warning on stderr. [`set_backend`] called before
/// the first use wins over the variable; called later, it overrides it.
pub const BACKEND_ENV_VAR: &str = "CANDLE_LN_BACKEND";

/// Which implementation [`crate::ops::layer_norm`], [`crate::LayerNorm`], [`crate::rms_norm_op`]
/// and [`crate::RmsNorm`] use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Backend {
    /// The fused kernels (`candle_nn::ops::layer_norm_opt`, `candle_nn::ops::rms_norm`) when
    /// the crate is compiled with feature `kernel`, otherwise the composite.
    #[default]
    Auto,
    /// Always the composite of stock candle tensor ops, even when `kernel` is compiled in
    /// (A/B checks, benchmarks, bisecting a numerical difference).
    Composite,
}

const UNSET: u8 = 0;
const AUTO: u8 = 1;
const COMPOSITE: u8 = 2;

static BACKEND: AtomicU8 = AtomicU8::new(UNSET);

fn encode(b: Backend) -> u8 {
    match b {
        Backend::Auto => AUTO,
        Backend::Composite => COMPOSITE,
    }
}

fn from_env() -> Backend {
    match std::env::var(BACKEND_ENV_VAR) {
        Err(_) => Backend::Auto,
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "composite" => Backend::Composite,
            "" | "auto" => Backend::Auto,
            other => {
                eprintln!(
                    "candle-layer-norm-compat: ignoring {BACKEND_ENV_VAR}={other:?} \
                     (expected \"composite\" or \"auto\")"
                );
                Backend::Auto
            }
        },
    }
}

/// Sets the process-wide backend. Takes effect for every later call, on every thread.
pub fn set_backend(b: Backend) {
    BACKEND.store(encode(b), Ordering::Relaxed);
}

/// The process-wide backend: the last [`set_backend`], else `CANDLE_LN_BACKEND`, else
/// [`Backend::Auto`].
pub fn backend() -> Backend {
    let cur = match BACKEND.load(Ordering::Relaxed) {
        UNSET => {
            let v = encode(from_env());
            // A concurrent `set_backend` wins over the environment.
            match BACKEND.compare_exchange(UNSET, v, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => v,
                Err(set) => set,
            }
        }
        v => v,
    };
    if cur == COMPOSITE {
        Backend::Composite
    } else {
        Backend::Auto
    }
}

/// Whether the fused kernel is compiled in (feature `kernel`, which also proves at compile time
/// that candle is patched).
pub const fn kernel_compiled() -> bool {
    cfg!(feature = "kernel")
}

/// Whether a call with backend `b` runs the fused kernel.
pub(crate) fn uses_kernel(b: Backend) -> bool {
    kernel_compiled() && b == Backend::Auto
}
