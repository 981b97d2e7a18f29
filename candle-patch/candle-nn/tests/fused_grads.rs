// Gradients of the fused custom ops of candle-nn (rms-norm, softmax over the last dimension,
// rotary embeddings), compared with autograd through a tensor-op reference in f64 on the cpu
// and, on the cpu, with central finite differences of the fused f64 forward. Errors are
// max-abs, relative to `max(1, max |reference|)`.
#[cfg(feature = "mkl")]
extern crate intel_mkl_src;

#[cfg(feature = "accelerate")]
extern crate accelerate_src;

use candle::{test_device, Context, DType, Device, Result, Tensor, Var, D};
use rand::{rngs::StdRng, Rng, SeedableRng};

const EPS: f32 = 1e-5;

/// The dtypes to test on `dev`: Metal has no f64.
fn dtypes(dev: &Device) -> Vec<DType> {
    [DType::F32, DType::F64, DType::F16, DType::BF16]
        .into_iter()
        .filter(|&dtype| !(dev.is_metal() && dtype == DType::F64))
        .collect()
}

/// Tolerance relative to the gradient scale for reductions over `n` elements.
fn tol(dtype: DType, n: usize) -> f64 {
    let acc = 2.0 * f32::EPSILON as f64 * (n as f64).sqrt();
    match dtype {
        DType::F64 => 1e-10,
        DType::F32 => 1e-5 + acc,
        // The final rounding to the dtype (half an ulp) plus one intermediate one; the softmax
        // backward also gets the output y rounded to the dtype.
        DType::F16 => 2f64.powi(-10) + acc,
        DType::BF16 => 2f64.powi(-7) + acc,
        dtype => panic!("unexpected dtype {dtype:?}"),
    }
}

fn rand_vec(rng: &mut StdRng, len: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..len).map(|_| rng.random_range(lo..hi)).collect()
}

fn host(t: &Tensor) -> Result<Vec<f64>> {
    t.to_device(&Device::Cpu)?
        .to_dtype(DType::F64)?
        .flatten_all()?
        .to_vec1::<f64>()
}

/// The values rounded to `dtype` as a tensor on `dev`, and the rounded values in f64 on the cpu.
fn tensor<S: Into<candle::Shape>>(
    v: &[f64],
    s: S,
    dtype: DType,
    dev: &Device,
) -> Result<(Tensor, Tensor)> {
    let t = Tensor::from_vec(v.to_vec(), s, &Device::Cpu)?.to_dtype(dtype)?;
    let exact = t.to_dtype(DType::F64)?;
    Ok((t.to_device(dev)?, exact))
}

fn check(what: &str, got: &Tensor, want: &Tensor, tol: f64) -> Result<()> {
    let (got, want) = (host(got)?, host(want)?);
    assert_eq!(got.len(), want.len(), "{what}");
    let scale = want.iter().fold(1f64, |m, v| m.max(v.abs()));
    let err = got.iter().zip(&want).map(|(g, w)| (g - w).abs());
    let err = err.fold(0f64, |m, d| if d.is_nan() || d > m { d } else { m });
    assert!(
        err <= tol * scale,
        "{what}: max abs err {err:e} > {tol:e} * {scale:e}"
    );
    Ok(())
}

/// Gradients of `sum(f(vars) * dy)` for each of `vars`, through the upstream gradient `dy` seen
/// transposed: the op's backward gets a non-contiguous gradient.
fn grads_of(
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
    vars: &[Var],
    dy: &Tensor,
) -> Result<Vec<Tensor>> {
    let inputs: Vec<Tensor> = vars.iter().map(|v| v.as_tensor().clone()).collect();
    let y = f(&inputs)?;
    let last = y.rank() - 1;
    let loss = (y.transpose(last - 1, last)? * dy.transpose(last - 1, last)?)?;
    let grads = loss.backward()?;
    vars.iter()
        .enumerate()
        .map(|(i, v)| {
            grads
                .get(v)
                .with_context(|| format!("no grad for input {i}"))
                .cloned()
        })
        .collect()
}

/// Central finite differences of `sum(f(x) * dy)` with respect to each element of `v`.
fn finite_diff(v: &[f64], loss: impl Fn(&[f64]) -> Result<f64>) -> Result<Vec<f64>> {
    let h = 1e-5;
    let mut v = v.to_vec();
    (0..v.len())
        .map(|i| {
            let v0 = v[i];
            v[i] = v0 + h;
            let plus = loss(&v)?;
            v[i] = v0 - h;
            let minus = loss(&v)?;
            v[i] = v0;
            Ok((plus - minus) / (2. * h))
        })
        .collect()
}

