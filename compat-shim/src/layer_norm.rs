//! The `LayerNorm` module, built like `candle_nn::LayerNorm`.

use candle_core::{bail, Module, Result, Tensor};
use candle_nn::{Init, LayerNormConfig, VarBuilder};

/// Layer normalization over the trailing dims given by the weight's shape.
///
/// Same construction and parameter names (`weight`, `bias`) as `candle_nn::LayerNorm`, so
/// checkpoints load unchanged; unlike it, the forward is differentiable on every path and its
/// statistics are computed accurately (see the crate docs). A weight of shape `[h]` normalizes
/// the last dim; a weight of shape `[a, b]` normalizes the last two, as PyTorch's
/// `normalized_shape`.
#[derive(Clone, Debug)]
pub struct LayerNorm {
    weight: Tensor,
    bias: Option<Tensor>,
    eps: f64,
}

impl LayerNorm {
    /// Affine layer norm with weight and bias (both of shape `normalized_shape`).
    pub fn new(weight: Tensor, bias: Tensor, eps: f64) -> Self {
        Self {
            weight,
            bias: Some(bias),
            eps,
        }
    }

    /// Layer norm with a weight and no bias (what `candle_nn::layer_norm` builds for
    /// `affine: false`).
    pub fn new_no_bias(weight: Tensor, eps: f64) -> Self {
        Self {
            weight,
            bias: None,
            eps,
        }
    }

    pub fn weight(&self) -> &Tensor {
        &self.weight
    }

    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }

    pub fn eps(&self) -> f64 {
        self.eps
    }

    /// The normalized trailing dims (the weight's shape).
    pub fn normalized_shape(&self) -> &[usize] {
        self.weight.dims()
    }
}

impl Module for LayerNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        crate::ops::layer_norm(
            x,
            self.weight.dims(),
            Some(&self.weight),
            self.bias.as_ref(),
            self.eps,
        )
    }
}

/// Builds a [`LayerNorm`] over a last dim of `size` from a `VarBuilder`, exactly as
/// `candle_nn::layer_norm`: parameters `weight` (init 1) and, when `config.affine`, `bias`
/// (init 0). `remove_mean: false` (RmsNorm) is not a layer norm and is rejected: use
/// `candle_nn::RmsNorm`.
pub fn layer_norm<C: Into<LayerNormConfig>>(
    size: usize,
    config: C,
    vb: VarBuilder,
) -> Result<LayerNorm> {
    let config = config.into();
    if !config.remove_mean {
        bail!("layer_norm: remove_mean = false is RmsNorm, use candle_nn::rms_norm instead")
    }
    let weight = vb.get_with_hints(size, "weight", Init::Const(1.))?;
    let bias = if config.affine {
        Some(vb.get_with_hints(size, "bias", Init::Const(0.))?)
    } else {
        None
    };
    Ok(LayerNorm {
        weight,
        bias,
        eps: config.eps,
    })
}

/// Builds a [`LayerNorm`] with weight and no bias, as `candle_nn::layer_norm_no_bias`.
pub fn layer_norm_no_bias(size: usize, eps: f64, vb: VarBuilder) -> Result<LayerNorm> {
    let config = LayerNormConfig {
        eps,
        remove_mean: true,
        affine: false,
    };
    layer_norm(size, config, vb)
}
