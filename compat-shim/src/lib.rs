//! A drop-in, differentiable `LayerNorm` for candle 0.9.1.
//!
//! Stock `candle_nn::LayerNorm` (and `candle_nn::ops::layer_norm`) has no backward: gradients
//! of everything upstream of it silently vanish, and its one-pass variance (E\[x²\] − E\[x\]²)
//! loses all precision on rows with a large mean. This crate offers the same API with
//!
//! * a **composite** of stock candle tensor ops (default): differentiable, CPU and CUDA, on an
//!   unpatched candle 0.9.1, two-pass statistics accumulated in f32 (f64 for f64);
//! * the **fused kernel** of the patched candle fork (feature `kernel`):
//!   `candle_nn::ops::layer_norm_opt`, one launch forward and a fused backward.
//!
//! [`RmsNorm`] / [`rms_norm`] / [`rms_norm_op`] do the same for RMS normalization (stock
//! candle's fused `rms_norm`, used by `candle_nn::RmsNorm`, has no backward either): the fork's
//! fused op with `kernel`, a differentiable composite otherwise, the same backend switch.
//!
//! # Features
//!
//! | feature  | effect | requires |
//! |----------|--------|----------|
//! | *(none)* | composite of stock ops on every device | candle-core / candle-nn 0.9.1, patched or not |
//! | `kernel` | fused `candle_nn::ops::layer_norm_opt` forward + backward (CPU, CUDA) | the `[patch.crates-io]` to this repo's `candle-patch/`; **compile error otherwise** |
//! | `cuda`   | enables `candle-core/cuda` and `candle-nn/cuda` | a CUDA toolkit |
//!
//! With `kernel` on and candle not patched, the build stops with
//! `error[E0277]: feature "kernel" of candle-layer-norm-compat needs the patched candle-nn` and
//! the `[patch.crates-io]` lines to add to the workspace root `Cargo.toml`:
//!
//! ```toml
//! [patch.crates-io]
//! candle-core = { path = "<this repo>/candle-patch/candle-core" }
//! candle-nn = { path = "<this repo>/candle-patch/candle-nn" }
//! candle-kernels = { path = "<this repo>/candle-patch/candle-kernels" }
//! ```
//!
//! # Which one to use
//!
//! * Training or inference on the **patched** fork: enable `kernel`. It launches 1 kernel
//!   forward and 2 backward instead of ~8 and ~20: at TFT sizes (hidden 16–256, 10³–10⁵ rows)
//!   launches dominate, so the fused path is several times faster on GPU.
//! * On **stock** candle (you cannot or do not want to patch): leave `kernel` off; you get
//!   correct gradients and accurate statistics at the cost of more launches and memory traffic.
//! * To compare or bisect with `kernel` compiled in: [`set_backend`]`(`[`Backend::Composite`]`)`
//!   for the whole process, `CANDLE_LN_BACKEND=composite` in the environment (read at first
//!   use), or [`ops::layer_norm_with_backend`] for a single call. [`Backend::Auto`] (the
//!   default) means the kernel when compiled, else the composite. [`kernel_compiled`] tells
//!   which build you have.
//!
//! # Example
//!
//! ```
//! use candle_core::{DType, Device, Module, Tensor, Var};
//! use candle_layer_norm_compat::{layer_norm, ops, LayerNorm};
//! use candle_nn::{LayerNormConfig, VarBuilder, VarMap};
//!
//! # fn main() -> candle_core::Result<()> {
//! let dev = Device::Cpu;
//! // Built like candle_nn::layer_norm: parameters "ln.weight" and "ln.bias".
//! let varmap = VarMap::new();
//! let vb = VarBuilder::from_varmap(&varmap, DType::F32, &dev);
//! let ln: LayerNorm = layer_norm(3, LayerNormConfig::default(), vb.pp("ln"))?;
//!
//! let x = Var::new(&[[1f32, 2., 3.], [4., 5., 6.]], &dev)?;
//! let y = ln.forward(x.as_tensor())?;
//! let got = y.to_vec2::<f32>()?;
//! assert!((got[0][0] + 1.2247).abs() < 1e-4 && got[1][1].abs() < 1e-6);
//!
//! // Differentiable: gradients reach x and the parameters.
//! let grads = y.sqr()?.backward()?;
//! assert!(grads.get(x.as_tensor()).is_some());
//! assert!(grads.get(ln.weight()).is_some());
//!
//! // Functional form over several trailing dims (PyTorch's normalized_shape).
//! let x = Tensor::arange(0f32, 24., &dev)?.reshape((2, 3, 4))?;
//! let y = ops::layer_norm(&x, &[3, 4], None, None, 1e-5)?;
//! assert_eq!(y.dims(), &[2, 3, 4]);
//! # Ok(()) }
//! ```

mod backend;
mod layer_norm;
pub mod ops;
#[cfg(feature = "kernel")]
mod patched_guard;
mod rms_norm;

pub use backend::{backend, kernel_compiled, set_backend, Backend, BACKEND_ENV_VAR};
pub use candle_nn::LayerNormConfig;
pub use layer_norm::{layer_norm, layer_norm_no_bias, LayerNorm};
pub use rms_norm::{rms_norm, rms_norm_op, rms_norm_with_backend, RmsNorm};

/// Old name of [`LayerNorm`].
#[deprecated(
    since = "0.1.0",
    note = "use `candle_layer_norm_compat::LayerNorm` (same constructors; the backend is chosen \
            by feature `kernel` and `set_backend`)"
)]
pub type CudaLayerNorm = LayerNorm;

#[allow(deprecated)]
pub use ops::{cuda_layer_norm, layer_norm_with_fallback};