// ---------------------------------------------------------------------------------- rms_norm

fn rms_norm_grad(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(60);
    for n in [1, 3, 17, 64, 1000, 1200, 2500, 4097, 10000, 40001, 65536] {
        let rows = if n > 1000 { 3 } else { 6 };
        let x = rand_vec(&mut rng, rows * n, -2., 2.);
        let alpha = rand_vec(&mut rng, n, -1.5, 1.5);
        let dy = rand_vec(&mut rng, rows * n, -1., 1.);
        for dtype in dtypes(dev) {
            let (xt, xr) = tensor(&x, (rows, n), dtype, dev)?;
            let (at, ar) = tensor(&alpha, n, dtype, dev)?;
            let (dyt, dyr) = tensor(&dy, (rows, n), dtype, dev)?;
            let rms = |t: &[Tensor]| candle_nn::ops::rms_norm(&t[0], &t[1], EPS);
            let got = grads_of(rms, &[Var::from_tensor(&xt)?, Var::from_tensor(&at)?], &dyt)?;
            let slow = |t: &[Tensor]| candle_nn::ops::rms_norm_slow(&t[0], &t[1], EPS);
            let want = grads_of(
                slow,
                &[Var::from_tensor(&xr)?, Var::from_tensor(&ar)?],
                &dyr,
            )?;
            let tol = tol(dtype, n);
            check(&format!("dx {dtype:?} n={n}"), &got[0], &want[0], tol)?;
            check(&format!("dalpha {dtype:?} n={n}"), &got[1], &want[1], tol)?;
        }
    }
    Ok(())
}

/// The fused forward against `rms_norm_slow` in f64 at odd widths, in the range of every
/// forward tier (and past the narrow ones): nine rows, so that 16-bit rows start at every offset
/// in a 16-byte word.
fn rms_norm_fwd_odd(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(65);
    let rows = 9;
    for n in [3, 17, 201, 1001, 3001, 7777, 15001, 30001, 65535] {
        let x = rand_vec(&mut rng, rows * n, -2., 2.);
        let alpha = rand_vec(&mut rng, n, -1.5, 1.5);
        for dtype in dtypes(dev) {
            let (xt, xr) = tensor(&x, (rows, n), dtype, dev)?;
            let (at, ar) = tensor(&alpha, n, dtype, dev)?;
            let got = candle_nn::ops::rms_norm(&xt, &at, EPS)?;
            let want = candle_nn::ops::rms_norm_slow(&xr, &ar, EPS)?;
            check(&format!("y {dtype:?} n={n}"), &got, &want, tol(dtype, n))?;
        }
    }
    Ok(())
}

/// Finite differences of the fused f64 forward against its backward (cpu only: f64 kernels
/// elsewhere may compute in f32).
fn rms_norm_grad_fd(dev: &Device) -> Result<()> {
    if !dev.is_cpu() {
        return Ok(());
    }
    let mut rng = StdRng::seed_from_u64(61);
    let rows = 3;
    for n in [1, 3, 17] {
        let x = rand_vec(&mut rng, rows * n, -2., 2.);
        let alpha = rand_vec(&mut rng, n, -1.5, 1.5);
        let dy = Tensor::from_vec(rand_vec(&mut rng, rows * n, -1., 1.), (rows, n), dev)?;
        let loss = |x: &[f64], alpha: &[f64]| -> Result<f64> {
            let x = Tensor::from_vec(x.to_vec(), (rows, n), dev)?;
            let alpha = Tensor::from_vec(alpha.to_vec(), n, dev)?;
            let y = candle_nn::ops::rms_norm(&x, &alpha, EPS)?;
            (y * &dy)?.sum_all()?.to_scalar::<f64>()
        };
        let vars = [
            Var::from_vec(x.clone(), (rows, n), dev)?,
            Var::from_vec(alpha.clone(), n, dev)?,
        ];
        let rms = |t: &[Tensor]| candle_nn::ops::rms_norm(&t[0], &t[1], EPS);
        let got = grads_of(rms, &vars, &dy)?;
        let fd_x = finite_diff(&x, |x| loss(x, &alpha))?;
        let fd_alpha = finite_diff(&alpha, |a| loss(&x, a))?;
        // h = 1e-5: truncation and rounding errors are ~1e-10, a wrong term is off by O(1).
        check(
            &format!("fd dx n={n}"),
            &got[0],
            &Tensor::new(fd_x, dev)?,
            1e-7,
        )?;
        let fd_alpha = Tensor::new(fd_alpha, dev)?;
        check(&format!("fd dalpha n={n}"), &got[1], &fd_alpha, 1e-7)?;
    }
    Ok(())
}

