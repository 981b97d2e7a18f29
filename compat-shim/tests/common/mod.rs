//! Shared helpers: devices, deterministic data, an independent f64 reference, tolerances.
#![allow(dead_code)]

use candle_core::{DType, Device, Result, Tensor, Var};
use candle_layer_norm_compat::{ops, Backend};

/// CPU, plus CUDA device 0 when built with `--features cuda` and one is present.
pub fn devices() -> Vec<Device> {
    #[allow(unused_mut)]
    let mut v = vec![Device::Cpu];
    #[cfg(feature = "cuda")]
    {
        if candle_core::utils::cuda_is_available() {
            match Device::new_cuda(0) {
                Ok(d) => v.push(d),
                Err(e) => eprintln!("CUDA device 0 unavailable, CUDA cases skipped: {e}"),
            }
        } else {
            eprintln!("no CUDA device, CUDA cases skipped");
        }
    }
    v
}

/// SplitMix64 with Box-Muller normals: deterministic, no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    pub fn normals(&mut self, n: usize, mean: f64, std: f64) -> Vec<f64> {
        (0..n).map(|_| mean + std * self.normal()).collect()
    }
}

/// Tensor of `dtype` on `dev` from f64 data (rounded to `dtype`).
pub fn tensor(data: &[f64], shape: &[usize], dtype: DType, dev: &Device) -> Tensor {
    Tensor::from_slice(data, shape, &Device::Cpu)
        .and_then(|t| t.to_dtype(dtype))
        .and_then(|t| t.to_device(dev))
        .expect("tensor")
}

/// The values of `t` as f64 (exact for every float dtype), row-major.
pub fn values(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64)
        .and_then(|t| t.flatten_all())
        .and_then(|t| t.to_vec1::<f64>())
        .expect("values")
}

/// Machine epsilon of a float dtype.
pub fn dtype_eps(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::EPSILON,
        DType::F32 => f32::EPSILON as f64,
        DType::F16 => 9.765_625e-4, // 2^-10
        DType::BF16 => 7.812_5e-3,  // 2^-7
        dt => panic!("not a float dtype {dt:?}"),
    }
}

/// Allowed error, relative to max(1, max |reference|), for results in `dtype`.
///
/// * f16/bf16: the result is computed in f32 from the same (already rounded) inputs and rounded
///   once to the dtype: at most half an ulp, i.e. eps/2 relative; 2·eps leaves 4x margin for the
///   f32 internals and for two implementations rounding on opposite sides of a tie.
/// * f32: sums over up to a few thousand elements (mean, variance, dγ/dβ over rows) lose
///   O(sqrt(n))–O(n) ulps; 256·eps ≈ 3e-5 covers n ≤ 4096 with pairwise or sequential sums.
/// * f64: same argument, 256·eps ≈ 6e-14.
pub fn tol(dtype: DType) -> f64 {
    match dtype {
        DType::F16 | DType::BF16 => 2.0 * dtype_eps(dtype),
        _ => 256.0 * dtype_eps(dtype),
    }
}

/// max |a - b| / max(1, max |b|), with a length check and NaN detection.
pub fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "length mismatch");
    let scale = b.iter().fold(1f64, |m, v| m.max(v.abs()));
    a.iter().zip(b).fold(0f64, |m, (x, y)| {
        let d = (x - y).abs();
        if d.is_nan() {
            f64::INFINITY
        } else {
            m.max(d)
        }
    }) / scale
}

pub fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    let e = rel_err(got, want);
    assert!(
        e <= tol,
        "{what}: relative error {e:.3e} > tolerance {tol:.3e}"
    );
}

/// Forward output and gradients of `sum(y * dy)`, all as f64 vectors.
#[derive(Debug, Clone)]
pub struct Outputs {
    pub y: Vec<f64>,
    pub dx: Vec<f64>,
    pub dw: Option<Vec<f64>>,
    pub db: Option<Vec<f64>>,
}

/// One layer norm problem, with data already rounded to its dtype.
pub struct Case {
    pub x_shape: Vec<usize>,
    pub ns: Vec<usize>,
    pub x: Vec<f64>,
    pub w: Option<Vec<f64>>,
    pub b: Option<Vec<f64>>,
    pub dy: Vec<f64>,
    pub eps: f64,
    pub dtype: DType,
}

