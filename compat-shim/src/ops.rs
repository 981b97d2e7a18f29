//! Functional layer norm: `y = (x - mean) / sqrt(var + eps) * weight + bias` over the trailing
//! `normalized_shape` dims, as `torch.nn.functional.layer_norm`.

use crate::backend::{backend, uses_kernel, Backend};
use candle_core::{bail, DType, Result, Tensor, D};

/// Layer norm over the trailing `normalized_shape` dims of `x`, with the process-wide
/// [`backend()`](crate::backend()).
///
/// * `normalized_shape`: one or more trailing dims of `x` (PyTorch semantics).
/// * `weight`, `bias`: optional, of shape `normalized_shape`, same dtype and device as `x`.
/// * `eps`: added to the (biased) variance. The fused kernel takes it as `f32`, so for f64
///   inputs pick an `eps` exactly representable in f32 (e.g. 2^-17) if bit-level agreement with
///   the composite matters; 1e-5 differs by ~1e-12 relative on low-variance rows.
///
/// Differentiable in `x`, `weight` and `bias` with either backend. Supported dtypes: f32, f64,
/// f16, bf16 (statistics accumulate in f32, f64 for f64). Invalid arguments return an error.
pub fn layer_norm(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    layer_norm_with_backend(backend(), x, normalized_shape, weight, bias, eps)
}

/// [`layer_norm`] with an explicit backend for this call only, ignoring the process-wide one
/// (thread-safe A/B comparisons).
pub fn layer_norm_with_backend(
    backend: Backend,
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let n = validate(x, normalized_shape, weight, bias)?;
    if uses_kernel(backend) && x.elem_count() > 0 {
        kernel(x, normalized_shape, n, weight, bias, eps)
    } else {
        composite(x, normalized_shape, n, weight, bias, eps)
    }
}

/// Checks the arguments; returns the number of normalized elements per row.
fn validate(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
) -> Result<usize> {
    if normalized_shape.is_empty() {
        bail!("layer_norm: normalized_shape must not be empty (one or more trailing dims of x)")
    }
    let dims = x.dims();
    if dims.is_empty() {
        bail!("layer_norm: x must have rank >= 1, got a rank-0 tensor (a scalar)")
    }
    if dims.len() < normalized_shape.len() || !dims.ends_with(normalized_shape) {
        bail!(
            "layer_norm: normalized_shape {normalized_shape:?} does not match the trailing dims \
             of x with shape {dims:?}"
        )
    }
    let n: usize = normalized_shape.iter().product();
    if n == 0 {
        bail!("layer_norm: normalized_shape {normalized_shape:?} has no elements")
    }
    match x.dtype() {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {}
        dt => bail!("layer_norm: unsupported dtype {dt:?} (expected f16, bf16, f32 or f64)"),
    }
    for (name, t) in [("weight", weight), ("bias", bias)] {
        let Some(t) = t else { continue };
        if t.dims() != normalized_shape {
            bail!(
                "layer_norm: {name} has shape {:?}, expected normalized_shape {normalized_shape:?}",
                t.dims()
            )
        }
        if t.dtype() != x.dtype() {
            bail!(
                "layer_norm: {name} has dtype {:?} but x has dtype {:?}",
                t.dtype(),
                x.dtype()
            )
        }
        if !t.device().same_device(x.device()) {
            bail!(
                "layer_norm: {name} is on {:?} but x is on {:?}",
                t.device().location(),
                x.device().location()
            )
        }
    }
    Ok(n)
}

/// Collapses the `k` trailing dims of `x` into one (no-op for k = 1).
fn flatten_trailing(x: &Tensor, k: usize) -> Result<Tensor> {
    if k == 1 {
        Ok(x.clone())
    } else {
        x.flatten_from(x.rank() - k)
    }
}

fn flatten_param(t: Option<&Tensor>) -> Result<Option<Tensor>> {
    t.map(|t| {
        if t.rank() == 1 {
            Ok(t.clone())
        } else {
            t.flatten_all()
        }
    })
    .transpose()
}

#[cfg(feature = "kernel")]
fn kernel(
    x: &Tensor,
    normalized_shape: &[usize],
    _n: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let k = normalized_shape.len();
    // `layer_norm_opt` copies non-contiguous inputs itself.
    let xs = flatten_trailing(x, k)?;
    let w = flatten_param(weight)?;
    let b = flatten_param(bias)?;
    let y = crate::patched_guard::fused_layer_norm(&xs, w.as_ref(), b.as_ref(), eps as f32)?;
    if k == 1 {
        Ok(y)
    } else {
        y.reshape(x.shape())
    }
}

#[cfg(not(feature = "kernel"))]
fn kernel(
    x: &Tensor,
    normalized_shape: &[usize],
    n: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    // Unreachable: `uses_kernel` is false without the feature.
    composite(x, normalized_shape, n, weight, bias, eps)
}

/// The composite of stock candle 0.9.1 ops (all with backward), on any device.
///
/// Numerics: each row is first shifted by one of its own values (detached: the output does not
/// depend on the shift), then mean and variance are computed in two passes — mean, then
/// mean((x - mean)^2) — in f32 (f64 for f64 inputs). Rows with a large mean and a small spread
/// stay accurate; the variance is a sum of squares, hence never negative.
fn composite(
    x: &Tensor,
    normalized_shape: &[usize],
    n: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let k = normalized_shape.len();
    let x_dtype = x.dtype();
    let acc = if x_dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let xs = flatten_trailing(x, k)?.to_dtype(acc)?;
    let inv_n = 1.0 / n as f64;
    let shift = xs.narrow(D::Minus1, 0, 1)?.detach();
    let d = xs.broadcast_sub(&shift)?;
    let mean = d.sum_keepdim(D::Minus1)?.affine(inv_n, 0.0)?;
    let xc = d.broadcast_sub(&mean)?;
    let var_eps = xc.sqr()?.sum_keepdim(D::Minus1)?.affine(inv_n, eps)?;
    // Multiplying by rstd is cheaper to differentiate than dividing by std.
    let rstd = var_eps.sqrt()?.recip()?;
    let mut y = xc.broadcast_mul(&rstd)?;
    if let Some(w) = flatten_param(weight)? {
        y = y.broadcast_mul(&w.to_dtype(acc)?)?;
    }
    if let Some(b) = flatten_param(bias)? {
        y = y.broadcast_add(&b.to_dtype(acc)?)?;
    }
    let y = y.to_dtype(x_dtype)?;
    if k == 1 {
        Ok(y)
    } else {
        y.reshape(x.shape())
    }
}

/// Old name of [`layer_norm`].
#[deprecated(
    since = "0.1.0",
    note = "use `candle_layer_norm_compat::ops::layer_norm` (same arguments); the backend is \
            chosen by feature `kernel` and `set_backend`"
)]
pub fn cuda_layer_norm(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    layer_norm(x, normalized_shape, weight, bias, eps)
}

/// Old name of [`layer_norm`] (the fallback is now automatic).
#[deprecated(
    since = "0.1.0",
    note = "use `candle_layer_norm_compat::ops::layer_norm` (same arguments); the composite \
            fallback is automatic without feature `kernel`"
)]
pub fn layer_norm_with_fallback(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    layer_norm(x, normalized_shape, weight, bias, eps)
}
