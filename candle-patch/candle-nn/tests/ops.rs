#[cfg(feature = "mkl")]
extern crate intel_mkl_src;

#[cfg(feature = "accelerate")]
extern crate accelerate_src;

use candle::{test_device, test_utils::to_vec3_round, Device, IndexOp, Result, Tensor};

fn softmax(device: &Device) -> Result<()> {
    let data = &[[[3f32, 1., 4.], [1., 5., 9.]], [[2., 1., 7.], [8., 2., 8.]]];
    let tensor = Tensor::new(data, device)?;
    let t0 = candle_nn::ops::softmax(&tensor.log()?, 0)?;
    let t1 = candle_nn::ops::softmax(&tensor.log()?, 1)?;
    let t2 = candle_nn::ops::softmax(&tensor.log()?, 2)?;
    assert_eq!(
        to_vec3_round(&t0, 4)?,
        &[
            // 3/5, 1/2, 4/11
            [[0.6, 0.5, 0.3636], [0.1111, 0.7143, 0.5294]],
            // 2/5, 1/2, 7/11
            [[0.4, 0.5, 0.6364], [0.8889, 0.2857, 0.4706]]
        ]
    );
    assert_eq!(
        to_vec3_round(&t1, 4)?,
        &[
            // 3/4, 1/6, 4/13
            [[0.75, 0.1667, 0.3077], [0.25, 0.8333, 0.6923]],
            // 2/10, 1/3, 7/15
            [[0.2, 0.3333, 0.4667], [0.8, 0.6667, 0.5333]]
        ]
    );
    assert_eq!(
        to_vec3_round(&t2, 4)?,
        &[
            // (3, 1, 4) / 8, (1, 5, 9) / 15
            [[0.375, 0.125, 0.5], [0.0667, 0.3333, 0.6]],
            // (2, 1, 7) / 10, (8, 2, 8) / 18
            [[0.2, 0.1, 0.7], [0.4444, 0.1111, 0.4444]]
        ]
    );
    let t2 = candle_nn::ops::softmax_last_dim(&tensor.log()?)?;
    assert_eq!(
        to_vec3_round(&t2, 4)?,
        &[
            // (3, 1, 4) / 8, (1, 5, 9) / 15
            [[0.375, 0.125, 0.5], [0.0667, 0.3333, 0.6]],
            // (2, 1, 7) / 10, (8, 2, 8) / 18
            [[0.2, 0.1, 0.7], [0.4444, 0.1111, 0.4444]]
        ]
    );
    Ok(())
}

fn rms_norm(device: &Device) -> Result<()> {
    let data = &[[[3f32, 1., 4.], [1., 5., 9.]], [[2., 1., 7.], [8., 2., 8.]]];
    let tensor = Tensor::new(data, device)?;
    let alpha = Tensor::new(&[1f32, 2f32, 3f32], device)?;
    let t = candle_nn::ops::rms_norm(&tensor, &alpha, 1e-5)?;
    assert_eq!(
        to_vec3_round(&t, 4)?,
        &[
            [[1.019, 0.6794, 4.0762], [0.1674, 1.6744, 4.521]],
            [[0.4714, 0.4714, 4.9497], [1.206, 0.603, 3.6181]]
        ]
    );
    let t2 = candle_nn::ops::rms_norm_slow(&tensor, &alpha, 1e-5)?;
    assert_eq!(
        to_vec3_round(&t2, 4)?,
        &[
            [[1.019, 0.6794, 4.0762], [0.1674, 1.6744, 4.521]],
            [[0.4714, 0.4714, 4.9497], [1.206, 0.603, 3.6181]]
        ]
    );
    let diff = (t - t2)?.abs()?.sum_all()?.to_vec0::<f32>()?;
    assert!(diff < 1e-5);
    Ok(())
}

fn rms_norml(device: &Device) -> Result<()> {
    use rand::{rngs::StdRng, Rng, SeedableRng};

    let (b_size, seq_len, head_dim) = (24, 70, 64);
    let el_count = b_size * seq_len * head_dim;
    let mut rng = StdRng::seed_from_u64(299792458);
    let src: Vec<f32> = (0..el_count).map(|_| rng.random::<f32>()).collect();
    let tensor = Tensor::new(src, device)?.reshape((b_size, seq_len, head_dim))?;
    let alpha = Tensor::ones(head_dim, candle::DType::F32, device)?;
    let t = candle_nn::ops::rms_norm(&tensor, &alpha, 1e-5)?;
    let t2 = candle_nn::ops::rms_norm_slow(&tensor, &alpha, 1e-5)?;
    let diff = (t - t2)?
        .abs()?
        .flatten_all()?
        .max(0)?
        .reshape(())?
        .to_vec0::<f32>()?;
    assert!(diff < 1e-5);
    Ok(())
}

fn layer_norm(device: &Device) -> Result<()> {
    let data = &[[[3f32, 1., 4.], [1., 5., 9.]], [[2., 1., 7.], [8., 2., 8.]]];
    let tensor = Tensor::new(data, device)?;
    let alpha = Tensor::new(&[1f32, 2f32, 3f32], device)?;
    let beta = Tensor::new(&[0.5f32, 0f32, -0.2f32], device)?;
    let t = candle_nn::ops::layer_norm(&tensor, &alpha, &beta, 1e-5)?;
    assert_eq!(
        to_vec3_round(&t, 4)?,
        &[
            [[0.7673, -2.6726, 3.0071], [-0.7247, 0.0, 3.4742]],
            [[-0.008, -1.778, 3.991], [1.2071, -2.8284, 1.9213]]
        ]
    );
    let t2 = candle_nn::ops::layer_norm_slow(&tensor, &alpha, &beta, 1e-5)?;
    assert_eq!(
        to_vec3_round(&t2, 4)?,
        &[
            [[0.7673, -2.6726, 3.0071], [-0.7247, 0.0, 3.4742]],
            [[-0.008, -1.778, 3.991], [1.2071, -2.8284, 1.9213]]
        ]
    );
    let diff = (t - t2)?.abs()?.sum_all()?.to_vec0::<f32>()?;
    assert!(diff < 1e-5);
    Ok(())
}

fn layer_norml(device: &Device) -> Result<()> {
    use rand::{rngs::StdRng, Rng, SeedableRng};

    let (b_size, seq_len, head_dim) = (24, 70, 64);
    let el_count = b_size * seq_len * head_dim;
    let mut rng = StdRng::seed_from_u64(299792458);
    let src: Vec<f32> = (0..el_count).map(|_| rng.random::<f32>()).collect();
    let tensor = Tensor::new(src, device)?.reshape((b_size, seq_len, head_dim))?;
    let alpha = Tensor::ones(head_dim, candle::DType::F32, device)?;
    let beta = Tensor::zeros(head_dim, candle::DType::F32, device)?;
    let t = candle_nn::ops::layer_norm(&tensor, &alpha, &beta, 1e-5)?;
    let t2 = candle_nn::ops::layer_norm_slow(&tensor, &alpha, &beta, 1e-5)?;
    let diff = (t - t2)?
        .abs()?
        .flatten_all()?
        .max(0)?
        .reshape(())?
        .to_vec0::<f32>()?;
    assert!(diff < 1e-5);
    Ok(())
}

#[test]
fn softmax_numerical_stability() -> Result<()> {
    let dev = &Device::Cpu;
    let xs = Tensor::new(&[1234f32, 0.], dev)?;
    let softmax = candle_nn::ops::softmax(&xs, 0)?;
    assert_eq!(softmax.to_vec1::<f32>()?, &[1f32, 0.]);
    Ok(())
}

