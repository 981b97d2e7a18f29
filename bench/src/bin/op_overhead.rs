//! What single candle ops cost in a training step: time per call of the ops that the TFT's
//! step profile (`tft --profile`, `ncu`) points at, at the step's small shapes (the host's cost
//! per op bounds them) and at the paper-scale shapes (the kernel bounds them; GB/s counts the
//! bytes the op must read and write once).

use anyhow::Result;
use candle_core::{Device, Tensor};
use clap::Parser;
use ln_bench::timing::{iters_for, time_us};

#[derive(Parser)]
struct Args {
    /// `cuda` or `cpu`.
    #[arg(long, default_value = "cuda")]
    device: String,
    /// Timed batches per measurement (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
}

type Op = Box<dyn Fn() -> candle_core::Result<Tensor>>;

/// One measured op: a name, the shapes it reads, and the bytes it moves at the least.
struct Case {
    name: &'static str,
    shapes: String,
    bytes: usize,
    op: Op,
}

fn randn(dims: &[usize], dev: &Device) -> Result<Tensor> {
    Ok(Tensor::randn(0f32, 1., dims, dev)?)
}

fn elems(t: &Tensor) -> usize {
    t.elem_count() * t.dtype().size_in_bytes()
}

/// `a op b` with `b` broadcast to `a`'s shape: the bias add and the per-row scale of a step.
fn broadcast(name: &'static str, a: &[usize], b: &[usize], dev: &Device) -> Result<Case> {
    let (x, y) = (randn(a, dev)?, randn(b, dev)?);
    let bytes = 2 * elems(&x) + elems(&y);
    let shapes = format!("{a:?} {b:?}");
    let op: Op = match name {
        "broadcast_add" => Box::new(move || x.broadcast_add(&y)),
        _ => Box::new(move || x.broadcast_mul(&y)),
    };
    Ok(Case {
        name,
        shapes,
        bytes,
        op,
    })
}

/// A sum over `dims` (kept): bias gradients, a mean over heads, a sum over variables.
fn sum(a: &[usize], dims: &'static [usize], dev: &Device) -> Result<Case> {
    let x = randn(a, dev)?;
    let bytes = elems(&x) + elems(&x) / dims.iter().map(|&d| a[d]).product::<usize>();
    Ok(Case {
        name: "sum_keepdim",
        shapes: format!("{a:?} over {dims:?}"),
        bytes,
        op: Box::new(move || x.sum_keepdim(dims)),
    })
}

/// The contiguous add of two `a`-shaped tensors: the reference for the ops above.
fn add(a: &[usize], dev: &Device) -> Result<Case> {
    let (x, y) = (randn(a, dev)?, randn(a, dev)?);
    Ok(Case {
        name: "add",
        shapes: format!("{a:?} {a:?}"),
        bytes: 3 * elems(&x),
        op: Box::new(move || x.add(&y)),
    })
}

/// `transpose(1, 2).contiguous()`: the strided copy of attention's head split.
fn transpose_contiguous(a: &[usize], dev: &Device) -> Result<Case> {
    let x = randn(a, dev)?;
    Ok(Case {
        name: "transpose_contiguous",
        shapes: format!("{a:?} (1, 2)"),
        bytes: 2 * elems(&x),
        op: Box::new(move || x.transpose(1, 2)?.contiguous()),
    })
}

fn cases(dev: &Device) -> Result<Vec<Case>> {
    let mut v = vec![
        // Default TFT size: batch 64, 52 + 12 steps, hidden 32.
        add(&[64, 32], dev)?,
        add(&[64, 52, 32], dev)?,
        broadcast("broadcast_add", &[64, 52, 32], &[32], dev)?,
        broadcast("broadcast_mul", &[64, 52, 32], &[64, 52, 1], dev)?,
        sum(&[64, 52, 32], &[0, 1], dev)?,
        transpose_contiguous(&[64, 52, 4, 8], dev)?,
        // Paper size: batch 256, 168 + 24 steps, hidden 160, 8 observed inputs, 4 heads.
        add(&[256, 168, 160], dev)?,
        broadcast("broadcast_add", &[256, 168, 160], &[160], dev)?,
        broadcast("broadcast_mul", &[256, 168, 8, 160], &[256, 168, 8, 1], dev)?,
        sum(&[256, 168, 160], &[0, 1], dev)?,
        sum(&[256, 4, 192, 192], &[1], dev)?,
        sum(&[256, 168, 8, 160], &[2], dev)?,
        sum(&[256, 168, 8, 160], &[3], dev)?,
        transpose_contiguous(&[256, 192, 4, 40], dev)?,
    ];
    let x = randn(&[256, 192, 160], dev)?;
    v.push(Case {
        name: "sum_all",
        shapes: "[256, 192, 160]".into(),
        bytes: elems(&x),
        op: Box::new(move || x.sum_all()),
    });
    // The GRN's ELU, forward then backward from a ones gradient: x in, y out; x, y, the
    // gradient in, dx out.
    let x = candle_core::Var::from_tensor(&randn(&[256, 168, 160], dev)?)?;
    v.push(Case {
        name: "elu_fwd_bwd",
        shapes: "[256, 168, 160]".into(),
        bytes: 6 * elems(&x),
        op: Box::new(move || {
            let grads = x.elu(1.)?.backward()?;
            grads
                .get(&x)
                .cloned()
                .ok_or_else(|| candle_core::Error::Msg("no gradient for x".into()))
        }),
    });
    let x = randn(&[256, 168, 8, 160], dev)?;
    v.push(Case {
        name: "ge_scalar",
        shapes: "[256, 168, 8, 160] ge 0".into(),
        bytes: elems(&x) + elems(&x) / 4,
        op: Box::new(move || x.ge(0f64)),
    });
    Ok(v)
}

fn main() -> Result<()> {
    let args = Args::parse();
    let dev = match args.device.as_str() {
        "cuda" => Device::new_cuda(0)?,
        "cpu" => Device::Cpu,
        d => anyhow::bail!("--device must be cuda or cpu (got {d})"),
    };
    println!(
        "{:<22} {:<34} {:>10} {:>8}",
        "op", "shapes", "us/call", "GB/s"
    );
    for c in cases(&dev)? {
        let iters = iters_for(c.bytes).max(if c.bytes < 1 << 20 { 2000 } else { 0 });
        let us = time_us(&dev, iters, args.reps, || (c.op)().map(|_| ()))?;
        println!(
            "{:<22} {:<34} {:>10.2} {:>8.0}",
            c.name,
            c.shapes,
            us,
            c.bytes as f64 / us / 1e3
        );
    }
    Ok(())
}
