//! Deterministic parameter initialisation.
//!
//! candle's CPU RNG cannot be seeded (`Device::Cpu.set_seed` bails), so `VarMap` with the
//! stock `Init` is not reproducible. [`SeededVarMap`] is a `VarBuilder` backend that draws
//! every initial value on the host from a seeded `StdRng`, in construction order, and stores
//! the resulting `Var`s in an ordinary [`VarMap`] (so the optimizer and the checks see them).

use candle_core::{DType, Device, Result, Shape, Tensor, Var};
use candle_nn::init::NormalOrUniform;
use candle_nn::{Init, VarBuilder, VarMap};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use std::sync::{Arc, Mutex};

#[derive(Clone)]
pub struct SeededVarMap {
    map: VarMap,
    rng: Arc<Mutex<StdRng>>,
}

impl SeededVarMap {
    pub fn new(seed: u64) -> Self {
        Self {
            map: VarMap::new(),
            rng: Arc::new(Mutex::new(StdRng::seed_from_u64(seed))),
        }
    }

    /// The underlying map holding every trainable `Var`.
    pub fn varmap(&self) -> &VarMap {
        &self.map
    }

    pub fn var_builder(&self, dtype: DType, device: &Device) -> VarBuilder<'static> {
        VarBuilder::from_backend(Box::new(self.clone()), dtype, device.clone())
    }

    /// All parameters, sorted by name (deterministic order).
    pub fn named_vars(&self) -> Vec<(String, Var)> {
        let data = self.map.data().lock().unwrap();
        let mut v: Vec<(String, Var)> = data.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    fn sample(&self, shape: &Shape, init: Init) -> Vec<f32> {
        let n = shape.elem_count();
        let mut rng = self.rng.lock().unwrap();
        let uniform = |rng: &mut StdRng, lo: f64, up: f64| -> Vec<f32> {
            (0..n).map(|_| rng.random_range(lo..up) as f32).collect()
        };
        let normal = |rng: &mut StdRng, mean: f64, std: f64| -> Vec<f32> {
            (0..n)
                .map(|_| {
                    let z: f64 = StandardNormal.sample(rng);
                    (mean + std * z) as f32
                })
                .collect()
        };
        match init {
            Init::Const(c) => vec![c as f32; n],
            Init::Uniform { lo, up } => uniform(&mut rng, lo, up),
            Init::Randn { mean, stdev } => normal(&mut rng, mean, stdev),
            Init::Kaiming {
                dist,
                fan,
                non_linearity,
            } => {
                let fan = fan.for_shape(shape);
                let std = non_linearity.gain() / (fan as f64).sqrt();
                match dist {
                    NormalOrUniform::Uniform => {
                        let b = 3f64.sqrt() * std;
                        uniform(&mut rng, -b, b)
                    }
                    NormalOrUniform::Normal => normal(&mut rng, 0., std),
                }
            }
        }
    }
}

impl candle_nn::var_builder::SimpleBackend for SeededVarMap {
    fn get(&self, s: Shape, name: &str, h: Init, dtype: DType, dev: &Device) -> Result<Tensor> {
        if let Some(v) = self.map.data().lock().unwrap().get(name) {
            let t = v.as_tensor();
            if t.shape() != &s {
                candle_core::bail!("shape mismatch for {name}: {:?} vs {s:?}", t.shape());
            }
            return Ok(t.clone());
        }
        let values = self.sample(&s, h);
        let t = Tensor::from_vec(values, s, &Device::Cpu)?
            .to_dtype(dtype)?
            .to_device(dev)?;
        let var = Var::from_tensor(&t)?;
        let out = var.as_tensor().clone();
        self.map
            .data()
            .lock()
            .unwrap()
            .insert(name.to_string(), var);
        Ok(out)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.map.data().lock().unwrap().contains_key(name)
    }
}