fn ropei(device: &Device) -> Result<()> {
    use rand::{rngs::StdRng, Rng, SeedableRng};

    let (b_size, num_head, seq_len, head_dim) = (2, 5, 10, 16);
    let el_count = b_size * num_head * seq_len * head_dim;
    let mut rng = StdRng::seed_from_u64(299792458);
    let src: Vec<f32> = (0..el_count).map(|_| rng.random::<f32>()).collect();
    let cos: Vec<f32> = (0..seq_len * head_dim / 2)
        .map(|_| rng.random::<f32>())
        .collect();
    let sin: Vec<f32> = (0..seq_len * head_dim / 2)
        .map(|_| rng.random::<f32>())
        .collect();
    let src = Tensor::from_vec(src, (b_size, num_head, seq_len, head_dim), device)?;
    let cos = Tensor::from_vec(cos, (seq_len, head_dim / 2), device)?;
    let sin = Tensor::from_vec(sin, (seq_len, head_dim / 2), device)?;
    let rope1 = candle_nn::rotary_emb::rope_i(&src, &cos, &sin)?;
    let rope2 = candle_nn::rotary_emb::rope_i_slow(&src, &cos, &sin)?;
    let sum_diff = (rope1 - rope2)?.abs()?.sum_all()?.to_vec0::<f32>()?;
    if device.is_cpu() {
        assert_eq!(sum_diff, 0.);
    } else {
        assert!(sum_diff < 1e-4);
    }

    // Test with a 3d cos/sin
    let cos2: Vec<f32> = (0..seq_len * head_dim / 2)
        .map(|_| rng.random::<f32>())
        .collect();
    let sin2: Vec<f32> = (0..seq_len * head_dim / 2)
        .map(|_| rng.random::<f32>())
        .collect();
    let cos2 = Tensor::from_vec(cos2, (seq_len, head_dim / 2), device)?;
    let sin2 = Tensor::from_vec(sin2, (seq_len, head_dim / 2), device)?;
    let rope1 = candle_nn::rotary_emb::rope_i(&src.i(0..1)?, &cos, &sin)?;
    let rope2 = candle_nn::rotary_emb::rope_i(&src.i(1..2)?, &cos2, &sin2)?;

    let both_cos = Tensor::stack(&[cos, cos2], 0)?;
    let both_sin = Tensor::stack(&[sin, sin2], 0)?;
    let both_rope = candle_nn::rotary_emb::rope_i(&src, &both_cos, &both_sin)?;
    let both_rope2 = Tensor::cat(&[rope1, rope2], 0)?;
    let sum_diff = (both_rope - both_rope2)?
        .abs()?
        .sum_all()?
        .to_vec0::<f32>()?;
    assert_eq!(sum_diff, 0.);
    Ok(())
}

fn rope(device: &Device) -> Result<()> {
    use rand::{rngs::StdRng, Rng, SeedableRng};

    let (b_size, num_head, seq_len, head_dim) = (2, 5, 10, 16);
    let el_count = b_size * num_head * seq_len * head_dim;
    let mut rng = StdRng::seed_from_u64(299792458);
    let src: Vec<f32> = (0..el_count).map(|_| rng.random::<f32>()).collect();
    let cos: Vec<f32> = (0..seq_len * head_dim / 2)
        .map(|_| rng.random::<f32>())
        .collect();
    let sin: Vec<f32> = (0..seq_len * head_dim / 2)
        .map(|_| rng.random::<f32>())
        .collect();
    let src = Tensor::from_vec(src, (b_size, num_head, seq_len, head_dim), device)?;
    let cos = Tensor::from_vec(cos, (seq_len, head_dim / 2), device)?;
    let sin = Tensor::from_vec(sin, (seq_len, head_dim / 2), device)?;
    let rope1 = candle_nn::rotary_emb::rope(&src, &cos, &sin)?;
    let rope2 = candle_nn::rotary_emb::rope_slow(&src, &cos, &sin)?;
    let sum_diff = (rope1 - rope2)?.abs()?.sum_all()?.to_vec0::<f32>()?;
    if device.is_cpu() {
        assert_eq!(sum_diff, 0.);
    } else {
        assert!(sum_diff < 1e-4);
    }

    // Test with a 3d cos/sin
    let cos2: Vec<f32> = (0..seq_len * head_dim / 2)
        .map(|_| rng.random::<f32>())
        .collect();
    let sin2: Vec<f32> = (0..seq_len * head_dim / 2)
        .map(|_| rng.random::<f32>())
        .collect();
    let cos2 = Tensor::from_vec(cos2, (seq_len, head_dim / 2), device)?;
    let sin2 = Tensor::from_vec(sin2, (seq_len, head_dim / 2), device)?;
    let rope1 = candle_nn::rotary_emb::rope(&src.i(0..1)?, &cos, &sin)?;
    let rope2 = candle_nn::rotary_emb::rope(&src.i(1..2)?, &cos2, &sin2)?;

    let both_cos = Tensor::stack(&[cos, cos2], 0)?;
    let both_sin = Tensor::stack(&[sin, sin2], 0)?;
    let both_rope = candle_nn::rotary_emb::rope(&src, &both_cos, &both_sin)?;
    let both_rope2 = Tensor::cat(&[rope1, rope2], 0)?;
    let sum_diff = (both_rope - both_rope2)?
        .abs()?
        .sum_all()?
        .to_vec0::<f32>()?;
    assert_eq!(sum_diff, 0.);
    Ok(())
}

fn rope_thd(device: &Device) -> Result<()> {
    use rand::{rngs::StdRng, Rng, SeedableRng};

    let (b_size, num_head, seq_len, head_dim) = (2, 5, 10, 16);
    let el_count = b_size * num_head * seq_len * head_dim;
    let mut rng = StdRng::seed_from_u64(299792458);
    let src: Vec<f32> = (0..el_count).map(|_| rng.random::<f32>()).collect();
    let cos: Vec<f32> = (0..seq_len * head_dim / 2)
        .map(|_| rng.random::<f32>())
        .collect();
    let sin: Vec<f32> = (0..seq_len * head_dim / 2)
        .map(|_| rng.random::<f32>())
        .collect();
    let src = Tensor::from_vec(src, (b_size, num_head, seq_len, head_dim), device)?;
    let cos = Tensor::from_vec(cos, (seq_len, head_dim / 2), device)?;
    let sin = Tensor::from_vec(sin, (seq_len, head_dim / 2), device)?;
    let rope1 = {
        let src = src.transpose(1, 2)?.contiguous()?;
        candle_nn::rotary_emb::rope_thd(&src, &cos, &sin)?.transpose(1, 2)?
    };
    let rope2 = candle_nn::rotary_emb::rope_slow(&src, &cos, &sin)?;
    let sum_diff = (rope1 - rope2)?.abs()?.sum_all()?.to_vec0::<f32>()?;
    if device.is_cpu() {
        assert_eq!(sum_diff, 0.);
    } else {
        assert!(sum_diff < 1e-4);
    }

    // Test with a 3d cos/sin
    let cos2: Vec<f32> = (0..seq_len * head_dim / 2)
        .map(|_| rng.random::<f32>())
        .collect();
    let sin2: Vec<f32> = (0..seq_len * head_dim / 2)
        .map(|_| rng.random::<f32>())
        .collect();
    let cos2 = Tensor::from_vec(cos2, (seq_len, head_dim / 2), device)?;
    let sin2 = Tensor::from_vec(sin2, (seq_len, head_dim / 2), device)?;
    let rope1 = {
        let src = src.transpose(1, 2)?.contiguous()?;
        candle_nn::rotary_emb::rope_thd(&src.i(0..1)?, &cos, &sin)?
    };
    let rope2 = {
        let src = src.transpose(1, 2)?.contiguous()?;
        candle_nn::rotary_emb::rope_thd(&src.i(1..2)?, &cos2, &sin2)?
    };

    let both_cos = Tensor::stack(&[cos, cos2], 0)?;
    let both_sin = Tensor::stack(&[sin, sin2], 0)?;
    let both_rope = {
        let src = src.transpose(1, 2)?.contiguous()?;
        candle_nn::rotary_emb::rope_thd(&src, &both_cos, &both_sin)?
    };
    let both_rope2 = Tensor::cat(&[rope1, rope2], 0)?;
    let sum_diff = (both_rope - both_rope2)?
        .abs()?
        .sum_all()?
        .to_vec0::<f32>()?;
    assert_eq!(sum_diff, 0.);
    Ok(())
}

