#[cfg(feature = "mkl")]
extern crate intel_mkl_src;

#[cfg(feature = "accelerate")]
extern crate accelerate_src;

use anyhow::Result;
use candle::{test_utils, Device, Tensor};
use candle_nn::{LayerNorm, Module};

#[test]
fn layer_norm() -> Result<()> {
    let device = &Device::Cpu;
    let w = Tensor::new(&[3f32], device)?;
    let b = Tensor::new(&[0.5f32], device)?;
    let ln2 = LayerNorm::new(Tensor::cat(&[&w, &w], 0)?, Tensor::cat(&[&b, &b], 0)?, 1e-8);
    let ln3 = LayerNorm::new(
        Tensor::cat(&[&w, &w, &w], 0)?,
        Tensor::cat(&[&b, &b, &b], 0)?,
        1e-8,
    );
    let ln = LayerNorm::new(w, b, 1e-8);

    let two = Tensor::new(&[[[2f32]]], device)?;
    let res = ln.forward(&two)?.flatten_all()?;
    assert_eq!(res.to_vec1::<f32>()?, [0.5f32]);

    let inp = Tensor::new(&[[[4f32, 0f32]]], device)?;
    let res = ln2.forward(&inp)?;
    assert_eq!(res.to_vec3::<f32>()?, [[[3.5f32, -2.5]]]);

    let inp = Tensor::new(&[[[1f32, 2., 3.], [4., 5., 6.], [9., 8., 7.]]], device)?;
    let res = ln3.forward(&inp)?;
    assert_eq!(
        test_utils::to_vec3_round(&res, 4)?,
        [[
            [-3.1742, 0.5, 4.1742],
            [-3.1742, 0.5, 4.1742],
            [4.1742, 0.5, -3.1742]
        ]]
    );
    let mean = (res.sum_keepdim(2)? / 3.0)?;
    // The average value should be `b`.
    assert_eq!(
        test_utils::to_vec3_round(&mean, 4)?,
        [[[0.5], [0.5], [0.5]]]
    );
    let std = (res.broadcast_sub(&mean)?.sqr()?.sum_keepdim(2)?.sqrt()? / 3.0)?;
    // The standard deviation should be sqrt(`w`).
    assert_eq!(
        test_utils::to_vec3_round(&std, 4)?,
        [[[1.7321], [1.7321], [1.7321]]]
    );
    Ok(())
}

// The `LayerNorm` module takes the fused, differentiable path for every configuration
// (weight and bias, weight only, contiguous or not): weight, bias and input all get gradients.
// Upstream candle 0.9.1 used the fused forward without a backward pass when a bias was present,
// so the gradients of weight, bias and input silently vanished.
use anyhow::Context;
use candle::{test_device, DType, Var};
use candle_nn::{LayerNormConfig, VarBuilder, VarMap};
use rand::{rngs::StdRng, Rng, SeedableRng};

const LN_EPS: f64 = 1e-5;

/// Tolerance relative to the output/gradient scale: f32 ~1e-5 (a few roundings plus the f32
/// reductions over 64 elements), bf16 one ulp at the scale (eps 2^-7, the final rounding plus one
/// intermediate one).
fn ln_tol(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => 1e-5,
        DType::BF16 => 2f64.powi(-7),
        dtype => panic!("unexpected dtype {dtype:?}"),
    }
}

fn ln_host(t: &Tensor) -> candle::Result<Vec<f64>> {
    t.to_device(&Device::Cpu)?
        .to_dtype(DType::F64)?
        .flatten_all()?
        .to_vec1::<f64>()
}

fn ln_check(what: &str, got: &Tensor, want: &[f64], tol: f64) -> Result<()> {
    let got = ln_host(got)?;
    assert_eq!(got.len(), want.len(), "{what}");
    let scale = want.iter().fold(1f64, |m, v| m.max(v.abs()));
    let err = got.iter().zip(want).map(|(g, w)| (g - w).abs());
    let err = err.fold(0f64, |m, d| if d.is_nan() || d > m { d } else { m });
    assert!(
        err <= tol * scale,
        "{what}: max abs err {err:e} > {tol:e} * {scale:e}"
    );
    Ok(())
}