/// The `RmsNorm` module trains: the input and the weight get the reference gradients, for a
/// contiguous input (the fused op) and a transposed one (the tensor-op path).
fn rms_norm_module(dev: &Device) -> Result<()> {
    use candle::Module;
    let mut rng = StdRng::seed_from_u64(62);
    let (rows, n) = (5, 64);
    for dtype in [DType::F32, DType::BF16] {
        let (w, wr) = tensor(&rand_vec(&mut rng, n, 0.5, 1.5), n, dtype, dev)?;
        let (x, xr) = tensor(
            &rand_vec(&mut rng, rows * n, -2., 2.),
            (n, rows),
            dtype,
            dev,
        )?;
        let (dy, dyr) = tensor(
            &rand_vec(&mut rng, rows * n, -1., 1.),
            (n, rows),
            dtype,
            dev,
        )?;
        for transposed in [false, true] {
            let (xv, wv) = (Var::from_tensor(&x)?, Var::from_tensor(&w)?);
            let module = candle_nn::RmsNorm::new(wv.as_tensor().clone(), EPS as f64);
            let xs = match transposed {
                true => xv.t()?,
                false => xv.t()?.contiguous()?,
            };
            let y = module.forward(&xs)?;
            let grads = (y * dy.t()?)?.backward()?;
            let dx = grads.get(&xv).context("no grad for the input")?;
            let dw = grads.get(&wv).context("no grad for the weight")?;
            let slow = |t: &[Tensor]| candle_nn::ops::rms_norm_slow(&t[0].t()?, &t[1], EPS);
            let want = grads_of(
                slow,
                &[Var::from_tensor(&xr)?, Var::from_tensor(&wr)?],
                &dyr.t()?,
            )?;
            let what = format!("{dtype:?} transposed={transposed}");
            check(&format!("dx {what}"), dx, &want[0], tol(dtype, n))?;
            check(&format!("dw {what}"), dw, &want[1], tol(dtype, n))?;
        }
    }
    Ok(())
}

/// Two identical backward passes give bit-identical gradients.
fn rms_norm_deterministic(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(63);
    let (rows, n) = (1031, 1024);
    for dtype in dtypes(dev) {
        let (x, _) = tensor(
            &rand_vec(&mut rng, rows * n, -2., 2.),
            (rows, n),
            dtype,
            dev,
        )?;
        let (alpha, _) = tensor(&rand_vec(&mut rng, n, -1.5, 1.5), n, dtype, dev)?;
        let (dy, _) = tensor(
            &rand_vec(&mut rng, rows * n, -1., 1.),
            (rows, n),
            dtype,
            dev,
        )?;
        let run = || -> Result<Vec<Vec<u64>>> {
            let vars = [Var::from_tensor(&x)?, Var::from_tensor(&alpha)?];
            let rms = |t: &[Tensor]| candle_nn::ops::rms_norm(&t[0], &t[1], EPS);
            let grads = grads_of(rms, &vars, &dy)?;
            grads
                .iter()
                .map(|g| Ok(host(g)?.iter().map(|v| v.to_bits()).collect()))
                .collect()
        };
        assert!(run()? == run()?, "{dtype:?}: gradients differ between runs");
    }
    Ok(())
}

test_device!(rms_norm_grad, rms_grad_cpu, rms_grad_gpu, rms_grad_metal);
test_device!(
    rms_norm_fwd_odd,
    rms_fwd_odd_cpu,
    rms_fwd_odd_gpu,
    rms_fwd_odd_metal
);
test_device!(
    rms_norm_grad_fd,
    rms_grad_fd_cpu,
    rms_grad_fd_gpu,
    rms_grad_fd_metal
);
test_device!(
    rms_norm_module,
    rms_module_cpu,
    rms_module_gpu,
    rms_module_metal
);
test_device!(
    rms_norm_deterministic,
    rms_det_cpu,
    rms_det_gpu,
    rms_det_metal
);

