//! The Temporal Fusion Transformer (Lim et al. 2021), compact single-series variant.

use crate::attention::InterpretableMultiHeadAttention;
use crate::grn::{GateAddNorm, Grn};
use crate::vsn::VariableSelection;
use candle_core::{Module, Result, Tensor};
use candle_nn::rnn::LSTMState;
use candle_nn::{linear, lstm, LSTMConfig, Linear, VarBuilder, LSTM};

#[derive(Debug, Clone)]
pub struct TftConfig {
    pub hidden: usize,
    pub n_heads: usize,
    pub lookback: usize,
    pub horizon: usize,
    /// Static (per-window) real inputs.
    pub n_static: usize,
    /// Observed inputs over the lookback window (target included).
    pub n_past: usize,
    /// Known inputs over the forecast horizon.
    pub n_future: usize,
    pub quantiles: Vec<f32>,
}

impl Default for TftConfig {
    fn default() -> Self {
        Self {
            hidden: 32,
            n_heads: 4,
            lookback: 52,
            horizon: 12,
            n_static: 1,
            n_past: 5,
            n_future: 3,
            quantiles: vec![0.1, 0.5, 0.9],
        }
    }
}

/// What one forward pass returns.
#[derive(Debug, Clone)]
pub struct TftOutput {
    /// `[batch, horizon, n_quantiles]`.
    pub quantiles: Tensor,
    /// Variable selection weights, `[batch, lookback, n_past]` and `[batch, horizon, n_future]`.
    pub past_weights: Tensor,
    pub future_weights: Tensor,
    /// Head-averaged attention, `[batch, lookback + horizon, lookback + horizon]`.
    pub attention: Tensor,
}

#[derive(Debug, Clone)]
pub struct Tft {
    cfg: TftConfig,
    static_enc: Grn,
    ctx_select: Grn,
    ctx_enrich: Grn,
    ctx_h: Grn,
    ctx_c: Grn,
    past_vsn: VariableSelection,
    future_vsn: VariableSelection,
    lstm_enc: LSTM,
    lstm_dec: LSTM,
    post_lstm: GateAddNorm,
    enrich: Grn,
    attention: InterpretableMultiHeadAttention,
    post_attn: GateAddNorm,
    positionwise: Grn,
    pre_output: GateAddNorm,
    output: Linear,
}

impl Tft {
    pub fn new(cfg: TftConfig, vb: VarBuilder) -> Result<Self> {
        let h = cfg.hidden;
        let ctx = |name: &str| Grn::new(h, h, h, None, vb.pp(name));
        Ok(Self {
            static_enc: Grn::new(cfg.n_static, h, h, None, vb.pp("static_enc"))?,
            ctx_select: ctx("ctx_select")?,
            ctx_enrich: ctx("ctx_enrich")?,
            ctx_h: ctx("ctx_h")?,
            ctx_c: ctx("ctx_c")?,
            past_vsn: VariableSelection::new(cfg.n_past, h, Some(h), vb.pp("past_vsn"))?,
            future_vsn: VariableSelection::new(cfg.n_future, h, Some(h), vb.pp("future_vsn"))?,
            lstm_enc: lstm(h, h, LSTMConfig::default(), vb.pp("lstm_enc"))?,
            lstm_dec: lstm(h, h, LSTMConfig::default(), vb.pp("lstm_dec"))?,
            post_lstm: GateAddNorm::new(h, h, vb.pp("post_lstm"))?,
            enrich: Grn::new(h, h, h, Some(h), vb.pp("enrich"))?,
            attention: InterpretableMultiHeadAttention::new(h, cfg.n_heads, vb.pp("attention"))?,
            post_attn: GateAddNorm::new(h, h, vb.pp("post_attn"))?,
            positionwise: Grn::new(h, h, h, None, vb.pp("positionwise"))?,
            pre_output: GateAddNorm::new(h, h, vb.pp("pre_output"))?,
            output: linear(h, cfg.quantiles.len(), vb.pp("output"))?,
            cfg,
        })
    }

    pub fn config(&self) -> &TftConfig {
        &self.cfg
    }

    /// `static_x`: `[b, n_static]`, `past`: `[b, lookback, n_past]`, `future`: `[b, horizon, n_future]`.
    pub fn forward(&self, static_x: &Tensor, past: &Tensor, future: &Tensor) -> Result<TftOutput> {
        let lookback = past.dim(1)?;
        let horizon = future.dim(1)?;
        // Static covariate encoders: four context vectors.
        let s = self.static_enc.forward(static_x, None)?;
        let c_select = self.ctx_select.forward(&s, None)?;
        let c_enrich = self.ctx_enrich.forward(&s, None)?;
        let c_h = self.ctx_h.forward(&s, None)?;
        let c_c = self.ctx_c.forward(&s, None)?;

        // Variable selection.
        let (past_emb, past_weights) = self.past_vsn.forward(past, Some(&c_select))?;
        let (fut_emb, future_weights) = self.future_vsn.forward(future, Some(&c_select))?;

        // Sequence-to-sequence LSTM, initial state from the static context.
        let init = LSTMState::new(c_h, c_c);
        let (enc_out, last) = self.lstm_enc.seq_output(&past_emb, &init)?;
        let (dec_out, _) = self.lstm_dec.seq_output(&fut_emb, &last)?;
        let lstm_out = Tensor::cat(&[enc_out, dec_out], 1)?;
        let emb = Tensor::cat(&[&past_emb, &fut_emb], 1)?;
        let phi = self.post_lstm.forward(&lstm_out, &emb)?;

        // Static enrichment, temporal self-attention, position-wise feed-forward.
        let theta = self.enrich.forward(&phi, Some(&c_enrich))?;
        let (attn_out, attention) = self.attention.forward(&theta)?;
        let delta = self.post_attn.forward(&attn_out, &theta)?;
        let psi = self.positionwise.forward(&delta, None)?;
        let out = self.pre_output.forward(&psi, &phi)?;
        let out = out.narrow(1, lookback, horizon)?;
        let quantiles = self.output.forward(&out)?;
        Ok(TftOutput {
            quantiles,
            past_weights,
            future_weights,
            attention,
        })
    }
}
