//! Compile-time proof that `candle-nn` is the patched fork (feature `kernel` only).
//!
//! Mechanism (stable Rust, no build script): the name `layer_norm_opt` is resolved in a
//! function body where a block-level glob import of `candle_nn::ops::*` shadows a module-level
//! glob import of [`unpatched::layer_norm_opt`] (a unit struct). On the patched fork the
//! function wins; on stock candle only the unit struct is in scope. The resolved value must
//! implement [`CandleNnIsPatched`], whose `#[diagnostic::on_unimplemented]` attribute turns
//! the failure into one `E0277` error carrying a fully custom message and the `[patch]` recipe.

use candle_core::{Result, Tensor};

/// Implemented by (and only by) a function with the signature of the patched
/// `candle_nn::ops::layer_norm_opt`.
#[diagnostic::on_unimplemented(
    message = "feature \"kernel\" of candle-layer-norm-compat needs the patched candle-nn: `candle_nn::ops::layer_norm_opt` is missing",
    label = "stock candle-nn here (crates.io 0.9.1 or upstream git): the [patch] is not applied",
    note = "apply the patch in your WORKSPACE ROOT Cargo.toml, then run `cargo update -p candle-nn`:\n\
            [patch.crates-io]\n\
            candle-core = {{ path = \"<candle-layer-norm-compat repo>/candle-patch/candle-core\" }}\n\
            candle-nn = {{ path = \"<candle-layer-norm-compat repo>/candle-patch/candle-nn\" }}\n\
            candle-kernels = {{ path = \"<candle-layer-norm-compat repo>/candle-patch/candle-kernels\" }}\n\
            (for a git dependency use [patch.\"https://github.com/huggingface/candle\"] with the same three lines)",
    note = "the patch only applies when the versions match (0.9.1); check that Cargo.lock has no [[patch.unused]] entry",
    note = "or drop feature \"kernel\": the default composite backend is differentiable and works on stock candle (README \"[patch.crates-io]\")"
)]
pub(crate) trait CandleNnIsPatched {
    fn call(
        &self,
        xs: &Tensor,
        alpha: Option<&Tensor>,
        beta: Option<&Tensor>,
        eps: f32,
    ) -> Result<Tensor>;
}

impl<F> CandleNnIsPatched for F
where
    F: Fn(&Tensor, Option<&Tensor>, Option<&Tensor>, f32) -> Result<Tensor>,
{
    fn call(
        &self,
        xs: &Tensor,
        alpha: Option<&Tensor>,
        beta: Option<&Tensor>,
        eps: f32,
    ) -> Result<Tensor> {
        self(xs, alpha, beta, eps)
    }
}

mod unpatched {
    /// Stand-in that only exists so that the name resolves on stock candle; it does not
    /// implement [`super::CandleNnIsPatched`], which triggers the custom compile error.
    #[allow(non_camel_case_types, dead_code)]
    pub struct layer_norm_opt;
}

#[allow(unused_imports)]
use self::unpatched::*;

/// `candle_nn::ops::layer_norm_opt`, or a compile error explaining how to patch candle.
/// (Must not be named `layer_norm_opt`: a module item would shadow the stand-in.)
pub(crate) fn fused_layer_norm(
    xs: &Tensor,
    alpha: Option<&Tensor>,
    beta: Option<&Tensor>,
    eps: f32,
) -> Result<Tensor> {
    // Shadows `unpatched::*` inside this block when the patched item exists.
    #[allow(unused_imports)]
    use candle_nn::ops::*;
    // The trailing comment is printed with the error's source line; keep it on that line.
    CandleNnIsPatched::call(&layer_norm_opt, xs, alpha, beta, eps) // "kernel" needs candle patched: README [patch.crates-io]
}
