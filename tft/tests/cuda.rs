//! CPU and CUDA agree (forward and one training step). Built only with `--features cuda`;
//! skips (passes with a note) when no CUDA device can be opened.

#![cfg(feature = "cuda")]

use candle_core::{DType, Device, Tensor};
use tft::data::{Dataset, FUTURE_VARS, PAST_VARS};
use tft::train::Trainer;
use tft::TftConfig;

fn max_abs(t: &Tensor) -> f32 {
    t.abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}

#[test]
fn cpu_and_cuda_agree() {
    let gpu = match Device::new_cuda(0) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("SKIP cpu_and_cuda_agree: no CUDA device ({e})");
            return;
        }
    };
    let cfg = TftConfig {
        hidden: 16,
        lookback: 16,
        horizon: 4,
        n_past: PAST_VARS.len(),
        n_future: FUTURE_VARS.len(),
        ..TftConfig::default()
    };
    let data = Dataset::co2(cfg.lookback, cfg.horizon, 0.2).unwrap();
    let ends: Vec<usize> = data.train_ends[..32].to_vec();
    let mut cpu = Trainer::new(cfg.clone(), 11, 1e-3, &Device::Cpu).unwrap();
    let mut cuda = Trainer::new(cfg, 11, 1e-3, &gpu).unwrap();
    let fwd = |t: &Trainer, dev: &Device| {
        let b = data.batch(&ends, dev).unwrap();
        t.model
            .forward(&b.static_x, &b.past, &b.future)
            .unwrap()
            .quantiles
            .to_device(&Device::Cpu)
            .unwrap()
    };
    let d = max_abs(&(fwd(&cpu, &Device::Cpu) - fwd(&cuda, &gpu)).unwrap());
    assert!(d < 1e-3, "forward differs by {d}");
    for step in 0..3 {
        let (lc, _) = cpu.step(&data, &ends).unwrap();
        let (lg, _) = cuda.step(&data, &ends).unwrap();
        assert!(
            (lc - lg).abs() < 1e-3 * (1.0 + lc.abs()),
            "step {step}: {lc} vs {lg}"
        );
    }
}