// -------------------------------------------------------------------------- softmax_last_dim

/// The fused forward against `ops::softmax` in f64, on rows of every kernel tier (and the
/// streaming kernel beyond the widest), with large values and masked (-inf) elements.
fn softmax_last_dim_fwd(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(67);
    // On a GPU, more rows than a grid of resident blocks at the widths of the prefetching tiers.
    let many = if dev.is_cpu() { 3 } else { 1200 };
    for (rows, n) in [
        (5, 1),
        (7, 3),
        (9, 17),
        (33, 64),
        (5, 1000),
        (3, 4097),
        (many, 5000),
        (many, 10000),
        (2, 70001),
        // On a GPU, more rows than the streaming kernel's grid, which L2 caps; odd, so that
        // rows start at every offset in a 16-byte word.
        (if dev.is_cpu() { 2 } else { 300 }, 40001),
    ] {
        let mut x = rand_vec(&mut rng, rows * n, -4., 4.);
        // Row 0 far from zero (only stable with the max subtracted), row 1 causally masked.
        x[..n].iter_mut().for_each(|v| *v = 1e4 + 10. * *v);
        x[n + 1..2 * n]
            .iter_mut()
            .for_each(|v| *v = f64::NEG_INFINITY);
        for dtype in dtypes(dev) {
            let (xt, xr) = tensor(&x, (rows, n), dtype, dev)?;
            let got = candle_nn::ops::softmax_last_dim(&xt)?;
            let want = candle_nn::ops::softmax(&xr, D::Minus1)?;
            check(&format!("y {dtype:?} n={n}"), &got, &want, tol(dtype, n))?;
        }
    }
    Ok(())
}

test_device!(
    softmax_last_dim_fwd,
    softmax_fwd_cpu,
    softmax_fwd_gpu,
    softmax_fwd_metal
);

fn softmax_last_dim_grad(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(64);
    for n in [
        1, 3, 17, 64, 1000, 1200, 2500, 4097, 5000, 10000, 40001, 70001,
    ] {
        // Even: two batches of rows / 2. On a GPU, more rows than a grid of resident blocks at
        // the widths of the prefetching tiers, and than the streaming kernel's grid (L2 caps it;
        // an odd width: rows at every offset in a 16-byte word).
        let rows = match n {
            5000 | 10000 if !dev.is_cpu() => 1200,
            40001 if !dev.is_cpu() => 300,
            n if n > 1000 => 2,
            _ => 6,
        };
        let x = rand_vec(&mut rng, rows * n, -4., 4.);
        let dy = rand_vec(&mut rng, rows * n, -1., 1.);
        for dtype in dtypes(dev) {
            let (xt, xr) = tensor(&x, (2, rows / 2, n), dtype, dev)?;
            let (dyt, dyr) = tensor(&dy, (2, rows / 2, n), dtype, dev)?;
            let fused = |t: &[Tensor]| candle_nn::ops::softmax_last_dim(&t[0]);
            let got = grads_of(fused, &[Var::from_tensor(&xt)?], &dyt)?;
            let slow = |t: &[Tensor]| candle_nn::ops::softmax(&t[0], D::Minus1);
            let want = grads_of(slow, &[Var::from_tensor(&xr)?], &dyr)?;
            check(
                &format!("dx {dtype:?} n={n}"),
                &got[0],
                &want[0],
                tol(dtype, n),
            )?;
        }
    }
    Ok(())
}

fn softmax_last_dim_grad_fd(dev: &Device) -> Result<()> {
    if !dev.is_cpu() {
        return Ok(());
    }
    let mut rng = StdRng::seed_from_u64(65);
    let rows = 3;
    for n in [1, 3, 17] {
        let x = rand_vec(&mut rng, rows * n, -4., 4.);
        let dy = Tensor::from_vec(rand_vec(&mut rng, rows * n, -1., 1.), (rows, n), dev)?;
        let loss = |x: &[f64]| -> Result<f64> {
            let x = Tensor::from_vec(x.to_vec(), (rows, n), dev)?;
            let y = candle_nn::ops::softmax_last_dim(&x)?;
            (y * &dy)?.sum_all()?.to_scalar::<f64>()
        };
        let fused = |t: &[Tensor]| candle_nn::ops::softmax_last_dim(&t[0]);
        let got = grads_of(fused, &[Var::from_vec(x.clone(), (rows, n), dev)?], &dy)?;
        let fd = Tensor::new(finite_diff(&x, loss)?, dev)?;
        check(&format!("fd dx n={n}"), &got[0], &fd, 1e-7)?;
    }
    Ok(())
}