fn sigmoid(device: &Device) -> Result<()> {
    let data = &[[[3f32, 1., 4.], [1., 5., 9.]], [[2., 1., 7.], [8., 2., 8.]]];
    let tensor = Tensor::new(data, device)?;
    let s1 = candle_nn::ops::sigmoid(&tensor)?;
    let s2 = (1. / (1. + tensor.neg()?.exp()?)?)?;
    let diff = (s1 - s2)?.abs()?.sum_all()?.to_vec0::<f32>()?;
    assert_eq!(diff, 0.);
    Ok(())
}

test_device!(ropei, ropei_cpu, ropei_gpu, ropei_metal);
test_device!(rope, rope_cpu, rope_gpu, rope_metal);
test_device!(rope_thd, rope_thd_cpu, rope_thd_gpu, rope_thd_metal);
test_device!(softmax, softmax_cpu, softmax_gpu, softmax_metal);
test_device!(rms_norm, rms_norm_cpu, rms_norm_gpu, rms_norm_metal);
test_device!(rms_norml, rms_norml_cpu, rms_norml_gpu, rms_norml_metal);
test_device!(layer_norm, ln_cpu, ln_gpu, ln_metal);
test_device!(layer_norml, lnl_cpu, lnl_gpu, lnl_metal);
test_device!(sigmoid, sigmoid_cpu, sigmoid_gpu, sigmoid_metal);

// Differentiable fused layer norm: `layer_norm_opt` (optional weight/bias) and `layer_norm`.
//
// Inputs are generated on the host with a seeded rng and rounded to the tested dtype before the
// f64 reference is computed from the rounded values, so the errors below measure the kernels
// only. Errors are max-abs, relative to the scale `max(1, max |reference|)` of what is checked.
use candle::{Context, DType, Var};
use rand::{rngs::StdRng, Rng, SeedableRng};

const LN_EPS: f32 = 1e-5;
const LN_DTYPES: [DType; 4] = [DType::F32, DType::F64, DType::F16, DType::BF16];

/// The dtypes to test on `dev`: Metal has no f64.
fn ln_dtypes(dev: &Device) -> Vec<DType> {
    LN_DTYPES
        .into_iter()
        .filter(|&dtype| !(dev.is_metal() && dtype == DType::F64))
        .collect()
}
// 66 (f32) and 2500 (16-bit) rows are not a multiple of a 16-byte vector but start 8-byte aligned;
// 40001 is an odd width past the backward's tiers (the cuda backward's split kernels).
const LN_HIDDEN: [usize; 11] = [1, 3, 17, 64, 66, 1000, 1024, 2500, 4097, 40001, 65536];
// (weight present, bias present)
const LN_AFFINE: [(bool, bool); 4] = [(true, true), (true, false), (false, true), (false, false)];

/// Tolerance relative to the output (or gradient) scale for a hidden size of `n`.
fn ln_tol(dtype: DType, n: usize) -> f64 {
    // The reductions over the hidden dim accumulate in f32 for f32/f16/bf16; rounding errors of a
    // sum of n terms grow like a random walk, ~eps * sqrt(n) relative (doubled for the margin).
    let acc = 2.0 * f32::EPSILON as f64 * (n as f64).sqrt();
    match dtype {
        // Computed in f64 end to end; anything going through f32 errs by ~1e-7 and fails.
        DType::F64 => 1e-10,
        // ~80 ulps: sqrt/division and a handful of roundings per element, plus the reductions.
        DType::F32 => 1e-5 + acc,
        // One ulp at the output scale, i.e. the final rounding to f16/bf16 (half an ulp) plus one
        // intermediate rounding: ~1e-3 for f16 (eps 2^-10), ~8e-3 for bf16 (eps 2^-7).
        DType::F16 => 2f64.powi(-10) + acc,
        DType::BF16 => 2f64.powi(-7) + acc,
        dtype => panic!("unexpected dtype {dtype:?}"),
    }
}

/// Keeps the element count small for the big hidden sizes so that CPU CI stays fast.
fn ln_rows_for(n: usize) -> usize {
    match n {
        0..=64 => 7,
        65..=1024 => 5,
        1025..=4097 => 3,
        _ => 2,
    }
}

fn ln_rand(rng: &mut StdRng, len: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..len).map(|_| rng.random_range(lo..hi)).collect()
}

/// Weight in [-1.5, 1.5] (so including values close to 0) and bias in [-1, 1].
fn ln_wb(rng: &mut StdRng, n: usize) -> (Vec<f64>, Vec<f64>) {
    (ln_rand(rng, n, -1.5, 1.5), ln_rand(rng, n, -1., 1.))
}

/// `rows` rows of `n` values, each row with its own mean in [-2, 2] and spread in [0.5, 2].
fn ln_rows(rng: &mut StdRng, rows: usize, n: usize) -> Vec<f64> {
    let mut xs = Vec::with_capacity(rows * n);
    for _ in 0..rows {
        let (mean, std) = (rng.random_range(-2.0..2.0), rng.random_range(0.5..2.0));
        xs.extend((0..n).map(|_| mean + std * rng.random_range(-1.7..1.7)));
    }
    xs
}

fn ln_host(t: &Tensor) -> Result<Vec<f64>> {
    t.to_device(&Device::Cpu)?
        .to_dtype(DType::F64)?
        .flatten_all()?
        .to_vec1::<f64>()
}

/// The tensor rounded to `dtype` (on the host) and moved to `dev`, with its exact values.
fn ln_tensor<S: Into<candle::Shape>>(
    v: &[f64],
    s: S,
    dtype: DType,
    dev: &Device,
) -> Result<(Tensor, Vec<f64>)> {
    let t = Tensor::from_vec(v.to_vec(), s, &Device::Cpu)?.to_dtype(dtype)?;
    let exact = ln_host(&t)?;
    Ok((t.to_device(dev)?, exact))
}

/// Two-pass layer norm over rows of `n` in f64.
fn ln_ref(x: &[f64], w: Option<&[f64]>, b: Option<&[f64]>, n: usize) -> Vec<f64> {
    let eps = LN_EPS as f64;
    let mut ys = Vec::with_capacity(x.len());
    for row in x.chunks(n) {
        let mean = row.iter().sum::<f64>() / n as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        let rstd = 1.0 / (var + eps).sqrt();
        for (i, v) in row.iter().enumerate() {
            let (w, b) = (w.map_or(1.0, |w| w[i]), b.map_or(0.0, |b| b[i]));
            ys.push((v - mean) * rstd * w + b);
        }
    }
    ys
}

/// Max abs difference; a NaN anywhere makes it NaN (so that comparisons with it fail).
fn ln_max_err(got: &Tensor, want: &[f64]) -> Result<f64> {
    let got = ln_host(got)?;
    assert_eq!(got.len(), want.len());
    let err = got.iter().zip(want).map(|(g, w)| (g - w).abs());
    Ok(err.fold(0f64, |m, d| if d.is_nan() || d > m { d } else { m }))
}

fn ln_check(what: &str, got: &Tensor, want: &[f64], tol: f64) -> Result<()> {
    let scale = want.iter().fold(1f64, |m, v| m.max(v.abs()));
    let err = ln_max_err(got, want)?;
    assert!(
        err <= tol * scale,
        "{what}: max abs err {err:e} > {tol:e} * {scale:e}"
    );
    Ok(())
}