/// Reference: autograd through `layer_norm_slow` in f64 on the cpu, from the exact values of
/// `x`, `w`, `b` (None: zeros) and `dy`. Returns y, dx, dw, db for `sum(y * dy)`.
fn ln_reference(x: &Tensor, w: &Tensor, b: Option<&Tensor>, dy: &Tensor) -> Result<[Vec<f64>; 4]> {
    let f64_var = |t: &Tensor| Var::from_tensor(&t.to_device(&Device::Cpu)?.to_dtype(DType::F64)?);
    let (x, w, dy) = (f64_var(x)?, f64_var(w)?, f64_var(dy)?);
    let b = match b {
        Some(b) => f64_var(b)?,
        None => Var::zeros(w.dims1()?, DType::F64, &Device::Cpu)?,
    };
    let y = candle_nn::ops::layer_norm_slow(&x, &w, &b, LN_EPS as f32)?;
    let grads = (&y * dy.as_tensor())?.backward()?;
    let grad = |v: &Var| grads.get(v).context("no grad").map(ln_host);
    Ok([ln_host(&y)?, grad(&x)??, grad(&w)??, grad(&b)??])
}

/// Runs the module on a fresh var made from `x` and checks y, dx, dw and (if any) db against
/// the reference.
fn ln_check_module(
    what: &str,
    ln: &LayerNorm,
    w: &Var,
    b: Option<&Var>,
    x: &Tensor,
    dy: &Tensor,
) -> Result<()> {
    let tol = ln_tol(x.dtype());
    let xv = Var::from_tensor(x)?;
    let y = ln.forward(&xv)?;
    let [ry, rdx, rdw, rdb] = ln_reference(x, w, b.map(|b| b.as_tensor()), dy)?;
    ln_check(&format!("{what}: y"), &y, &ry, tol)?;
    let grads = (&y * dy)?.backward()?;
    let dx = grads.get(&xv).context("no grad for the input")?;
    ln_check(&format!("{what}: dx"), dx, &rdx, tol)?;
    let dw = grads.get(w).context("no grad for the weight")?;
    ln_check(&format!("{what}: dw"), dw, &rdw, tol)?;
    if let Some(b) = b {
        let db = grads.get(b).context("no grad for the bias")?;
        ln_check(&format!("{what}: db"), db, &rdb, tol)?;
    }
    Ok(())
}

fn ln_rand(rng: &mut StdRng, shape: &[usize], dtype: DType, dev: &Device) -> Result<Tensor> {
    let len = shape.iter().product();
    let v: Vec<f64> = (0..len).map(|_| rng.random_range(-1.5..1.5)).collect();
    let t = Tensor::from_vec(v, shape, &Device::Cpu)?.to_dtype(dtype)?;
    Ok(t.to_device(dev)?)
}

fn layer_norm_module_grads(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(49);
    let (b_size, seq_len, n) = (2, 3, 64);
    for dtype in [DType::F32, DType::BF16] {
        let x = (ln_rand(&mut rng, &[b_size, seq_len, n], dtype, dev)? + 0.5)?;
        let dy = ln_rand(&mut rng, &[b_size, seq_len, n], dtype, dev)?;
        let w = ln_rand(&mut rng, &[n], dtype, dev)?;
        let b = ln_rand(&mut rng, &[n], dtype, dev)?;

        // Built from a VarBuilder, with and without bias (affine: false).
        for affine in [true, false] {
            let mut varmap = VarMap::new();
            let vb = VarBuilder::from_varmap(&varmap, dtype, dev);
            let cfg = LayerNormConfig {
                eps: LN_EPS,
                affine,
                ..Default::default()
            };
            let ln = candle_nn::layer_norm(n, cfg, vb.pp("ln"))?;
            assert_eq!(ln.bias().is_some(), affine);
            varmap.set_one("ln.weight", &w)?;
            if affine {
                varmap.set_one("ln.bias", &b)?;
            }
            let vars = varmap.data().lock().unwrap().clone();
            let wv = vars.get("ln.weight").context("no weight")?;
            let bv = vars.get("ln.bias");
            let what = format!("varbuilder affine={affine} {dtype:?}");
            ln_check_module(&what, &ln, wv, bv, &x, &dy)?;
        }

        // Built from vars directly.
        let (wv, bv) = (Var::from_tensor(&w)?, Var::from_tensor(&b)?);
        let ln = LayerNorm::new(wv.as_tensor().clone(), bv.as_tensor().clone(), LN_EPS);
        ln_check_module(&format!("new {dtype:?}"), &ln, &wv, Some(&bv), &x, &dy)?;
        let ln = LayerNorm::new_no_bias(wv.as_tensor().clone(), LN_EPS);
        ln_check_module(&format!("new_no_bias {dtype:?}"), &ln, &wv, None, &x, &dy)?;
    }
    Ok(())
}

