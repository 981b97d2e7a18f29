//! The rest of the fused family on a device: `ops::rms_norm`, `ops::softmax_last_dim` and
//! `rotary_emb::rope`, at LLM shapes: the forward alone, the backward op alone (what the
//! autograd engine launches for the op: `ops::rms_norm_bwd` with the weight's gradient,
//! `ops::softmax_last_dim_bwd`, and for rope the forward kernel applied to `dy` with `-sin`),
//! and a training step (`op(x)`, then `(y * dy).backward()`). Writes a CSV that
//! `bench/scripts/family_torch.py` puts beside PyTorch's.

use anyhow::Result;
use candle_core::{DType, Device, Tensor, Var};
use clap::Parser;
use ln_bench::timing::{iters_for, time_us};
use std::collections::HashMap;
use std::io::Write;

#[derive(Parser)]
struct Args {
    /// `cuda` or `cpu`.
    #[arg(long, default_value = "cuda")]
    device: String,
    /// Output CSV.
    #[arg(long, default_value = "family-candle.csv")]
    csv: String,
    /// Timed batches per measurement (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Divide every leading dimension by this (quick runs, e.g. on the CPU).
    #[arg(long, default_value_t = 1)]
    scale: usize,
    /// Only write inputs and fused outputs into this folder, for `family_check.py`; no timing.
    #[arg(long)]
    dump_only: Option<String>,
}

/// One op at one shape: `dims` of the input, the last one is the normalized/rotated one.
struct Case {
    op: &'static str,
    dims: Vec<usize>,
}

fn cases(scale: usize) -> Vec<Case> {
    let s = |n: usize| (n / scale).max(1);
    vec![
        Case {
            op: "rms_norm",
            dims: vec![s(4096), 4096],
        },
        Case {
            op: "rms_norm",
            dims: vec![s(32768), 4096],
        },
        Case {
            op: "softmax_last_dim",
            dims: vec![s(32 * 4096), 4096],
        },
        Case {
            op: "softmax_last_dim",
            dims: vec![s(4096), 32000],
        },
        // GPT-2's vocabulary: an odd width, past the backward's widest tier in every dtype.
        Case {
            op: "softmax_last_dim",
            dims: vec![s(2048), 50257],
        },
        // Odd widths inside the tiers: a vocabulary of 32000 and one added token, and 3001.
        Case {
            op: "softmax_last_dim",
            dims: vec![s(2048), 32001],
        },
        Case {
            op: "softmax_last_dim",
            dims: vec![s(8192), 3001],
        },
        Case {
            op: "rope",
            dims: vec![1, 32, s(4096), 128],
        },
    ]
}

fn forward(op: &str, x: &Tensor, w: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    Ok(match op {
        "rms_norm" => candle_nn::ops::rms_norm(x, w, 1e-5)?,
        "softmax_last_dim" => candle_nn::ops::softmax_last_dim(x)?,
        "rope" => candle_nn::rotary_emb::rope(x, cos, sin)?,
        op => anyhow::bail!("unknown op {op}"),
    })
}

/// The backward op alone for the output gradient `dy`; `y` is the forward's output, `w` tracks
/// a gradient, `nsin` is `-sin`.
fn backward(
    op: &str,
    x: &Tensor,
    y: &Tensor,
    dy: &Tensor,
    w: &Tensor,
    cos: &Tensor,
    nsin: &Tensor,
) -> Result<()> {
    match op {
        "rms_norm" => {
            let (_dx, dw) = candle_nn::ops::rms_norm_bwd(x, w, dy, 1e-5)?;
            anyhow::ensure!(dw.is_some(), "rms_norm_bwd computed no weight gradient");
        }
        "softmax_last_dim" => drop(candle_nn::ops::softmax_last_dim_bwd(y, dy)?),
        "rope" => drop(candle_nn::rotary_emb::rope(dy, cos, nsin)?),
        op => anyhow::bail!("unknown op {op}"),
    }
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    let dev = match args.device.as_str() {
        "cpu" => Device::Cpu,
        "cuda" => Device::new_cuda(0)?,
        d => anyhow::bail!("--device {d}: use cpu or cuda"),
    };
    // As PyTorch's caching allocator: freed memory stays in the pool.
    #[cfg(feature = "cuda")]
    if let Device::Cuda(cuda) = &dev {
        cuda.set_pool_release_threshold(u64::MAX)?;
    }
    if let Some(dir) = &args.dump_only {
        return dump_numerics(&dev, dir);
    }
    let mut f = std::fs::File::create(&args.csv)?;
    writeln!(f, "impl,op,level,dtype,shape,us,bytes")?;
    for dtype in [DType::F32, DType::BF16] {
        for case in cases(args.scale) {
            let shape = case.dims.clone();
            let last = *shape.last().unwrap_or(&1);
            let x = Tensor::randn(0f32, 1., shape.as_slice(), &dev)?.to_dtype(dtype)?;
            let dy = Tensor::randn(0f32, 1., shape.as_slice(), &dev)?.to_dtype(dtype)?;
            let w = Tensor::randn(1f32, 0.1, last, &dev)?.to_dtype(dtype)?;
            let seq = if case.op == "rope" { shape[2] } else { 1 };
            let theta = Tensor::randn(0f32, 1., (seq, last / 2), &dev)?;
            let (cos, sin) = (theta.cos()?.to_dtype(dtype)?, theta.sin()?.to_dtype(dtype)?);
            let n = x.elem_count() * dtype.size_in_bytes();
            // Forward: read x, write y. Backward: read dy and x (or y), write dx (rope: read dy,
            // write dx). Step: both.
            let bwd_bytes = if case.op == "rope" { 2 * n } else { 3 * n };
            let (fwd_bytes, step_bytes) = (2 * n, 2 * n + bwd_bytes);
            let iters = iters_for(fwd_bytes);
            let shape_s = shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("x");
            let us = time_us(&dev, iters, args.reps, || {
                forward(case.op, &x, &w, &cos, &sin)
                    .map(drop)
                    .map_err(to_candle)
            })?;
            let dt = format!("{dtype:?}").to_lowercase();
            writeln!(
                f,
                "candle,{},fwd,{dt},{shape_s},{us:.2},{fwd_bytes}",
                case.op
            )?;
            println!("{:<17} fwd  {dt:<5} {shape_s:<18} {us:>10.1} us", case.op);
            let (xv, wv) = (Var::from_tensor(&x)?, Var::from_tensor(&w)?);
            let y = forward(case.op, &x, &w, &cos, &sin)?;
            let nsin = sin.neg()?;
            let us = time_us(&dev, iters, args.reps, || {
                backward(case.op, &x, &y, &dy, &wv, &cos, &nsin).map_err(to_candle)
            })?;
            writeln!(
                f,
                "candle,{},bwd,{dt},{shape_s},{us:.2},{bwd_bytes}",
                case.op
            )?;
            println!("{:<17} bwd  {dt:<5} {shape_s:<18} {us:>10.1} us", case.op);
            let us = time_us(&dev, iters.div_ceil(4), args.reps, || {
                let y = forward(case.op, &xv, &wv, &cos, &sin).map_err(to_candle)?;
                (y * &dy)?.backward().map(drop)
            })?;
            writeln!(
                f,
                "candle,{},step,{dt},{shape_s},{us:.2},{step_bytes}",
                case.op
            )?;
            println!("{:<17} step {dt:<5} {shape_s:<18} {us:>10.1} us", case.op);
        }
    }
    Ok(())
}