type LnGrads = (Tensor, Tensor, Option<Tensor>, Option<Tensor>);

/// Fused forward and backward of `y * dy`: candle seeds the backward pass with ones so the
/// upstream gradient reaching `y` is `dy`. Returns y, dx, dw and db.
fn ln_fused_grads(
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    dy: &Tensor,
) -> Result<LnGrads> {
    let x = Var::from_tensor(x)?;
    let w = w.map(Var::from_tensor).transpose()?;
    let b = b.map(Var::from_tensor).transpose()?;
    let y = candle_nn::ops::layer_norm_opt(&x, w.as_deref(), b.as_deref(), LN_EPS)?;
    let grads = (&y * dy)?.backward()?;
    let dx = grads.get(&x).context("no grad for x")?.clone();
    let grad = |v: &Option<Var>, name: &str| match v {
        None => Ok(None),
        Some(v) => grads
            .get(v)
            .with_context(|| format!("no grad for {name}"))
            .map(|g| Some(g.clone())),
    };
    Ok((y, dx, grad(&w, "w")?, grad(&b, "b")?))
}

/// Autograd of `layer_norm_slow` in f64 on the cpu: dx, dw, db of `sum(y * dy)`.
fn ln_slow_grads(
    x: &[f64],
    w: Option<&[f64]>,
    b: Option<&[f64]>,
    dy: &[f64],
    n: usize,
) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    let (cpu, rows) = (&Device::Cpu, x.len() / n);
    let x = Var::from_vec(x.to_vec(), (rows, n), cpu)?;
    let w = Var::from_vec(w.map_or(vec![1.0; n], |w| w.to_vec()), n, cpu)?;
    let b = Var::from_vec(b.map_or(vec![0.0; n], |b| b.to_vec()), n, cpu)?;
    let dy = Tensor::from_vec(dy.to_vec(), (rows, n), cpu)?;
    let y = candle_nn::ops::layer_norm_slow(&x, &w, &b, LN_EPS)?;
    let grads = (y * dy)?.backward()?;
    let grad = |v: &Var| grads.get(v).context("no grad").and_then(ln_host);
    Ok((grad(&x)?, grad(&w)?, grad(&b)?))
}

/// Forward vs the f64 reference: every dtype, every affine combination, every hidden size.
fn layer_norm_opt_fwd(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(42);
    for n in LN_HIDDEN {
        let rows = ln_rows_for(n);
        let x = ln_rows(&mut rng, rows, n);
        let (w, b) = ln_wb(&mut rng, n);
        for dtype in ln_dtypes(dev) {
            let tol = ln_tol(dtype, n);
            let (xt, x) = ln_tensor(&x, (rows, n), dtype, dev)?;
            let (wt, w) = ln_tensor(&w, n, dtype, dev)?;
            let (bt, b) = ln_tensor(&b, n, dtype, dev)?;
            for (use_w, use_b) in LN_AFFINE {
                let (wt, bt) = (use_w.then_some(&wt), use_b.then_some(&bt));
                let y = candle_nn::ops::layer_norm_opt(&xt, wt, bt, LN_EPS)?;
                assert_eq!((y.dims(), y.dtype()), (&[rows, n][..], dtype));
                let want = ln_ref(&x, use_w.then_some(&w[..]), use_b.then_some(&b[..]), n);
                let what = format!("fwd {dtype:?} n={n} w={use_w} b={use_b}");
                ln_check(&what, &y, &want, tol)?;
            }
            let y = candle_nn::ops::layer_norm(&xt, &wt, &bt, LN_EPS)?;
            let want = ln_ref(&x, Some(&w), Some(&b), n);
            ln_check(&format!("layer_norm {dtype:?} n={n}"), &y, &want, tol)?;
        }
    }
    Ok(())
}

/// dx, dw, db vs autograd through `layer_norm_slow` in f64 (fails if the backward is missing).
fn layer_norm_grad(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(43);
    for n in LN_HIDDEN {
        let rows = ln_rows_for(n);
        let x = ln_rows(&mut rng, rows, n);
        let (w, b) = ln_wb(&mut rng, n);
        let dy = ln_rand(&mut rng, rows * n, -1., 1.);
        for dtype in ln_dtypes(dev) {
            let tol = ln_tol(dtype, n);
            let (xt, x) = ln_tensor(&x, (rows, n), dtype, dev)?;
            let (wt, w) = ln_tensor(&w, n, dtype, dev)?;
            let (bt, b) = ln_tensor(&b, n, dtype, dev)?;
            let (dyt, dy) = ln_tensor(&dy, (rows, n), dtype, dev)?;
            for (use_w, use_b) in LN_AFFINE {
                let (w_, b_) = (use_w.then_some(&w[..]), use_b.then_some(&b[..]));
                let (wt, bt) = (use_w.then_some(&wt), use_b.then_some(&bt));
                let (y, dx, dw, db) = ln_fused_grads(&xt, wt, bt, &dyt)?;
                let (rdx, rdw, rdb) = ln_slow_grads(&x, w_, b_, &dy, n)?;
                let what = format!("{dtype:?} n={n} w={use_w} b={use_b}");
                ln_check(&format!("y {what}"), &y, &ln_ref(&x, w_, b_, n), tol)?;
                ln_check(&format!("dx {what}"), &dx, &rdx, tol)?;
                if let Some(dw) = dw {
                    ln_check(&format!("dw {what}"), &dw, &rdw, tol)?;
                }
                if let Some(db) = db {
                    ln_check(&format!("db {what}"), &db, &rdb, tol)?;
                }
            }
            // The unchanged entry point is differentiable too.
            let (xv, wv, bv) = (
                Var::from_tensor(&xt)?,
                Var::from_tensor(&wt)?,
                Var::from_tensor(&bt)?,
            );
            let y = candle_nn::ops::layer_norm(&xv, &wv, &bv, LN_EPS)?;
            let grads = (y * &dyt)?.backward()?;
            let (rdx, rdw, rdb) = ln_slow_grads(&x, Some(&w), Some(&b), &dy, n)?;
            let what = format!("layer_norm {dtype:?} n={n}");
            let dx = grads.get(&xv).context("no grad for x")?;
            ln_check(&format!("dx {what}"), dx, &rdx, tol)?;
            let dw = grads.get(&wv).context("no grad for w")?;
            ln_check(&format!("dw {what}"), dw, &rdw, tol)?;
            let db = grads.get(&bv).context("no grad for b")?;
            ln_check(&format!("db {what}"), db, &rdb, tol)?;
        }
    }
    Ok(())
}