/// A non-contiguous input gives the same output and gradients as its contiguous copy.
fn layer_norm_module_strided(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(50);
    let (rows, n) = (5, 64);
    for dtype in [DType::F32, DType::BF16] {
        let w = ln_rand(&mut rng, &[n], dtype, dev)?;
        let b = ln_rand(&mut rng, &[n], dtype, dev)?;
        let base = ln_rand(&mut rng, &[n, rows], dtype, dev)?;
        let dy = ln_rand(&mut rng, &[rows, n], dtype, dev)?;
        for with_bias in [true, false] {
            let mut results = vec![];
            for make_contiguous in [false, true] {
                let (basev, wv, bv) = (
                    Var::from_tensor(&base)?,
                    Var::from_tensor(&w)?,
                    Var::from_tensor(&b)?,
                );
                let ln = if with_bias {
                    LayerNorm::new(wv.as_tensor().clone(), bv.as_tensor().clone(), LN_EPS)
                } else {
                    LayerNorm::new_no_bias(wv.as_tensor().clone(), LN_EPS)
                };
                let mut xs = basev.t()?;
                assert!(!xs.is_contiguous());
                if make_contiguous {
                    xs = xs.contiguous()?;
                }
                let y = ln.forward(&xs)?;
                let grads = (&y * &dy)?.backward()?;
                let dx = grads.get(&basev).context("no grad for the input")?;
                let dw = grads.get(&wv).context("no grad for the weight")?;
                let mut res = vec![ln_host(&y)?, ln_host(dx)?, ln_host(dw)?];
                if with_bias {
                    res.push(ln_host(grads.get(&bv).context("no grad for the bias")?)?);
                }
                results.push(res);
            }
            for (i, got) in results[0].iter().enumerate() {
                let got = Tensor::new(got.as_slice(), &Device::Cpu)?;
                let what = format!("output/grad {i} bias={with_bias} {dtype:?}");
                ln_check(&what, &got, &results[1][i], ln_tol(dtype))?;
            }
        }
    }
    Ok(())
}

/// Weight only (no bias), compared with hand-computed values: w * (x - mean) / std with w = 3.
#[test]
fn layer_norm_no_bias_values() -> Result<()> {
    let device = &Device::Cpu;
    let w = Var::new(&[3f32, 3., 3.], device)?;
    let ln = LayerNorm::new_no_bias(w.as_tensor().clone(), 1e-8);
    let inp = Tensor::new(&[[[1f32, 2., 3.], [4., 5., 6.], [9., 8., 7.]]], device)?;
    let res = ln.forward(&inp)?;
    assert_eq!(
        test_utils::to_vec3_round(&res, 4)?,
        [[
            [-3.6742, 0.0, 3.6742],
            [-3.6742, 0.0, 3.6742],
            [3.6742, 0.0, -3.6742]
        ]]
    );
    // d(sum y)/dw is the sum over rows of the normalized input.
    let grads = res.sum_all()?.backward()?;
    let dw = grads.get(&w).context("no grad for the weight")?;
    assert_eq!(test_utils::to_vec1_round(dw, 4)?, [-1.2247, 0.0, 1.2247]);
    Ok(())
}

test_device!(
    layer_norm_module_grads,
    ln_module_grads_cpu,
    ln_module_grads_gpu,
    ln_module_grads_metal
);
test_device!(
    layer_norm_module_strided,
    ln_module_strided_cpu,
    ln_module_strided_gpu,
    ln_module_strided_metal
);