test_device!(
    softmax_last_dim_grad,
    softmax_grad_cpu,
    softmax_grad_gpu,
    softmax_grad_metal
);
test_device!(
    softmax_last_dim_grad_fd,
    softmax_grad_fd_cpu,
    softmax_grad_fd_gpu,
    softmax_grad_fd_metal
);

// ------------------------------------------------------------------------------------- rope

#[derive(Debug, Clone, Copy)]
enum Rope {
    /// `rope_i`: pairs interleaved in the last dim of (b, h, t, d).
    Interleaved,
    /// `rope`: pairs are the two halves of the last dim of (b, h, t, d).
    Halves,
    /// `rope_thd`: the two halves, (b, t, h, d).
    Thd,
}

impl Rope {
    fn fused(self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        match self {
            Rope::Interleaved => candle_nn::rotary_emb::rope_i(x, cos, sin),
            Rope::Halves => candle_nn::rotary_emb::rope(x, cos, sin),
            Rope::Thd => candle_nn::rotary_emb::rope_thd(x, cos, sin),
        }
    }

    /// Tensor-op rope for 2D (t, d/2) or batched 3D (b, t, d/2) cos/sin, possibly longer than
    /// the input's sequence.
    fn reference(self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        let x = match self {
            Rope::Thd => x.transpose(1, 2)?,
            _ => x.clone(),
        };
        let (b, h, t, d) = x.dims4()?;
        let per_position = |cs: &Tensor| -> Result<Tensor> {
            match cs.rank() {
                2 => cs.narrow(0, 0, t)?.reshape((1, 1, t, d / 2)),
                _ => cs.narrow(1, 0, t)?.unsqueeze(1),
            }
        };
        let (cos, sin) = (per_position(cos)?, per_position(sin)?);
        let y = match self {
            Rope::Interleaved => {
                let x = x.reshape((b, h, t, d / 2, 2))?;
                let (x0, x1) = (x.narrow(4, 0, 1)?, x.narrow(4, 1, 1)?);
                let (cos, sin) = (cos.unsqueeze(4)?, sin.unsqueeze(4)?);
                let y0 = (x0.broadcast_mul(&cos)? - x1.broadcast_mul(&sin)?)?;
                let y1 = (x0.broadcast_mul(&sin)? + x1.broadcast_mul(&cos)?)?;
                Tensor::cat(&[y0, y1], 4)?.reshape((b, h, t, d))?
            }
            Rope::Halves | Rope::Thd => {
                let (x0, x1) = (x.narrow(3, 0, d / 2)?, x.narrow(3, d / 2, d / 2)?);
                let y0 = (x0.broadcast_mul(&cos)? - x1.broadcast_mul(&sin)?)?;
                let y1 = (x0.broadcast_mul(&sin)? + x1.broadcast_mul(&cos)?)?;
                Tensor::cat(&[y0, y1], 3)?
            }
        };
        match self {
            Rope::Thd => y.transpose(1, 2),
            _ => Ok(y),
        }
    }
}