/// Central finite differences of the fused f64 forward vs its backward.
fn layer_norm_grad_fd(dev: &Device) -> Result<()> {
    // Finite differences need f64, which Metal does not have.
    if dev.is_metal() {
        return Ok(());
    }
    fn fd(v: &[f64], f: impl Fn(&[f64]) -> Result<f64>) -> Result<Vec<f64>> {
        let h = 1e-5;
        let mut v = v.to_vec();
        (0..v.len())
            .map(|i| -> Result<f64> {
                let v0 = v[i];
                v[i] = v0 + h;
                let l_plus = f(&v)?;
                v[i] = v0 - h;
                let l_minus = f(&v)?;
                v[i] = v0;
                Ok((l_plus - l_minus) / (2. * h))
            })
            .collect()
    }
    let mut rng = StdRng::seed_from_u64(44);
    let rows = 3;
    for n in [1, 3, 17, 64] {
        let x = ln_rows(&mut rng, rows, n);
        let (w, b) = ln_wb(&mut rng, n);
        let dy = Tensor::from_vec(ln_rand(&mut rng, rows * n, -1., 1.), (rows, n), dev)?;
        for (use_w, use_b) in LN_AFFINE {
            let loss = |x: &[f64], w: &[f64], b: &[f64]| -> Result<f64> {
                let x = Tensor::from_vec(x.to_vec(), (rows, n), dev)?;
                let w = Tensor::from_vec(w.to_vec(), n, dev)?;
                let b = Tensor::from_vec(b.to_vec(), n, dev)?;
                let (w, b) = (use_w.then_some(&w), use_b.then_some(&b));
                let y = candle_nn::ops::layer_norm_opt(&x, w, b, LN_EPS)?;
                (y * &dy)?.sum_all()?.to_scalar::<f64>()
            };
            let xt = Tensor::from_vec(x.clone(), (rows, n), dev)?;
            let wt = Tensor::from_vec(w.clone(), n, dev)?;
            let bt = Tensor::from_vec(b.clone(), n, dev)?;
            let (wt, bt) = (use_w.then_some(&wt), use_b.then_some(&bt));
            let (_, dx, dw, db) = ln_fused_grads(&xt, wt, bt, &dy)?;
            // h = 1e-5: truncation error ~h^2 * |f'''| and rounding error ~eps * |L| / h are both
            // ~1e-10 here, a wrong term in the backward pass is off by O(1).
            let tol = 1e-7;
            let what = format!("n={n} w={use_w} b={use_b}");
            let fd_dx = fd(&x, |x| loss(x, &w, &b))?;
            ln_check(&format!("fd dx {what}"), &dx, &fd_dx, tol)?;
            if let Some(dw) = dw {
                let fd_dw = fd(&w, |w| loss(&x, w, &b))?;
                ln_check(&format!("fd dw {what}"), &dw, &fd_dw, tol)?;
            }
            if let Some(db) = db {
                let fd_db = fd(&b, |b| loss(&x, &w, b))?;
                ln_check(&format!("fd db {what}"), &db, &fd_db, tol)?;
            }
        }
    }
    Ok(())
}

/// More rows than a GPU keeps resident blocks: the cuda kernels that process several rows per
/// block (the persistent backward grid and the prefetching tiers, used for 8192 f32 columns in
/// both directions) must carry nothing over from one row to the next except the partial sums.
fn layer_norm_many_rows(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(47);
    let (rows, n) = (300, 8192);
    let x = ln_rows(&mut rng, rows, n);
    let (w, b) = ln_wb(&mut rng, n);
    let dy = ln_rand(&mut rng, rows * n, -1., 1.);
    let tol = ln_tol(DType::F32, n);
    let (xt, x) = ln_tensor(&x, (rows, n), DType::F32, dev)?;
    let (wt, w) = ln_tensor(&w, n, DType::F32, dev)?;
    let (bt, b) = ln_tensor(&b, n, DType::F32, dev)?;
    let (dyt, dy) = ln_tensor(&dy, (rows, n), DType::F32, dev)?;
    let (y, dx, dw, db) = ln_fused_grads(&xt, Some(&wt), Some(&bt), &dyt)?;
    let (rdx, rdw, rdb) = ln_slow_grads(&x, Some(&w), Some(&b), &dy, n)?;
    ln_check("y", &y, &ln_ref(&x, Some(&w), Some(&b), n), tol)?;
    ln_check("dx", &dx, &rdx, tol)?;
    ln_check("dw", &dw.context("no grad for w")?, &rdw, tol)?;
    ln_check("db", &db.context("no grad for b")?, &rdb, tol)?;
    Ok(())
}

/// 16-bit rows of an odd width in more rows than a GPU keeps resident blocks (1001 x 3001) and in
/// fewer (64 x 2501): the cuda backward then takes each block's rows as spans of aligned 16-byte
/// words (its grid a multiple of 8 blocks), shifted by a phase that differs from block to block.
/// Three rows (as in `layer_norm_grad`) make a grid of three blocks, which takes the rows in
/// pieces instead. Rows of 2048 and 3000 in more rows than resident blocks: the cuda backward
/// takes each block's rows two at a time, and an odd one last; at 2048 and 2500 (rows of 8-byte
/// vectors) it copies the next two rows into shared memory while it reduces the current two.
fn layer_norm_many_rows_16bit(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(59);
    for (rows, n) in [
        (1001, 3001),
        (64, 2501),
        (6001, 2048),
        (3001, 3000),
        (2001, 2500),
    ] {
        let x = ln_rows(&mut rng, rows, n);
        let (w, b) = ln_wb(&mut rng, n);
        let dy = ln_rand(&mut rng, rows * n, -1., 1.);
        for dtype in [DType::F16, DType::BF16] {
            let tol = ln_tol(dtype, n);
            let (xt, x) = ln_tensor(&x, (rows, n), dtype, dev)?;
            let (wt, w) = ln_tensor(&w, n, dtype, dev)?;
            let (bt, b) = ln_tensor(&b, n, dtype, dev)?;
            let (dyt, dy) = ln_tensor(&dy, (rows, n), dtype, dev)?;
            let what = format!("{dtype:?} {rows}x{n}");
            let (_, dx, dw, db) = ln_fused_grads(&xt, Some(&wt), Some(&bt), &dyt)?;
            let (rdx, rdw, rdb) = ln_slow_grads(&x, Some(&w), Some(&b), &dy, n)?;
            ln_check(&format!("dx {what}"), &dx, &rdx, tol)?;
            let dw = dw.context("no grad for w")?;
            ln_check(&format!("dw {what}"), &dw, &rdw, tol)?;
            let db = db.context("no grad for b")?;
            ln_check(&format!("db {what}"), &db, &rdb, tol)?;
            let (_, dx, _, _) = ln_fused_grads(&xt, None, None, &dyt)?;
            let (rdx, _, _) = ln_slow_grads(&x, None, None, &dy, n)?;
            ln_check(&format!("dx no affine {what}"), &dx, &rdx, tol)?;
        }
    }
    Ok(())
}

/// Narrow 16-bit rows in more rows than the resident blocks' tiles hold at once: the cuda
/// backward stages tiles of consecutive rows in shared memory (rows of 97, 201, 333 and 1001 start
/// at every offset in a 16-byte word, tiles end inside one), each block taking several, the last
/// one partial; and the same rows one row into the tensor, so that its first element is not at the
/// start of a word.
fn layer_norm_tiles_16bit(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(66);
    for (rows, n) in [
        (40001, 97),
        (12001, 333),
        (30001, 96),
        (20001, 201),
        (4001, 1001),
    ] {
        let x = ln_rows(&mut rng, rows + 1, n);
        let (w, b) = ln_wb(&mut rng, n);
        let dy = ln_rand(&mut rng, rows * n, -1., 1.);
        for dtype in [DType::F16, DType::BF16] {
            let tol = ln_tol(dtype, n);
            let (xt, x) = ln_tensor(&x, (rows + 1, n), dtype, dev)?;
            let (wt, w) = ln_tensor(&w, n, dtype, dev)?;
            let (bt, b) = ln_tensor(&b, n, dtype, dev)?;
            let (dyt, dy) = ln_tensor(&dy, (rows, n), dtype, dev)?;
            let what = format!("{dtype:?} {rows}x{n}");
            let (rdx, rdw, rdb) = ln_slow_grads(&x[n..], Some(&w), Some(&b), &dy, n)?;
            let (_, dx, dw, db) =
                ln_fused_grads(&xt.narrow(0, 1, rows)?, Some(&wt), Some(&bt), &dyt)?;
            ln_check(&format!("dx {what}"), &dx, &rdx, tol)?;
            ln_check(
                &format!("dw {what}"),
                &dw.context("no grad for w")?,
                &rdw,
                tol,
            )?;
            ln_check(
                &format!("db {what}"),
                &db.context("no grad for b")?,
                &rdb,
                tol,
            )?;
            // One row in: x starts n elements after its buffer, inside a word for odd n.
            let xv = Var::from_tensor(&xt)?;
            let y = candle_nn::ops::layer_norm(&xv.narrow(0, 1, rows)?, &wt, &bt, LN_EPS)?;
            let grads = (y * &dyt)?.backward()?;
            let dx = grads
                .get(&xv)
                .context("no grad for x")?
                .narrow(0, 1, rows)?;
            ln_check(&format!("dx of a view {what}"), &dx, &rdx, tol)?;
        }
    }
    Ok(())
}

