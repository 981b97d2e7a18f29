//! Interpretable multi-head attention (TFT §4.4): per-head queries and keys, one value
//! projection shared by all heads, head outputs averaged, causal mask.

use candle_core::{Device, Module, Result, Tensor, D};
use candle_nn::{linear, Linear, VarBuilder};

#[derive(Debug, Clone)]
pub struct InterpretableMultiHeadAttention {
    q: Linear,
    k: Linear,
    v: Linear,
    out: Linear,
    n_heads: usize,
    d_head: usize,
}

impl InterpretableMultiHeadAttention {
    pub fn new(hidden: usize, n_heads: usize, vb: VarBuilder) -> Result<Self> {
        if n_heads == 0 || !hidden.is_multiple_of(n_heads) {
            candle_core::bail!("hidden {hidden} not divisible by n_heads {n_heads}");
        }
        let d_head = hidden / n_heads;
        Ok(Self {
            q: linear(hidden, n_heads * d_head, vb.pp("q"))?,
            k: linear(hidden, n_heads * d_head, vb.pp("k"))?,
            v: linear(hidden, d_head, vb.pp("v"))?,
            out: linear(d_head, hidden, vb.pp("out"))?,
            n_heads,
            d_head,
        })
    }

    /// Additive causal mask `[t, t]`: 0 where key <= query, a large negative number elsewhere.
    pub fn causal_mask(t: usize, device: &Device) -> Result<Tensor> {
        let m: Vec<f32> = (0..t)
            .flat_map(|i| (0..t).map(move |j| if j <= i { 0. } else { -1e9 }))
            .collect();
        Tensor::from_vec(m, (t, t), device)
    }

    /// `x`: `[batch, time, hidden]`. Returns the output `[batch, time, hidden]` and the
    /// head-averaged attention weights `[batch, time, time]`.
    pub fn forward(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        let (b, t, _) = x.dims3()?;
        let split = |y: Tensor| -> Result<Tensor> {
            y.reshape((b, t, self.n_heads, self.d_head))?
                .transpose(1, 2)?
                .contiguous()
        };
        let q = split(self.q.forward(x)?)?; // [b, nh, t, d]
        let k = split(self.k.forward(x)?)?;
        let v = self.v.forward(x)?.contiguous()?; // [b, t, d], shared by the heads
        let scale = 1.0 / (self.d_head as f64).sqrt();
        let scores = (q.matmul(&k.transpose(2, 3)?.contiguous()?)? * scale)?;
        let scores = scores.broadcast_add(&Self::causal_mask(t, x.device())?)?;
        let attn = softmax_last_dim(&scores)?; // [b, nh, t, t]

        // V is shared, so mean_h(A_h V) == mean_h(A_h) V: average first, one matmul.
        let avg_attn = attn.mean(1)?; // [b, t, t]
        let avg = avg_attn.matmul(&v)?; // [b, t, d]
        Ok((self.out.forward(&avg)?, avg_attn))
    }
}

/// Softmax over the last dimension: the fork's fused, differentiable op when the kernel is
/// compiled in (stock candle's has no backward), else the tensor-op softmax.
fn softmax_last_dim(xs: &Tensor) -> Result<Tensor> {
    if cfg!(feature = "kernel") {
        candle_nn::ops::softmax_last_dim(&xs.contiguous()?)
    } else {
        candle_nn::ops::softmax(xs, D::Minus1)
    }
}