/// dx for every layout, dtype and cos/sin shape; dcos and dsin when cos and sin are variables,
/// none when they are constants.
fn rope_grad(dev: &Device) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(66);
    let (b, h, t, d) = (2, 3, 5, 8);
    for layout in [Rope::Interleaved, Rope::Halves, Rope::Thd] {
        let dims = match layout {
            Rope::Thd => (b, t, h, d),
            _ => (b, h, t, d),
        };
        // cos/sin: longer than the sequence (2D), or batched (3D).
        for cs_dims in [vec![t + 2, d / 2], vec![b, t, d / 2]] {
            let cs_len = cs_dims.iter().product();
            let theta = rand_vec(&mut rng, cs_len, -3., 3.);
            let cos: Vec<f64> = theta.iter().map(|v| v.cos()).collect();
            let sin: Vec<f64> = theta.iter().map(|v| v.sin()).collect();
            let x = rand_vec(&mut rng, b * h * t * d, -2., 2.);
            let dy = rand_vec(&mut rng, b * h * t * d, -1., 1.);
            for dtype in dtypes(dev) {
                let (xt, xr) = tensor(&x, dims, dtype, dev)?;
                let (ct, cr) = tensor(&cos, cs_dims.as_slice(), dtype, dev)?;
                let (st, sr) = tensor(&sin, cs_dims.as_slice(), dtype, dev)?;
                let (dyt, dyr) = tensor(&dy, dims, dtype, dev)?;
                let what = format!("{layout:?} {dtype:?} cos {cs_dims:?}");
                let tol = tol(dtype, b * h);

                let fused = |t: &[Tensor]| layout.fused(&t[0], &t[1], &t[2]);
                let vars = [&xt, &ct, &st].map(|t| Var::from_tensor(t).unwrap());
                let got = grads_of(fused, &vars, &dyt)?;
                let reference = |t: &[Tensor]| layout.reference(&t[0], &t[1], &t[2]);
                let vars = [&xr, &cr, &sr].map(|t| Var::from_tensor(t).unwrap());
                let want = grads_of(reference, &vars, &dyr)?;
                check(&format!("dx {what}"), &got[0], &want[0], tol)?;
                check(&format!("dcos {what}"), &got[1], &want[1], tol)?;
                check(&format!("dsin {what}"), &got[2], &want[2], tol)?;

                // Constant cos/sin: the input still gets its gradient, cos/sin none.
                let xv = Var::from_tensor(&xt)?;
                let y = layout.fused(&xv, &ct, &st)?;
                let grads = (y * &dyt)?.backward()?;
                let dx = grads.get(&xv).context("no grad for x")?;
                check(&format!("dx {what} constant cos/sin"), dx, &want[0], tol)?;
                assert!(grads.get(&ct).is_none() && grads.get(&st).is_none());
            }
        }
    }
    Ok(())
}

fn rope_grad_fd(dev: &Device) -> Result<()> {
    if !dev.is_cpu() {
        return Ok(());
    }
    let mut rng = StdRng::seed_from_u64(67);
    let (b, h, t, d) = (1, 2, 3, 4);
    for layout in [Rope::Interleaved, Rope::Halves, Rope::Thd] {
        let dims = match layout {
            Rope::Thd => (b, t, h, d),
            _ => (b, h, t, d),
        };
        let x = rand_vec(&mut rng, b * h * t * d, -2., 2.);
        let cos = rand_vec(&mut rng, t * d / 2, -1., 1.);
        let sin = rand_vec(&mut rng, t * d / 2, -1., 1.);
        let dy = Tensor::from_vec(rand_vec(&mut rng, b * h * t * d, -1., 1.), dims, dev)?;
        let loss = |x: &[f64], cos: &[f64], sin: &[f64]| -> Result<f64> {
            let x = Tensor::from_vec(x.to_vec(), dims, dev)?;
            let cos = Tensor::from_vec(cos.to_vec(), (t, d / 2), dev)?;
            let sin = Tensor::from_vec(sin.to_vec(), (t, d / 2), dev)?;
            (layout.fused(&x, &cos, &sin)? * &dy)?
                .sum_all()?
                .to_scalar::<f64>()
        };
        let vars = [
            Var::from_vec(x.clone(), dims, dev)?,
            Var::from_vec(cos.clone(), (t, d / 2), dev)?,
            Var::from_vec(sin.clone(), (t, d / 2), dev)?,
        ];
        let fused = |v: &[Tensor]| layout.fused(&v[0], &v[1], &v[2]);
        let got = grads_of(fused, &vars, &dy)?;
        let fds = [
            finite_diff(&x, |x| loss(x, &cos, &sin))?,
            finite_diff(&cos, |c| loss(&x, c, &sin))?,
            finite_diff(&sin, |s| loss(&x, &cos, s))?,
        ];
        for ((name, got), fd) in ["dx", "dcos", "dsin"].iter().zip(&got).zip(fds) {
            let fd = Tensor::new(fd, dev)?;
            check(
                &format!("fd {name} {layout:?}"),
                &got.flatten_all()?,
                &fd,
                1e-7,
            )?;
        }
    }
    Ok(())
}

test_device!(rope_grad, rope_grad_cpu, rope_grad_gpu, rope_grad_metal);
test_device!(
    rope_grad_fd,
    rope_grad_fd_cpu,
    rope_grad_fd_gpu,
    rope_grad_fd_metal
);