/// Hidden sizes whose backward partial sums (two f32 rows in shared memory) fill a block's
/// default 48 KiB (6144) or come within the kernel's own shared memory of it (6100), and a size
/// whose partial sums fit an H100's or H200's 227 KiB opt-in limit only without the kernel's own
/// shared memory (bf16 29000): the launch has to opt in for both together, or take a tier
/// without the partial sums in shared memory.
fn layer_norm_smem_limits(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(53);
    let cases = [
        (6144, DType::F32),
        (6100, DType::F32),
        (6144, DType::BF16),
        (29000, DType::BF16),
    ];
    for (n, dtype) in cases {
        let rows = 3;
        let x = ln_rows(&mut rng, rows, n);
        let (w, b) = ln_wb(&mut rng, n);
        let dy = ln_rand(&mut rng, rows * n, -1., 1.);
        let tol = ln_tol(dtype, n);
        let (xt, x) = ln_tensor(&x, (rows, n), dtype, dev)?;
        let (wt, w) = ln_tensor(&w, n, dtype, dev)?;
        let (bt, b) = ln_tensor(&b, n, dtype, dev)?;
        let (dyt, dy) = ln_tensor(&dy, (rows, n), dtype, dev)?;
        let (_, dx, dw, db) = ln_fused_grads(&xt, Some(&wt), Some(&bt), &dyt)?;
        let (rdx, rdw, rdb) = ln_slow_grads(&x, Some(&w), Some(&b), &dy, n)?;
        let what = format!("{dtype:?} n={n}");
        ln_check(&format!("dx {what}"), &dx, &rdx, tol)?;
        ln_check(
            &format!("dw {what}"),
            &dw.context("no grad for w")?,
            &rdw,
            tol,
        )?;
        ln_check(
            &format!("db {what}"),
            &db.context("no grad for b")?,
            &rdb,
            tol,
        )?;
    }
    Ok(())
}

/// Rows with mean 1e4 and std 1e-2 (|mean| / std = 1e6). Stock candle 0.9.1 computes the
/// variance in one pass as E[x^2] - E[x]^2 in f32, which cancels catastrophically here: NaN on
/// cpu (negative variance) and a max abs error of ~8.7 on cuda. Note that f32's ulp at 1e4 is
/// ~1e-3 = 0.1 std, so x - mean must not be rounded to f32 at the magnitude of the mean.
fn layer_norm_large_mean(dev: &Device) -> Result<()> {
    // Metal runs candle's one-pass forward kernel (E[x^2] - E[x]^2), which large-mean rows
    // defeat, and has no f64.
    if dev.is_metal() {
        return Ok(());
    }
    let mut rng = StdRng::seed_from_u64(45);
    let rows = 4;
    for n in [17, 1024, 4097] {
        let mut x = Vec::with_capacity(rows * n);
        for mean in [1e4, -1e4, 1e4 + 0.5, 1e4] {
            x.extend((0..n).map(|_| mean + 1e-2 * rng.random_range(-1.7..1.7)));
        }
        let (w, b) = (ln_rand(&mut rng, n, -1., 1.), ln_rand(&mut rng, n, -1., 1.));
        let dy = ln_rand(&mut rng, rows * n, -1., 1.);
        // f32: max abs error 1e-2 on outputs of magnitude ~2 (|w|, |b| <= 1). f64: the condition
        // number is ~1e6, so allow 1e6 * sqrt(n) * f64 eps ~ 1e-8, a fused path computing in f32
        // errs by more than 1e-2.
        for (dtype, tol) in [(DType::F32, 1e-2), (DType::F64, 1e-6)] {
            let (xt, x) = ln_tensor(&x, (rows, n), dtype, dev)?;
            let (wt, w) = ln_tensor(&w, n, dtype, dev)?;
            let (bt, b) = ln_tensor(&b, n, dtype, dev)?;
            let (dyt, dy) = ln_tensor(&dy, (rows, n), dtype, dev)?;
            let y = candle_nn::ops::layer_norm_opt(&xt, Some(&wt), Some(&bt), LN_EPS)?;
            let err = ln_max_err(&y, &ln_ref(&x, Some(&w), Some(&b), n))?;
            assert!(err <= tol, "{dtype:?} n={n}: max abs err {err:e} > {tol:e}");
            let y = candle_nn::ops::layer_norm_opt(&xt, None, None, LN_EPS)?;
            let err = ln_max_err(&y, &ln_ref(&x, None, None, n))?;
            assert!(
                err <= tol,
                "{dtype:?} n={n} no affine: max abs err {err:e} > {tol:e}"
            );
            // Gradients, relative to their scale (dx is ~1/std = 1e2 times larger than dy).
            let (_, dx, dw, db) = ln_fused_grads(&xt, Some(&wt), Some(&bt), &dyt)?;
            let (rdx, rdw, rdb) = ln_slow_grads(&x, Some(&w), Some(&b), &dy, n)?;
            ln_check(&format!("dx {dtype:?} n={n}"), &dx, &rdx, tol)?;
            ln_check(&format!("dw {dtype:?} n={n}"), &dw.unwrap(), &rdw, tol)?;
            ln_check(&format!("db {dtype:?} n={n}"), &db.unwrap(), &rdb, tol)?;
        }
    }
    Ok(())
}

/// Rows whose first element lies far from the others (1e3 against values in [-1.7, 1.7]).
/// Statistics taken in one pass over the row shifted by its first element, `E[d^2] - E[d]^2`,
/// cancel here (|mean - x[0]| is ~32 standard deviations at n = 1024): a kernel that takes
/// that pass must take a second one for such rows. 65536: rows past the resident tiers (the
/// cuda forward's `big` kernel and split backward), and the cpu's row sums at their longest.
fn layer_norm_outlier_first(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(47);
    let rows = 3;
    for n in [17, 1024, 4097, 65536] {
        let mut x = ln_rows(&mut rng, rows, n);
        for row in x.chunks_mut(n) {
            row[0] = 1e3;
        }
        let (w, b) = ln_wb(&mut rng, n);
        let dy = ln_rand(&mut rng, rows * n, -1., 1.);
        for dtype in [DType::F32, DType::F64] {
            let tol = ln_tol(dtype, n);
            let (xt, x) = ln_tensor(&x, (rows, n), dtype, dev)?;
            let (wt, w) = ln_tensor(&w, n, dtype, dev)?;
            let (bt, b) = ln_tensor(&b, n, dtype, dev)?;
            let (dyt, dy) = ln_tensor(&dy, (rows, n), dtype, dev)?;
            let (y, dx, dw, db) = ln_fused_grads(&xt, Some(&wt), Some(&bt), &dyt)?;
            let what = format!("{dtype:?} n={n}");
            ln_check(
                &format!("y {what}"),
                &y,
                &ln_ref(&x, Some(&w), Some(&b), n),
                tol,
            )?;
            let (rdx, rdw, rdb) = ln_slow_grads(&x, Some(&w), Some(&b), &dy, n)?;
            ln_check(&format!("dx {what}"), &dx, &rdx, tol)?;
            ln_check(&format!("dw {what}"), &dw.unwrap(), &rdw, tol)?;
            ln_check(&format!("db {what}"), &db.unwrap(), &rdb, tol)?;
        }
    }
    Ok(())
}