/// Writes inputs and fused outputs (forward, gradients of `sum(op(x) * dy)`) of every op for
/// several shapes and every dtype, so that `family_check.py` can compare them with PyTorch in
/// f64 on the same device.
fn dump_numerics(dev: &Device, dir: &str) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    // (op, case, dims, scale of x): odd widths, the widths of the LLM grid, rows past the widest
    // tier (the streaming kernels; with more rows than their grid, which L2 caps, in
    // `huge_rows`), and softmax logits far from zero.
    let cases: [(&str, &str, &[usize], f64); 13] = [
        ("rms_norm", "odd", &[1000, 17], 1.),
        ("rms_norm", "llm", &[512, 4096], 1.),
        ("rms_norm", "huge", &[8, 70001], 1.),
        ("rms_norm", "huge_rows", &[200, 40000], 1.),
        ("softmax_last_dim", "odd", &[1000, 17], 1.),
        ("softmax_last_dim", "llm", &[256, 4096], 1.),
        ("softmax_last_dim", "vocab", &[16, 32000], 1.),
        ("softmax_last_dim", "huge", &[8, 70001], 1.),
        ("softmax_last_dim", "huge_rows", &[200, 40000], 1.),
        ("softmax_last_dim", "large_logits", &[256, 4096], 30.),
        ("rope", "llm", &[2, 8, 64, 128], 1.),
        ("rope_i", "llm", &[2, 8, 64, 128], 1.),
        ("rope", "odd", &[1, 3, 17, 6], 1.),
    ];
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        for (op, case, dims, scale) in cases {
            let x = (Tensor::randn(0f64, 1., dims, dev)? * scale)?.to_dtype(dtype)?;
            let dy = Tensor::randn(0f64, 1., dims, dev)?.to_dtype(dtype)?;
            let last = dims[dims.len() - 1];
            let w = Tensor::randn(1f64, 0.1, last, dev)?.to_dtype(dtype)?;
            let seq = if op.starts_with("rope") { dims[2] } else { 1 };
            let theta = Tensor::randn(0f64, 1., (seq, last / 2), dev)?;
            let (cos, sin) = (theta.cos()?.to_dtype(dtype)?, theta.sin()?.to_dtype(dtype)?);
            let (xv, wv) = (Var::from_tensor(&x)?, Var::from_tensor(&w)?);
            let y = match op {
                "rope_i" => candle_nn::rotary_emb::rope_i(&xv, &cos, &sin)?,
                op => forward(op, &xv, &wv, &cos, &sin)?,
            };
            let grads = (&y * &dy)?.backward()?;
            let grad = |v: &Var| {
                grads
                    .get(v)
                    .cloned()
                    .ok_or_else(|| anyhow::anyhow!("{op}: no gradient"))
            };
            let mut tensors: HashMap<String, Tensor> = HashMap::new();
            tensors.insert("x".into(), x.clone());
            tensors.insert("dy".into(), dy);
            tensors.insert("y".into(), y.detach());
            tensors.insert("dx".into(), grad(&xv)?);
            match op {
                "rms_norm" => {
                    tensors.insert("w".into(), w);
                    tensors.insert("dw".into(), grad(&wv)?);
                }
                "rope" | "rope_i" => {
                    tensors.insert("cos".into(), cos);
                    tensors.insert("sin".into(), sin);
                }
                _ => {}
            }
            let path = format!("{dir}/{op}__{}__{case}.safetensors", dtype.as_str());
            candle_core::safetensors::save(&tensors, path)?;
        }
    }
    Ok(())
}

fn to_candle(e: anyhow::Error) -> candle_core::Error {
    candle_core::Error::Msg(e.to_string())
}
