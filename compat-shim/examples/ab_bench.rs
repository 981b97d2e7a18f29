//! A/B timing of the fused kernel vs the composite: forward + backward, median of N runs.
//!
//! ```text
//! cargo run --release -p candle-layer-norm-compat --example ab_bench --features kernel -- --device cpu
//! cargo run --release -p candle-layer-norm-compat --example ab_bench --features kernel,cuda -- --device cuda --iters 50
//! ```
//! Without `kernel` only the composite column is measured. The loss is `(y * dy).backward()`
//! (gradient of sum(y·dy) without candle's single-block CUDA `sum_all`). "GB/s" counts the bytes
//! a fused implementation must move: x, y (forward), x, dy, dx (backward), i.e. 5·rows·hidden·4.

use std::time::Instant;

use candle_core::{Device, Result, Tensor, Var};
use candle_layer_norm_compat::{kernel_compiled, ops, Backend};

struct Args {
    device: String,
    iters: usize,
    warmup: usize,
}

fn parse_args() -> std::result::Result<Args, String> {
    let mut args = Args {
        device: "cpu".to_string(),
        iters: 20,
        warmup: 3,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--device" => args.device = val("--device")?,
            "--iters" => {
                args.iters = val("--iters")?
                    .parse()
                    .map_err(|e| format!("--iters: {e}"))?
            }
            "--warmup" => {
                args.warmup = val("--warmup")?
                    .parse()
                    .map_err(|e| format!("--warmup: {e}"))?
            }
            "-h" | "--help" => {
                return Err("usage: ab_bench [--device cpu|cuda] [--iters N] [--warmup N]".into())
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if args.iters == 0 {
        return Err("--iters must be > 0".into());
    }
    Ok(args)
}

/// Median seconds of forward + backward with `backend`.
fn time(backend: Backend, dev: &Device, rows: usize, hidden: usize, a: &Args) -> Result<f64> {
    let x = Var::from_tensor(&Tensor::randn(0f32, 1., (rows, hidden), dev)?)?;
    let w = Var::from_tensor(&Tensor::randn(1f32, 0.1, hidden, dev)?)?;
    let b = Var::from_tensor(&Tensor::randn(0f32, 0.1, hidden, dev)?)?;
    let dy = Tensor::randn(0f32, 1., (rows, hidden), dev)?;
    let step = || -> Result<()> {
        let y = ops::layer_norm_with_backend(
            backend,
            x.as_tensor(),
            &[hidden],
            Some(w.as_tensor()),
            Some(b.as_tensor()),
            1e-5,
        )?;
        let grads = (y * &dy)?.backward()?;
        debug_assert!(grads.get(x.as_tensor()).is_some());
        Ok(())
    };
    for _ in 0..a.warmup {
        step()?;
    }
    dev.synchronize()?;
    let mut times = Vec::with_capacity(a.iters);
    for _ in 0..a.iters {
        let t = Instant::now();
        step()?;
        dev.synchronize()?;
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let a = parse_args()?;
    let dev = match a.device.as_str() {
        "cpu" => Device::Cpu,
        "cuda" => Device::new_cuda(0)?,
        d => return Err(format!("--device {d:?}: expected cpu or cuda").into()),
    };
    println!(
        "device {:?}, f32, forward+backward, median of {} (warmup {}), kernel compiled: {}",
        dev.location(),
        a.iters,
        a.warmup,
        kernel_compiled()
    );
    println!(
        "| {:>13} | {:>12} | {:>9} | {:>15} | {:>9} | {:>7} |",
        "rows x hidden", "kernel ms", "GB/s", "composite ms", "GB/s", "speedup"
    );
    println!(
        "|{:-<15}|{:-<14}|{:-<11}|{:-<17}|{:-<11}|{:-<9}|",
        "", "", "", "", "", ""
    );
    for (rows, hidden) in [(16384usize, 64usize), (16384, 256), (4096, 4096)] {
        let gbs = |t: f64| 5.0 * (rows * hidden * 4) as f64 / t / 1e9;
        let comp = time(Backend::Composite, &dev, rows, hidden, &a)?;
        let shape = format!("{rows}x{hidden}");
        if kernel_compiled() {
            let kern = time(Backend::Auto, &dev, rows, hidden, &a)?;
            println!(
                "| {shape:>13} | {:>12.3} | {:>9.1} | {:>15.3} | {:>9.1} | {:>6.2}x |",
                kern * 1e3,
                gbs(kern),
                comp * 1e3,
                gbs(comp),
                comp / kern
            );
        } else {
            println!(
                "| {shape:>13} | {:>12} | {:>9} | {:>15.3} | {:>9.1} | {:>7} |",
                "n/a",
                "n/a",
                comp * 1e3,
                gbs(comp),
                "n/a"
            );
        }
    }
    Ok(())
}