/// 21 rows (not a multiple of the rows a kernel may take a pass at a time) at widths of several
/// rows a pass on the cpu (17, 100) and of one (1000), every third row with an outlier first
/// element (see `layer_norm_outlier_first`): nothing may carry over from a row or group of rows
/// to the next one, and the last, shorter group must be complete.
fn layer_norm_row_groups(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(48);
    let rows = 21;
    for n in [17, 100, 1000] {
        let mut x = ln_rows(&mut rng, rows, n);
        for row in x.chunks_mut(n).skip(1).step_by(3) {
            row[0] = 1e3;
        }
        let (w, b) = ln_wb(&mut rng, n);
        let dy = ln_rand(&mut rng, rows * n, -1., 1.);
        for dtype in ln_dtypes(dev) {
            let tol = ln_tol(dtype, n);
            let (xt, x) = ln_tensor(&x, (rows, n), dtype, dev)?;
            let (wt, w) = ln_tensor(&w, n, dtype, dev)?;
            let (bt, b) = ln_tensor(&b, n, dtype, dev)?;
            let (dyt, dy) = ln_tensor(&dy, (rows, n), dtype, dev)?;
            let (y, dx, dw, db) = ln_fused_grads(&xt, Some(&wt), Some(&bt), &dyt)?;
            let what = format!("{dtype:?} n={n}");
            let y_ref = ln_ref(&x, Some(&w), Some(&b), n);
            ln_check(&format!("y {what}"), &y, &y_ref, tol)?;
            let (rdx, rdw, rdb) = ln_slow_grads(&x, Some(&w), Some(&b), &dy, n)?;
            ln_check(&format!("dx {what}"), &dx, &rdx, tol)?;
            ln_check(&format!("dw {what}"), &dw.unwrap(), &rdw, tol)?;
            ln_check(&format!("db {what}"), &db.unwrap(), &rdb, tol)?;
        }
    }
    Ok(())
}

/// Constant rows (variance 0, rstd = 1 / sqrt(eps) ~ 316): the output is the bias and the
/// gradients are finite and match the reference (dx = rstd * (g - mean(g)), dw = 0, db = sum(dy)).
/// Stock candle's one-pass variance can go negative here, giving NaN.
fn layer_norm_constant_rows(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(46);
    let n = 64;
    // For these the sum of the row is exact in f32, so the mean is exact and y = b up to the
    // usual rounding. 0.1 is not: a mean off by a few ulps of 0.1 (any summation order) is
    // amplified by rstd, so that row also gets |w| * rstd * |c| * 2 * eps * sqrt(n).
    let consts = [0., 3., -1.5, 1e4, 0.1];
    let rows = consts.len();
    let x: Vec<f64> = consts.iter().flat_map(|&c| vec![c; n]).collect();
    let (w, b) = ln_wb(&mut rng, n);
    let dy = ln_rand(&mut rng, rows * n, -1., 1.);
    for dtype in ln_dtypes(dev) {
        let tol = ln_tol(dtype, n);
        let acc_eps = match dtype {
            DType::F64 => f64::EPSILON,
            _ => f32::EPSILON as f64,
        };
        let rstd = 1. / (LN_EPS as f64).sqrt();
        let ill_cond = 1.5 * rstd * 0.1 * 2. * acc_eps * (n as f64).sqrt();
        let (xt, x) = ln_tensor(&x, (rows, n), dtype, dev)?;
        let (wt, w) = ln_tensor(&w, n, dtype, dev)?;
        let (bt, b) = ln_tensor(&b, n, dtype, dev)?;
        let (dyt, dy) = ln_tensor(&dy, (rows, n), dtype, dev)?;
        let (y, dx, dw, db) = ln_fused_grads(&xt, Some(&wt), Some(&bt), &dyt)?;
        let y_no_affine = candle_nn::ops::layer_norm_opt(&xt, None, None, LN_EPS)?;
        for (r, c) in consts.iter().enumerate() {
            let tol = if *c == 0.1 { tol + ill_cond } else { tol };
            let what = format!("y {dtype:?} row of {c}");
            ln_check(&what, &y.narrow(0, r, 1)?, &b, tol)?;
            let y = y_no_affine.narrow(0, r, 1)?;
            ln_check(&format!("{what} no affine"), &y, &vec![0.; n], tol)?;
        }
        let (rdx, rdw, rdb) = ln_slow_grads(&x, Some(&w), Some(&b), &dy, n)?;
        let tol = tol + ill_cond;
        ln_check(&format!("dx {dtype:?}"), &dx, &rdx, tol)?;
        ln_check(&format!("dw {dtype:?}"), &dw.unwrap(), &rdw, tol)?;
        ln_check(&format!("db {dtype:?}"), &db.unwrap(), &rdb, tol)?;
    }
    Ok(())
}

/// Zero rows: empty output, and a backward pass giving empty dx and zero dw, db.
fn layer_norm_empty(dev: &Device) -> Result<()> {
    if dev.is_cuda() {
        // The cuda backend cannot allocate an empty buffer (cuMemAllocAsync of 0 bytes is an
        // invalid value), so there is no empty cuda tensor to normalize.
        return Ok(());
    }
    let n = 64;
    for dtype in ln_dtypes(dev) {
        for (use_w, use_b) in LN_AFFINE {
            let x = Var::zeros((0, n), dtype, dev)?;
            let w = Var::ones(n, dtype, dev)?;
            let b = Var::ones(n, dtype, dev)?;
            let (wv, bv) = (use_w.then_some(&w), use_b.then_some(&b));
            let y = candle_nn::ops::layer_norm_opt(&x, wv.map(|w| &**w), bv.map(|b| &**b), LN_EPS)?;
            assert_eq!(y.dims(), &[0, n]);
            let grads = y.backward()?;
            assert_eq!(grads.get(&x).context("no grad for x")?.dims(), &[0, n]);
            for v in wv.into_iter().chain(bv) {
                let g = grads.get(v).context("no grad for w/b")?;
                assert_eq!(ln_host(g)?, vec![0.; n], "{dtype:?} w={use_w} b={use_b}");
            }
        }
    }
    Ok(())
}

/// Two identical forward/backward passes give bit-identical y, dx, dw and db (no atomics or
/// scheduling-dependent reductions). Comparing the exact f64 widening compares the bits.
fn layer_norm_deterministic(dev: &Device) -> Result<()> {
    let bits =
        |t: &Tensor| -> Result<Vec<u64>> { Ok(ln_host(t)?.iter().map(|v| v.to_bits()).collect()) };
    let mut rng = StdRng::seed_from_u64(47);
    // A resident tier, and rows past the widest one (the split backward).
    for (rows, n) in [(1031, 1024), (40, 40000)] {
        let x = ln_rows(&mut rng, rows, n);
        let (w, b) = ln_wb(&mut rng, n);
        let dy = ln_rand(&mut rng, rows * n, -1., 1.);
        for dtype in ln_dtypes(dev) {
            let (xt, _) = ln_tensor(&x, (rows, n), dtype, dev)?;
            let (wt, _) = ln_tensor(&w, n, dtype, dev)?;
            let (bt, _) = ln_tensor(&b, n, dtype, dev)?;
            let (dyt, _) = ln_tensor(&dy, (rows, n), dtype, dev)?;
            let run = || -> Result<Vec<Vec<u64>>> {
                let (y, dx, dw, db) = ln_fused_grads(&xt, Some(&wt), Some(&bt), &dyt)?;
                [y, dx, dw.unwrap(), db.unwrap()]
                    .iter()
                    .map(&bits)
                    .collect()
            };
            let first = run()?;
            for _ in 0..2 {
                let again = run()?;
                for (name, (a, b)) in ["y", "dx", "dw", "db"].iter().zip(first.iter().zip(&again)) {
                    assert!(
                        a == b,
                        "{dtype:?} n={n}: {name} differs between two identical runs"
                    );
                }
            }
            // A pool of one thread runs the rows on the calling thread, in the same chunks.
            if dev.is_cpu() {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .build()
                    .unwrap();
                let one = pool.install(run)?;
                for (name, (a, b)) in ["y", "dx", "dw", "db"].iter().zip(first.iter().zip(&one)) {
                    assert!(a == b, "{dtype:?} n={n}: {name} differs on one thread");
                }
            }
        }
    }
    Ok(())
}

