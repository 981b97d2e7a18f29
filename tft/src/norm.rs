//! The LayerNorm every block of the model uses: `candle-layer-norm-compat`'s drop-in
//! `LayerNorm` (fused kernel with feature `kernel`, else the differentiable composite;
//! switchable at run time with [`set_backend`]).

pub use candle_layer_norm_compat::{
    backend, kernel_compiled, layer_norm, set_backend, Backend, LayerNorm,
};
