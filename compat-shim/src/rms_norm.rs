//! The `RmsNorm` module and its functional form, built like `candle_nn::RmsNorm`.

use crate::backend::{backend, uses_kernel, Backend};
use candle_core::{bail, DType, Module, Result, Tensor, D};
use candle_nn::{Init, VarBuilder};

/// RMS normalization over the last dim, `y = x / sqrt(mean(x²) + eps) * weight`.
///
/// Same construction and parameter name (`weight`) as `candle_nn::RmsNorm`, so checkpoints load
/// unchanged. Stock candle 0.9.1's fused `rms_norm` has no backward (the input and the weight of
/// an `RmsNorm` get no gradient); this one is differentiable on every path: the fork's fused
/// `candle_nn::ops::rms_norm` with feature `kernel`, else a composite of stock tensor ops.
#[derive(Clone, Debug)]
pub struct RmsNorm {
    weight: Tensor,
    eps: f64,
}

impl RmsNorm {
    /// `weight`: shape `[hidden]`, the size of the last dim of the inputs.
    pub fn new(weight: Tensor, eps: f64) -> Self {
        Self { weight, eps }
    }

    pub fn weight(&self) -> &Tensor {
        &self.weight
    }
}

impl Module for RmsNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        rms_norm_op(x, &self.weight, self.eps)
    }
}

/// An `RmsNorm` of `size` whose weight `weight` (initialized to ones) comes from `vb`, as
/// `candle_nn::rms_norm`.
pub fn rms_norm(size: usize, eps: f64, vb: VarBuilder) -> Result<RmsNorm> {
    let weight = vb.get_with_hints(size, "weight", Init::Const(1.))?;
    Ok(RmsNorm::new(weight, eps))
}

/// RMS norm over the last dim of `x` with the process-wide [`backend()`](crate::backend()).
/// `weight`: shape `[last dim of x]`, same dtype as `x` (f32, f64, f16 or bf16). The fused
/// kernel takes `eps` as f32 (see [`crate::ops::layer_norm`] for f64 inputs).
pub fn rms_norm_op(x: &Tensor, weight: &Tensor, eps: f64) -> Result<Tensor> {
    rms_norm_with_backend(backend(), x, weight, eps)
}

/// [`rms_norm_op`] with an explicit backend for this call only.
pub fn rms_norm_with_backend(
    backend: Backend,
    x: &Tensor,
    weight: &Tensor,
    eps: f64,
) -> Result<Tensor> {
    let Some(&hidden) = x.dims().last() else {
        bail!("rms_norm: x must have rank >= 1, got a rank-0 tensor (a scalar)")
    };
    if weight.dims() != [hidden] {
        bail!(
            "rms_norm: weight has shape {:?}, expected [{hidden}] (the last dim of x {:?})",
            weight.dims(),
            x.dims()
        )
    }
    let dtype = x.dtype();
    if !matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64) {
        bail!("rms_norm: unsupported dtype {dtype:?} (expected f16, bf16, f32 or f64)")
    }
    if weight.dtype() != dtype {
        bail!(
            "rms_norm: weight is {:?} but x is {dtype:?}; convert one with to_dtype",
            weight.dtype()
        )
    }
    if uses_kernel(backend) && x.elem_count() > 0 {
        return candle_nn::ops::rms_norm(&x.contiguous()?, weight, eps as f32);
    }
    // Composite: the statistic in f32 (f64 for f64), as the kernel.
    let internal = match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    };
    let x = x.to_dtype(internal)?;
    let rstd = (x.sqr()?.mean_keepdim(D::Minus1)? + eps)?.sqrt()?.recip()?;
    x.broadcast_mul(&rstd)?
        .to_dtype(dtype)?
        .broadcast_mul(weight)
}
