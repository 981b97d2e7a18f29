//! Training, evaluation and the "every parameter learns" check.

use crate::data::Dataset;
use crate::init::SeededVarMap;
use crate::loss::quantile_loss;
use crate::model::{Tft, TftConfig};
use anyhow::Result;
use candle_core::backprop::GradStore;
use candle_core::{DType, Device, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::BTreeMap;

/// Model, parameters and optimizer, all initialised from `seed`.
pub struct Trainer {
    pub model: Tft,
    pub params: SeededVarMap,
    pub opt: AdamW,
    pub device: Device,
}

impl Trainer {
    pub fn new(cfg: TftConfig, seed: u64, lr: f64, device: &Device) -> Result<Self> {
        let params = SeededVarMap::new(seed);
        let model = Tft::new(cfg, params.var_builder(DType::F32, device))?;
        let opt = AdamW::new(
            params.varmap().all_vars(),
            ParamsAdamW {
                lr,
                weight_decay: 1e-4,
                ..Default::default()
            },
        )?;
        Ok(Self {
            model,
            params,
            opt,
            device: device.clone(),
        })
    }

    pub fn set_lr(&mut self, lr: f64) {
        self.opt.set_learning_rate(lr);
    }

    pub fn loss(&self, data: &Dataset, ends: &[usize]) -> Result<Tensor> {
        let b = data.batch(ends, &self.device)?;
        let out = self.model.forward(&b.static_x, &b.past, &b.future)?;
        Ok(quantile_loss(
            &out.quantiles,
            &b.target,
            &self.model.config().quantiles,
        )?)
    }

    /// One AdamW step on the windows `ends`; returns the loss before the step and the gradients.
    pub fn step(&mut self, data: &Dataset, ends: &[usize]) -> Result<(f32, GradStore)> {
        let loss = self.loss(data, ends)?;
        let grads = loss.backward()?;
        self.opt.step(&grads)?;
        Ok((loss.to_scalar::<f32>()?, grads))
    }

    /// Mean loss and the median-quantile MAE in ppmv over `ends`, without gradients.
    pub fn evaluate(&self, data: &Dataset, ends: &[usize], batch_size: usize) -> Result<Eval> {
        let quantiles = &self.model.config().quantiles;
        let median = quantiles
            .iter()
            .position(|&q| (q - 0.5).abs() < 1e-6)
            .unwrap_or(quantiles.len() / 2);
        let mut loss_sum = 0.0;
        let mut preds: BTreeMap<usize, Vec<f32>> = BTreeMap::new();
        for chunk in ends.chunks(batch_size.max(1)) {
            let b = data.batch(chunk, &self.device)?;
            let out = self.model.forward(&b.static_x, &b.past, &b.future)?;
            let loss = quantile_loss(&out.quantiles, &b.target, quantiles)?;
            loss_sum += loss.to_scalar::<f32>()? as f64 * chunk.len() as f64;
            let med = out
                .quantiles
                .narrow(2, median, 1)?
                .squeeze(2)?
                .to_dtype(DType::F32)?
                .to_vec2::<f32>()?;
            for (&e, row) in chunk.iter().zip(med) {
                preds.insert(e, row);
            }
        }
        let mae = data.mae(ends, |e, h| data.denormalise(e, preds[&e][h - 1]));
        Ok(Eval {
            loss: loss_sum / ends.len().max(1) as f64,
            mae,
        })
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Eval {
    pub loss: f64,
    /// MAE of the median forecast, ppmv.
    pub mae: f64,
}

/// Shuffled mini-batches of the training windows for one epoch (deterministic in `seed`, `epoch`).
pub fn epoch_batches(
    ends: &[usize],
    batch_size: usize,
    seed: u64,
    epoch: usize,
) -> Vec<Vec<usize>> {
    let mut idx = ends.to_vec();
    let mut rng =
        StdRng::seed_from_u64(seed ^ (0x9E37_79B9_7F4A_7C15u64.wrapping_mul(epoch as u64 + 1)));
    idx.shuffle(&mut rng);
    idx.chunks(batch_size.max(1)).map(|c| c.to_vec()).collect()
}

/// Cosine decay from `lr` (step 0) to `lr / 10` (last step).
pub fn cosine_lr(lr: f64, step: usize, total: usize) -> f64 {
    let p = if total > 1 {
        step as f64 / (total - 1) as f64
    } else {
        0.0
    };
    let min = lr / 10.0;
    min + (lr - min) * 0.5 * (1.0 + (std::f64::consts::PI * p).cos())
}

/// Records, for every parameter, whether it ever received a non-zero gradient, and compares
/// its final value with its initial one.
pub struct ParamTracker {
    initial: Vec<(String, Tensor)>,
    got_grad: BTreeMap<String, bool>,
}

#[derive(Debug, Clone)]
pub struct ParamReport {
    pub total: usize,
    pub scalars: usize,
    pub with_grad: usize,
    pub changed: usize,
    pub no_grad: Vec<String>,
    pub unchanged: Vec<String>,
}

impl ParamReport {
    pub fn ok(&self) -> bool {
        self.total > 0 && self.with_grad == self.total && self.changed == self.total
    }
}

impl ParamTracker {
    pub fn new(params: &SeededVarMap) -> Result<Self> {
        let mut initial = Vec::new();
        let mut got_grad = BTreeMap::new();
        for (name, var) in params.named_vars() {
            // A copy, not a view of the Var's storage (which the optimizer updates in place).
            initial.push((name.clone(), var.as_tensor().copy()?));
            got_grad.insert(name, false);
        }
        Ok(Self { initial, got_grad })
    }

    pub fn record(&mut self, params: &SeededVarMap, grads: &GradStore) -> Result<()> {
        for (name, var) in params.named_vars() {
            let seen = self.got_grad.entry(name).or_insert(false);
            if *seen {
                continue;
            }
            if let Some(g) = grads.get(var.as_tensor()) {
                let m = g
                    .abs()?
                    .max_all()?
                    .to_dtype(DType::F32)?
                    .to_scalar::<f32>()?;
                *seen = m > 0.0 && m.is_finite();
            }
        }
        Ok(())
    }

    pub fn report(&self, params: &SeededVarMap) -> Result<ParamReport> {
        let now: BTreeMap<String, Tensor> = params
            .named_vars()
            .into_iter()
            .map(|(n, v)| (n, v.as_tensor().clone()))
            .collect();
        let mut r = ParamReport {
            total: self.initial.len(),
            scalars: 0,
            with_grad: 0,
            changed: 0,
            no_grad: vec![],
            unchanged: vec![],
        };
        for (name, init) in &self.initial {
            r.scalars += init.elem_count();
            if self.got_grad.get(name).copied().unwrap_or(false) {
                r.with_grad += 1;
            } else {
                r.no_grad.push(name.clone());
            }
            let diff = match now.get(name) {
                Some(t) => (t - init)?
                    .abs()?
                    .max_all()?
                    .to_dtype(DType::F32)?
                    .to_scalar::<f32>()?,
                None => 0.0,
            };
            if diff > 0.0 {
                r.changed += 1;
            } else {
                r.unchanged.push(name.clone());
            }
        }
        Ok(r)
    }
}