/// Mismatched weight/bias lengths or dtypes are errors with a clear message (not panics).
fn layer_norm_errors(dev: &Device) -> Result<()> {
    let n = 12;
    let x = Tensor::zeros((2, n), DType::F32, dev)?;
    let good = Tensor::ones(n, DType::F32, dev)?;
    let short = Tensor::ones(n - 1, DType::F32, dev)?;
    let ln = candle_nn::ops::layer_norm_opt;
    let shape_errs = [
        ln(&x, Some(&short), Some(&good), LN_EPS),
        ln(&x, Some(&good), Some(&short), LN_EPS),
        ln(&x, Some(&short), None, LN_EPS),
        ln(&x, None, Some(&short), LN_EPS),
        candle_nn::ops::layer_norm(&x, &short, &good, LN_EPS),
        candle_nn::ops::layer_norm(&x, &good, &short, LN_EPS),
    ];
    for (i, res) in shape_errs.into_iter().enumerate() {
        let msg = res
            .err()
            .with_context(|| format!("case {i}: no error"))?
            .to_string();
        // The message names both sizes.
        assert!(msg.contains("11") && msg.contains("12"), "case {i}: {msg}");
    }
    for dtype in ln_dtypes(dev).into_iter().filter(|&d| d != DType::F32) {
        let other = Tensor::ones(n, dtype, dev)?;
        let dtype_errs = [
            ln(&x, Some(&other), Some(&good), LN_EPS),
            ln(&x, Some(&good), Some(&other), LN_EPS),
            ln(&x, Some(&other), None, LN_EPS),
            ln(&x, None, Some(&other), LN_EPS),
        ];
        for (i, res) in dtype_errs.into_iter().enumerate() {
            let msg = res
                .err()
                .with_context(|| format!("{dtype:?} case {i}: no error"))?;
            // The message names both dtypes.
            let msg = msg.to_string().to_lowercase();
            assert!(
                msg.contains("f32") && msg.contains(dtype.as_str()),
                "{dtype:?} case {i}: {msg}"
            );
        }
    }
    Ok(())
}

/// Non-contiguous inputs (transposed, narrowed, broadcast) give the same output and gradients
/// as their contiguous copies.
fn layer_norm_strided(dev: &Device) -> Result<()> {
    type View = fn(&Tensor) -> Result<Tensor>;
    let mut rng = StdRng::seed_from_u64(48);
    let rows = 6;
    for n in [17, 1024] {
        let views: [(&str, Vec<usize>, View); 3] = [
            ("transposed", vec![rows, n], |t| t.t()),
            ("narrowed", vec![2, rows / 2, n + 7], |t| {
                t.narrow(2, 3, t.dim(2)? - 7)
            }),
            ("broadcast", vec![1, n], |t| t.broadcast_as((6, t.dim(1)?))),
        ];
        let (w, b) = ln_wb(&mut rng, n);
        for dtype in [DType::F32, DType::BF16] {
            let tol = ln_tol(dtype, n);
            let (wt, _) = ln_tensor(&w, n, dtype, dev)?;
            let (bt, _) = ln_tensor(&b, n, dtype, dev)?;
            for (name, base_shape, view) in views.iter() {
                let mut base_shape = base_shape.clone();
                if *name == "transposed" {
                    base_shape.reverse()
                }
                let len = base_shape.iter().product();
                let (base, _) = ln_tensor(&ln_rows(&mut rng, 1, len), base_shape, dtype, dev)?;
                let dims = view(&base)?.dims().to_vec();
                let (dy, _) = ln_tensor(&ln_rand(&mut rng, rows * n, -1., 1.), dims, dtype, dev)?;
                let mut results = vec![];
                for make_contiguous in [false, true] {
                    let (base, w, b) = (
                        Var::from_tensor(&base)?,
                        Var::from_tensor(&wt)?,
                        Var::from_tensor(&bt)?,
                    );
                    let mut xs = view(&base)?;
                    assert!(!xs.is_contiguous());
                    if make_contiguous {
                        xs = xs.contiguous()?;
                    }
                    let y = candle_nn::ops::layer_norm_opt(&xs, Some(&w), Some(&b), LN_EPS)?;
                    let grads = (&y * &dy)?.backward()?;
                    let dx = grads.get(&base).context("no grad for x")?;
                    let dw = grads.get(&w).context("no grad for w")?;
                    let db = grads.get(&b).context("no grad for b")?;
                    results.push([ln_host(&y)?, ln_host(dx)?, ln_host(dw)?, ln_host(db)?]);
                }
                for (i, what) in ["y", "dx", "dw", "db"].iter().enumerate() {
                    let got = Tensor::new(results[0][i].as_slice(), &Device::Cpu)?;
                    let what = format!("{what} {name} {dtype:?} n={n}");
                    ln_check(&what, &got, &results[1][i], tol)?;
                }
            }
        }
    }
    Ok(())
}

test_device!(layer_norm_opt_fwd, lno_fwd_cpu, lno_fwd_gpu, lno_fwd_metal);
test_device!(layer_norm_grad, ln_grad_cpu, ln_grad_gpu, ln_grad_metal);
test_device!(
    layer_norm_grad_fd,
    ln_grad_fd_cpu,
    ln_grad_fd_gpu,
    ln_grad_fd_metal
);
test_device!(
    layer_norm_large_mean,
    ln_large_mean_cpu,
    ln_large_mean_gpu,
    ln_large_mean_metal
);
test_device!(
    layer_norm_outlier_first,
    ln_outlier_first_cpu,
    ln_outlier_first_gpu,
    ln_outlier_first_metal
);
test_device!(
    layer_norm_row_groups,
    ln_row_groups_cpu,
    ln_row_groups_gpu,
    ln_row_groups_metal
);
test_device!(
    layer_norm_constant_rows,
    ln_const_cpu,
    ln_const_gpu,
    ln_const_metal
);
test_device!(layer_norm_empty, ln_empty_cpu, ln_empty_gpu, ln_empty_metal);
test_device!(
    layer_norm_many_rows,
    ln_many_rows_cpu,
    ln_many_rows_gpu,
    ln_many_rows_metal
);
test_device!(
    layer_norm_tiles_16bit,
    ln_tiles_16bit_cpu,
    ln_tiles_16bit_gpu,
    ln_tiles_16bit_metal
);
test_device!(
    layer_norm_many_rows_16bit,
    ln_many_rows_16bit_cpu,
    ln_many_rows_16bit_gpu,
    ln_many_rows_16bit_metal
);
test_device!(
    layer_norm_smem_limits,
    ln_smem_limits_cpu,
    ln_smem_limits_gpu,
    ln_smem_limits_metal
);
test_device!(
    layer_norm_deterministic,
    ln_det_cpu,
    ln_det_gpu,
    ln_det_metal
);
test_device!(
    layer_norm_errors,
    ln_errors_cpu,
    ln_errors_gpu,
    ln_errors_metal
);
test_device!(
    layer_norm_strided,
    ln_strided_cpu,
    ln_strided_gpu,
    ln_strided_metal
);
