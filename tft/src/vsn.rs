//! Variable selection network: per-variable GRNs mixed with softmax weights.

use crate::grn::Grn;
use candle_core::{Module, Result, Tensor, D};
use candle_nn::{linear, Linear, VarBuilder};

#[derive(Debug, Clone)]
pub struct VariableSelection {
    prescale: Vec<Linear>,
    var_grns: Vec<Grn>,
    weight_grn: Grn,
    hidden: usize,
}

impl VariableSelection {
    /// `n_vars` real-valued inputs, each embedded to `hidden` by its own linear layer.
    pub fn new(
        n_vars: usize,
        hidden: usize,
        context_dim: Option<usize>,
        vb: VarBuilder,
    ) -> Result<Self> {
        let mut prescale = Vec::with_capacity(n_vars);
        let mut var_grns = Vec::with_capacity(n_vars);
        for i in 0..n_vars {
            prescale.push(linear(1, hidden, vb.pp(format!("prescale{i}")))?);
            var_grns.push(Grn::new(
                hidden,
                hidden,
                hidden,
                None,
                vb.pp(format!("var_grn{i}")),
            )?);
        }
        let weight_grn = Grn::new(
            n_vars * hidden,
            hidden,
            n_vars,
            context_dim,
            vb.pp("weight_grn"),
        )?;
        Ok(Self {
            prescale,
            var_grns,
            weight_grn,
            hidden,
        })
    }

    pub fn n_vars(&self) -> usize {
        self.prescale.len()
    }

    /// `x`: `[batch, time, n_vars]`; `context`: `[batch, context_dim]`.
    /// Returns the selected embedding `[batch, time, hidden]` and the weights `[batch, time, n_vars]`.
    pub fn forward(&self, x: &Tensor, context: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
        let n = self.n_vars();
        let mut embedded = Vec::with_capacity(n);
        let mut processed = Vec::with_capacity(n);
        for i in 0..n {
            let e = self.prescale[i].forward(&x.narrow(D::Minus1, i, 1)?.contiguous()?)?;
            processed.push(self.var_grns[i].forward(&e, None)?);
            embedded.push(e);
        }
        let flat = Tensor::cat(&embedded, D::Minus1)?;
        let weights =
            candle_nn::ops::softmax(&self.weight_grn.forward(&flat, context)?, D::Minus1)?;
        let stacked = Tensor::stack(&processed, D::Minus2)?; // [b, t, n, h]
        let (b, t, _) = x.dims3()?;
        let combined = stacked
            .broadcast_mul(&weights.unsqueeze(D::Minus1)?)?
            .sum(D::Minus2)?;
        debug_assert_eq!(combined.dims(), &[b, t, self.hidden]);
        Ok((combined, weights))
    }
}
