//! A small LLaMA-style block written only with stock candle-nn APIs (`RmsNorm`, `Linear`,
//! `rotary_emb::rope`, `ops::softmax_last_dim`, a SiLU-gated MLP, `AdamW`) trains on the fork:
//! every parameter gets a non-zero gradient and a few optimizer steps lower the loss. On stock
//! candle 0.9.1 the fused `rms_norm`, `softmax_last_dim` and `rope` record no backward op, so
//! the norms' weights and everything before the attention scores get no gradient.

use anyhow::{Context, Result};
use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Optimizer, VarBuilder, VarMap};

const HIDDEN: usize = 32;
const HEADS: usize = 4;
const HEAD_DIM: usize = HIDDEN / HEADS;
const SEQ: usize = 6;
const BATCH: usize = 3;

struct Block {
    attn_norm: candle_nn::RmsNorm,
    q: candle_nn::Linear,
    k: candle_nn::Linear,
    v: candle_nn::Linear,
    o: candle_nn::Linear,
    mlp_norm: candle_nn::RmsNorm,
    gate: candle_nn::Linear,
    up: candle_nn::Linear,
    down: candle_nn::Linear,
    cos: Tensor,
    sin: Tensor,
    mask: Tensor,
}

impl Block {
    fn new(vb: VarBuilder, dev: &Device) -> Result<Self> {
        let lin = |i, o, name: &str| candle_nn::linear_no_bias(i, o, vb.pp(name));
        let theta: Vec<f32> = (0..SEQ * HEAD_DIM / 2)
            .map(|i| {
                let (pos, j) = ((i / (HEAD_DIM / 2)) as f32, (i % (HEAD_DIM / 2)) as f32);
                pos / 10000f32.powf(2. * j / HEAD_DIM as f32)
            })
            .collect();
        let theta = Tensor::from_vec(theta, (SEQ, HEAD_DIM / 2), dev)?;
        let mask: Vec<f32> = (0..SEQ * SEQ)
            .map(|i| {
                if i % SEQ > i / SEQ {
                    f32::NEG_INFINITY
                } else {
                    0.
                }
            })
            .collect();
        Ok(Self {
            attn_norm: candle_nn::rms_norm(HIDDEN, 1e-5, vb.pp("attn_norm"))?,
            q: lin(HIDDEN, HIDDEN, "q")?,
            k: lin(HIDDEN, HIDDEN, "k")?,
            v: lin(HIDDEN, HIDDEN, "v")?,
            o: lin(HIDDEN, HIDDEN, "o")?,
            mlp_norm: candle_nn::rms_norm(HIDDEN, 1e-5, vb.pp("mlp_norm"))?,
            gate: lin(HIDDEN, 2 * HIDDEN, "gate")?,
            up: lin(HIDDEN, 2 * HIDDEN, "up")?,
            down: lin(2 * HIDDEN, HIDDEN, "down")?,
            cos: theta.cos()?,
            sin: theta.sin()?,
            mask: Tensor::from_vec(mask, (SEQ, SEQ), dev)?,
        })
    }

    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let heads = |t: Tensor| -> Result<Tensor> {
            Ok(t.reshape((BATCH, SEQ, HEADS, HEAD_DIM))?
                .transpose(1, 2)?
                .contiguous()?)
        };
        let h = self.attn_norm.forward(xs)?;
        let q = heads(self.q.forward(&h)?)?;
        let k = heads(self.k.forward(&h)?)?;
        let v = heads(self.v.forward(&h)?)?;
        let q = candle_nn::rotary_emb::rope(&q, &self.cos, &self.sin)?;
        let k = candle_nn::rotary_emb::rope(&k, &self.cos, &self.sin)?;
        let scores = (q.matmul(&k.t()?)? / (HEAD_DIM as f64).sqrt())?;
        let att = candle_nn::ops::softmax_last_dim(&scores.broadcast_add(&self.mask)?)?;
        let att = att
            .matmul(&v)?
            .transpose(1, 2)?
            .reshape((BATCH, SEQ, HIDDEN))?;
        let xs = (xs + self.o.forward(&att)?)?;
        let h = self.mlp_norm.forward(&xs)?;
        let mlp = (candle_nn::ops::silu(&self.gate.forward(&h)?)? * self.up.forward(&h)?)?;
        Ok((&xs + self.down.forward(&mlp)?)?)
    }
}

#[test]
fn llama_block_trains_with_the_fused_ops() -> Result<()> {
    let dev = Device::Cpu;
    let varmap = VarMap::new();
    let block = Block::new(VarBuilder::from_varmap(&varmap, DType::F32, &dev), &dev)?;
    // A fixed toy task: map the input to a fixed random target.
    let xs = Tensor::randn(0f32, 1., (BATCH, SEQ, HIDDEN), &dev)?;
    let target = Tensor::randn(0f32, 1., (BATCH, SEQ, HIDDEN), &dev)?;
    let loss_of = |block: &Block| -> Result<Tensor> {
        Ok(candle_nn::loss::mse(&block.forward(&xs)?, &target)?)
    };

    let loss = loss_of(&block)?;
    let grads = loss.backward()?;
    let vars = varmap.data().lock().unwrap().clone();
    assert_eq!(vars.len(), 9, "{:?}", vars.keys());
    for (name, var) in &vars {
        let grad = grads
            .get(var)
            .with_context(|| format!("no gradient for {name}"))?;
        let max = grad.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
        assert!(max > 0., "all-zero gradient for {name}");
    }

    let mut opt = candle_nn::AdamW::new_lr(varmap.all_vars(), 1e-2)?;
    let first = loss.to_scalar::<f32>()?;
    for _ in 0..20 {
        opt.backward_step(&loss_of(&block)?)?;
    }
    let last = loss_of(&block)?.to_scalar::<f32>()?;
    assert!(
        last < 0.8 * first,
        "20 AdamW steps took the loss from {first} to {last} only"
    );
    Ok(())
}
