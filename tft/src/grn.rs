//! Gated linear unit, gate-add-norm and the gated residual network (GRN).

use crate::norm::{layer_norm, LayerNorm};
use candle_core::{Module, Result, Tensor};
use candle_nn::{linear, Linear, VarBuilder};

pub const LN_EPS: f64 = 1e-5;

/// `GLU(x) = sigmoid(W_g x + b_g) * (W_v x + b_v)`.
#[derive(Debug, Clone)]
pub struct Glu {
    gate: Linear,
    value: Linear,
}

impl Glu {
    pub fn new(in_dim: usize, out_dim: usize, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            gate: linear(in_dim, out_dim, vb.pp("gate"))?,
            value: linear(in_dim, out_dim, vb.pp("value"))?,
        })
    }
}

impl Module for Glu {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let g = candle_nn::ops::sigmoid(&self.gate.forward(x)?)?;
        g * self.value.forward(x)?
    }
}

/// `LayerNorm(skip + GLU(x))`: the gated skip connection used throughout the TFT.
#[derive(Debug, Clone)]
pub struct GateAddNorm {
    glu: Glu,
    norm: LayerNorm,
}

impl GateAddNorm {
    pub fn new(in_dim: usize, out_dim: usize, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            glu: Glu::new(in_dim, out_dim, vb.pp("glu"))?,
            norm: layer_norm(out_dim, LN_EPS, vb.pp("norm"))?,
        })
    }

    pub fn forward(&self, x: &Tensor, skip: &Tensor) -> Result<Tensor> {
        self.norm.forward(&(skip + self.glu.forward(x)?)?)
    }
}

/// Gated residual network:
/// `GRN(a, c) = LayerNorm(skip(a) + GLU(W1 ELU(W2 a + W3 c + b2) + b1))`.
///
/// `skip` is the identity when `in_dim == out_dim`, a linear projection otherwise; the
/// optional context `c` (static covariate encoding) is broadcast over the time axis.
#[derive(Debug, Clone)]
pub struct Grn {
    skip: Option<Linear>,
    fc1: Linear,
    context: Option<Linear>,
    fc2: Linear,
    gate_norm: GateAddNorm,
}

impl Grn {
    pub fn new(
        in_dim: usize,
        hidden: usize,
        out_dim: usize,
        context_dim: Option<usize>,
        vb: VarBuilder,
    ) -> Result<Self> {
        let skip = if in_dim != out_dim {
            Some(linear(in_dim, out_dim, vb.pp("skip"))?)
        } else {
            None
        };
        let context = match context_dim {
            Some(c) => Some(candle_nn::linear_no_bias(c, hidden, vb.pp("context"))?),
            None => None,
        };
        Ok(Self {
            skip,
            fc1: linear(in_dim, hidden, vb.pp("fc1"))?,
            context,
            fc2: linear(hidden, hidden, vb.pp("fc2"))?,
            gate_norm: GateAddNorm::new(hidden, out_dim, vb.pp("gate_norm"))?,
        })
    }

    /// `x`: `[.., in_dim]`; `context`: `[batch, context_dim]` when `x` is `[batch, time, in_dim]`,
    /// or `[batch, context_dim]` when `x` is `[batch, in_dim]`.
    pub fn forward(&self, x: &Tensor, context: Option<&Tensor>) -> Result<Tensor> {
        let skip = match &self.skip {
            Some(s) => s.forward(x)?,
            None => x.clone(),
        };
        let mut h = self.fc1.forward(x)?;
        match (&self.context, context) {
            (Some(proj), Some(c)) => {
                let mut c = proj.forward(c)?;
                while c.rank() < h.rank() {
                    c = c.unsqueeze(1)?;
                }
                h = h.broadcast_add(&c)?;
            }
            (None, None) => {}
            (Some(_), None) => candle_core::bail!("GRN built with a context but called without"),
            (None, Some(_)) => candle_core::bail!("GRN built without a context but given one"),
        }
        let h = self.fc2.forward(&h.elu(1.0)?)?;
        self.gate_norm.forward(&h, &skip)
    }
}
