//! Quantile (pinball) loss over a multi-step horizon.

use candle_core::{Result, Tensor};

/// Mean pinball loss. `pred`: `[b, horizon, q]`, `target`: `[b, horizon]`.
/// `L_q(y, ŷ) = q·max(y-ŷ, 0) + (1-q)·max(ŷ-y, 0)`, averaged over batch, horizon and quantiles.
pub fn quantile_loss(pred: &Tensor, target: &Tensor, quantiles: &[f32]) -> Result<Tensor> {
    let q = Tensor::new(quantiles, pred.device())?.to_dtype(pred.dtype())?;
    let one_minus_q = q.affine(-1.0, 1.0)?;
    let err = target.unsqueeze(2)?.broadcast_sub(pred)?; // y - ŷ
    let under = err.relu()?.broadcast_mul(&q)?;
    let over = err.neg()?.relu()?.broadcast_mul(&one_minus_q)?;
    (under + over)?.mean_all()
}