impl Case {
    /// Random case: x ~ N(mean, std), w ~ N(1, 0.5), b ~ N(0, 0.5), dy ~ N(0, 1), rounded to `dtype`.
    #[allow(clippy::too_many_arguments)]
    pub fn random(
        seed: u64,
        x_shape: &[usize],
        k: usize,
        affine: (bool, bool),
        dtype: DType,
        mean: f64,
        std: f64,
    ) -> Self {
        let mut rng = Rng::new(seed);
        let ns = x_shape[x_shape.len() - k..].to_vec();
        let numel: usize = x_shape.iter().product();
        let n: usize = ns.iter().product();
        let round = |v: Vec<f64>, shape: &[usize]| values(&tensor(&v, shape, dtype, &Device::Cpu));
        let x = round(rng.normals(numel, mean, std), x_shape);
        let w = affine.0.then(|| round(rng.normals(n, 1.0, 0.5), &ns));
        let b = affine.1.then(|| round(rng.normals(n, 0.0, 0.5), &ns));
        let dy = round(rng.normals(numel, 0.0, 1.0), x_shape);
        Self {
            x_shape: x_shape.to_vec(),
            ns,
            x,
            w,
            b,
            dy,
            eps: EPS,
            dtype,
        }
    }

    /// Tolerance for this case: [`tol`] of the dtype, plus the conditioning of layer norm.
    ///
    /// Rounding `x` (or the mean) by a relative eps moves `(x - mean)/std` by `eps·|x|/std`, so
    /// any implementation (the reference included) carries an error of about
    /// `κ·eps_acc` with `κ = max over rows of max|x| / std` and `eps_acc` the epsilon of the
    /// accumulation type (f32 for f16/bf16/f32, f64 for f64); 64 of those on top of [`tol`].
    pub fn tol(&self) -> f64 {
        let n: usize = self.ns.iter().product();
        let kappa = self
            .x
            .chunks(n)
            .map(|r| {
                let mean = r.iter().sum::<f64>() / n as f64;
                let var = r.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
                let max = r.iter().fold(0f64, |m, v| m.max(v.abs()));
                max / (var + self.eps).sqrt()
            })
            .fold(1f64, f64::max);
        let acc = if self.dtype == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        tol(self.dtype) + 64.0 * dtype_eps(acc) * kappa
    }

    /// Runs the shim with `backend` on `dev`: forward, then `(y * dy).backward()`.
    pub fn run(&self, backend: Backend, dev: &Device) -> Result<Outputs> {
        let x = Var::from_tensor(&tensor(&self.x, &self.x_shape, self.dtype, dev))?;
        let w = match &self.w {
            Some(w) => Some(Var::from_tensor(&tensor(w, &self.ns, self.dtype, dev))?),
            None => None,
        };
        let b = match &self.b {
            Some(b) => Some(Var::from_tensor(&tensor(b, &self.ns, self.dtype, dev))?),
            None => None,
        };
        let dy = tensor(&self.dy, &self.x_shape, self.dtype, dev);
        let y = ops::layer_norm_with_backend(
            backend,
            x.as_tensor(),
            &self.ns,
            w.as_ref().map(|v| v.as_tensor()),
            b.as_ref().map(|v| v.as_tensor()),
            self.eps,
        )?;
        assert_eq!(y.dims(), self.x_shape.as_slice());
        assert_eq!(y.dtype(), self.dtype);
        let grads = (&y * &dy)?.backward()?;
        let grad = |v: &Var| -> Vec<f64> {
            let g = grads.get(v.as_tensor()).expect("missing gradient");
            assert_eq!(g.dims(), v.dims());
            assert_eq!(g.dtype(), self.dtype);
            values(g)
        };
        Ok(Outputs {
            y: values(&y),
            dx: grad(&x),
            dw: w.as_ref().map(grad),
            db: b.as_ref().map(grad),
        })
    }

