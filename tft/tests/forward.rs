//! Full forward pass: shapes, and batch independence (a window's forecast is the same whether
//! it is computed alone or inside batches of 7 or 64).

use candle_core::{DType, Device, IndexOp, Tensor};
use tft::data::{Dataset, FUTURE_VARS, PAST_VARS};
use tft::init::SeededVarMap;
use tft::{Tft, TftConfig};

mod common;
use common::small_cfg;

fn model(cfg: &TftConfig, seed: u64) -> (Tft, SeededVarMap) {
    let params = SeededVarMap::new(seed);
    let m = Tft::new(cfg.clone(), params.var_builder(DType::F32, &Device::Cpu)).unwrap();
    (m, params)
}

#[test]
fn forward_pass_shapes() {
    let cfg = small_cfg();
    let data = Dataset::co2(cfg.lookback, cfg.horizon, 0.2).unwrap();
    let (m, _) = model(&cfg, 0);
    let b = data.batch(&data.train_ends[..5], &Device::Cpu).unwrap();
    assert_eq!(b.past.dims(), &[5, 16, PAST_VARS.len()]);
    assert_eq!(b.future.dims(), &[5, 4, FUTURE_VARS.len()]);
    let out = m.forward(&b.static_x, &b.past, &b.future).unwrap();
    assert_eq!(out.quantiles.dims(), &[5, 4, 3]);
    assert_eq!(out.past_weights.dims(), &[5, 16, PAST_VARS.len()]);
    assert_eq!(out.future_weights.dims(), &[5, 4, FUTURE_VARS.len()]);
    assert_eq!(out.attention.dims(), &[5, 20, 20]);
    let w = out.past_weights.sum(2).unwrap().affine(1.0, -1.0).unwrap();
    assert!(
        w.abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap()
            < 1e-5
    );
    let q = out
        .quantiles
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    assert!(q.iter().all(|v| v.is_finite()));
}

#[test]
fn same_seed_same_model() {
    let cfg = small_cfg();
    let data = Dataset::co2(cfg.lookback, cfg.horizon, 0.2).unwrap();
    let b = data.batch(&data.train_ends[..3], &Device::Cpu).unwrap();
    let run = |seed| {
        let (m, _) = model(&cfg, seed);
        m.forward(&b.static_x, &b.past, &b.future)
            .unwrap()
            .quantiles
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

#[test]
fn batch_sizes_1_7_64_agree_per_sample() {
    let cfg = small_cfg();
    let data = Dataset::co2(cfg.lookback, cfg.horizon, 0.2).unwrap();
    let (m, _) = model(&cfg, 5);
    let ends: Vec<usize> = data
        .train_ends
        .iter()
        .step_by(13)
        .take(64)
        .copied()
        .collect();
    assert_eq!(ends.len(), 64);
    let fwd = |e: &[usize]| -> Tensor {
        let b = data.batch(e, &Device::Cpu).unwrap();
        m.forward(&b.static_x, &b.past, &b.future)
            .unwrap()
            .quantiles
    };
    let full = fwd(&ends);
    let mut worst = 0f32;
    // Batches of 7 (the last one short) and single windows, against the batch of 64.
    for (ci, chunk) in ends.chunks(7).enumerate() {
        let part = fwd(chunk);
        let d = (part - full.narrow(0, ci * 7, chunk.len()).unwrap()).unwrap();
        worst = worst.max(max_abs(&d));
    }
    for i in [0usize, 1, 31, 63] {
        let one = fwd(&ends[i..i + 1]);
        let d = (one - full.i(i..i + 1).unwrap()).unwrap();
        worst = worst.max(max_abs(&d));
    }
    // Only f32 summation order (matmul blocking) may differ between batch sizes.
    assert!(
        worst < 1e-4,
        "per-sample outputs differ across batch sizes by {worst}"
    );
}

fn max_abs(t: &Tensor) -> f32 {
    t.abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}