/// Number of elements allocated behind the storage of `t`, more than `t` holds when `t` is a
/// view (`narrow`) of a larger buffer.
fn ln_storage_len(t: &Tensor) -> Result<usize> {
    use candle::Storage;
    let (storage, _) = t.storage_and_layout();
    let len = match (&*storage, t.dtype()) {
        (Storage::Cpu(s), DType::F16) => s.as_slice::<half::f16>()?.len(),
        (Storage::Cpu(s), DType::BF16) => s.as_slice::<half::bf16>()?.len(),
        (Storage::Cpu(s), DType::F32) => s.as_slice::<f32>()?.len(),
        (Storage::Cpu(s), DType::F64) => s.as_slice::<f64>()?.len(),
        #[cfg(feature = "cuda")]
        (Storage::Cuda(s), dtype) => match dtype {
            DType::F16 => s.as_cuda_slice::<half::f16>()?.len(),
            DType::BF16 => s.as_cuda_slice::<half::bf16>()?.len(),
            DType::F32 => s.as_cuda_slice::<f32>()?.len(),
            DType::F64 => s.as_cuda_slice::<f64>()?.len(),
            dt => anyhow::bail!("unexpected dtype {dt:?}"),
        },
        #[cfg(feature = "metal")]
        (Storage::Metal(s), dtype) => s.buffer().length() as usize / dtype.size_in_bytes(),
        #[allow(unreachable_patterns)]
        (_, dtype) => anyhow::bail!("no storage length for {dtype:?} on {:?}", t.device()),
    };
    Ok(len)
}

/// The three gradients own their memory: none is a view of a buffer shared with another, which
/// for the weight and bias would keep an activation-sized buffer alive for as long as the weight
/// gradient, and for the input would cost a copy of each parameter gradient.
fn layer_norm_grads_own_storage(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(51);
    let (rows, n) = (16, 64);
    let dtypes: &[DType] = if dev.is_metal() {
        &[DType::F32, DType::F16, DType::BF16]
    } else {
        &[DType::F32, DType::F16, DType::BF16, DType::F64]
    };
    for &dtype in dtypes {
        let xv = Var::from_tensor(&ln_rand(&mut rng, &[2, rows / 2, n], dtype, dev)?)?;
        let wv = Var::from_tensor(&ln_rand(&mut rng, &[n], dtype, dev)?)?;
        let bv = Var::from_tensor(&ln_rand(&mut rng, &[n], dtype, dev)?)?;
        let dy = ln_rand(&mut rng, &[2, rows / 2, n], dtype, dev)?;
        for (with_w, with_b) in [(true, true), (true, false), (false, true), (false, false)] {
            let w = with_w.then_some(wv.as_tensor());
            let b = with_b.then_some(bv.as_tensor());
            let y = candle_nn::ops::layer_norm_opt(&xv, w, b, LN_EPS as f32)?;
            let grads = (&y * &dy)?.backward()?;
            let mut params = vec![];
            params.extend(with_w.then_some(("weight", &wv)));
            params.extend(with_b.then_some(("bias", &bv)));
            params.push(("input", &xv));
            for (name, var) in params {
                let g = grads.get(var).context(format!("no grad for the {name}"))?;
                let storage = ln_storage_len(g)?;
                assert!(
                    g.elem_count() == var.elem_count() && storage == var.elem_count(),
                    "storage behind the {name} grad: {storage} for {} elements, {dtype:?} \
                     weight={with_w} bias={with_b}",
                    g.elem_count()
                );
            }
        }
        // The rms norm's fused backward too.
        if !dev.is_metal() {
            let y = candle_nn::ops::rms_norm(&xv, &wv, LN_EPS as f32)?;
            let grads = (&y * &dy)?.backward()?;
            for (name, var) in [("weight", &wv), ("input", &xv)] {
                let g = grads.get(var).context("no rms-norm grad")?;
                let storage = ln_storage_len(g)?;
                assert_eq!(storage, g.elem_count(), "rms-norm {name} grad, {dtype:?}");
            }
        }
    }
    Ok(())
}

test_device!(
    layer_norm_grads_own_storage,
    ln_grads_own_storage_cpu,
    ln_grads_own_storage_gpu,
    ln_grads_own_storage_metal
);