    /// Independent reference: plain Rust in f64, two-pass statistics, analytic backward.
    pub fn reference(&self) -> Outputs {
        let n: usize = self.ns.iter().product();
        let rows = self.x.len() / n;
        let mut y = vec![0.0; self.x.len()];
        let mut dx = vec![0.0; self.x.len()];
        let mut dw = vec![0.0; n];
        let mut db = vec![0.0; n];
        for r in 0..rows {
            let xr = &self.x[r * n..(r + 1) * n];
            let gr = &self.dy[r * n..(r + 1) * n];
            let mean = xr.iter().sum::<f64>() / n as f64;
            let var = xr.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
            let rstd = 1.0 / (var + self.eps).sqrt();
            let xhat: Vec<f64> = xr.iter().map(|v| (v - mean) * rstd).collect();
            let wv = |j: usize| self.w.as_ref().map_or(1.0, |w| w[j]);
            let g: Vec<f64> = (0..n).map(|j| gr[j] * wv(j)).collect();
            let mean_g = g.iter().sum::<f64>() / n as f64;
            let mean_gx = (0..n).map(|j| g[j] * xhat[j]).sum::<f64>() / n as f64;
            for j in 0..n {
                y[r * n + j] = xhat[j] * wv(j) + self.b.as_ref().map_or(0.0, |b| b[j]);
                dx[r * n + j] = rstd * (g[j] - mean_g - xhat[j] * mean_gx);
                dw[j] += gr[j] * xhat[j];
                db[j] += gr[j];
            }
        }
        Outputs {
            y,
            dx,
            dw: self.w.as_ref().map(|_| dw),
            db: self.b.as_ref().map(|_| db),
        }
    }
}

/// Asserts every output of `got` is within `tol` of `want`.
pub fn assert_outputs(what: &str, got: &Outputs, want: &Outputs, tol: f64) {
    assert_close(&format!("{what}: y"), &got.y, &want.y, tol);
    assert_close(&format!("{what}: dx"), &got.dx, &want.dx, tol);
    match (&got.dw, &want.dw) {
        (Some(g), Some(w)) => assert_close(&format!("{what}: dw"), g, w, tol),
        (None, None) => {}
        _ => panic!("{what}: dw presence differs"),
    }
    match (&got.db, &want.db) {
        (Some(g), Some(w)) => assert_close(&format!("{what}: db"), g, w, tol),
        (None, None) => {}
        _ => panic!("{what}: db presence differs"),
    }
}

/// 2^-17 ≈ 7.6e-6: exactly representable in f32, so the fused kernel (whose `eps` is an f32)
/// and the composite/reference (f64 `eps`) use the same value. With e.g. 1e-5 the f64 kernel
/// differs by |Δeps|/(2·(var+eps)) ≈ 1e-12 relative on low-variance rows, which is the API's
/// f32 `eps`, not an error of either implementation.
pub const EPS: f64 = 1.0 / 131_072.0;

pub const DTYPES: [DType; 4] = [DType::F32, DType::F64, DType::F16, DType::BF16];
pub const AFFINE: [(bool, bool); 4] = [(true, true), (true, false), (false, true), (false, false)];

/// (x shape, number of normalized trailing dims): hidden 1, 3, 17, 64, 1000 and multi-dim.
pub fn shapes() -> Vec<(Vec<usize>, usize)> {
    vec![
        (vec![4, 1], 1),
        (vec![5, 3], 1),
        (vec![2, 3, 17], 1),
        (vec![16, 64], 1),
        (vec![3, 1000], 1),
        (vec![2, 3, 4, 5], 2),
        (vec![3, 2, 8], 2),
        (vec![6, 7], 2),
        (vec![2, 2, 3, 4], 3),
    ]
}

/// Large-mean rows (mean 1e4, std 1e-2), f32, hidden 64 / 1000 / 4096: max abs error of y
/// ≤ 1e-2 against the f64 reference from the same f32 inputs; dx, dw within 1e-2 relative.
pub fn check_large_mean_rows(backend: Backend, dev: &Device) {
    for (seed, hidden) in [(1u64, 64usize), (2, 1000), (3, 4096)] {
        let case = Case::random(seed, &[8, hidden], 1, (true, true), DType::F32, 1e4, 1e-2);
        let want = case.reference();
        let got = case.run(backend, dev).unwrap();
        let max_abs = got
            .y
            .iter()
            .zip(&want.y)
            .map(|(a, b)| (a - b).abs())
            .fold(0f64, f64::max);
        assert!(
            max_abs <= 1e-2,
            "{backend:?} {dev:?} hidden {hidden}: max abs error {max_abs:.3e} > 1e-2"
        );
        let what = format!("{backend:?} {dev:?} hidden {hidden} large-mean");
        assert_close(&format!("{what} dx"), &got.dx, &want.dx, 1e-2);
        let (gw, ww) = (got.dw.as_ref().unwrap(), want.dw.as_ref().unwrap());
        assert_close(&format!("{what} dw"), gw, ww, 1e-2);
    }
}
