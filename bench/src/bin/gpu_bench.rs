//! Layer norm comparison on one device: the fused op (forward op, backward op, and forward +
//! backward through autograd) against the stock candle forward and the composite
//! `layer_norm_slow`. Prints a table, writes a CSV, and with `--dump` writes inputs and outputs
//! as safetensors for the f64 PyTorch check (`bench/torch_check.py`).
//!
//! `cargo run --release -p ln-bench --features cuda --bin gpu_bench -- --device cuda`

use anyhow::Result;
use candle_core::{DType, Device, Tensor, Var};
use clap::Parser;
use ln_bench::timing::{iters_for, time_us};
use ln_bench::{stock::stock_layer_norm, sweep_hidden, sweep_rows, SHAPES};
use std::collections::HashMap;
use std::io::Write;

#[derive(Parser)]
struct Args {
    /// cpu or cuda
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Comma separated dtypes.
    #[arg(long, default_value = "f32,bf16")]
    dtypes: String,
    /// Only the first N shapes of the grid (for quick runs).
    #[arg(long)]
    shapes: Option<usize>,
    /// Batches per measurement (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    #[arg(long, default_value = "bench-candle.csv")]
    csv: String,
    /// Also write inputs/outputs for the numerics check into this folder.
    #[arg(long)]
    dump: Option<String>,
    /// CUDA memory pool: `retain` keeps freed memory in the device's pool (what PyTorch's
    /// caching allocator does; the fork's opt-in, `CANDLE_CUDA_POOL_RETAIN=1`), `release` hands
    /// it back to the driver at each synchronization (the driver's default): the first large
    /// allocation afterwards maps fresh pages.
    #[arg(long, value_enum, default_value = "retain")]
    pool: Pool,
    /// Memory held after `backward()` through a stack of layer norms, fused vs composite, and
    /// the peak during it: ROWSxCOLSxLAYERS, e.g. 4096x4096x8 (cuda only).
    #[arg(long)]
    memory: Option<String>,
    /// Time the pieces of an autograd step (mul, ones_like, add, ...) at this shape, e.g. 4096x4096.
    #[arg(long)]
    breakdown: Option<String>,
    /// Instead of the grid: the fused forward and backward ops alone at every hidden size of the
    /// fine sweep (64 to 65536), rows so that each tensor holds at least 32 MiB.
    #[arg(long)]
    sweep: bool,
    /// With `--sweep`: only its hidden sizes of at least this many columns.
    #[arg(long, default_value_t = 0)]
    sweep_from: usize,
    /// With `--sweep`: only its hidden sizes of at most this many columns.
    #[arg(long, default_value_t = usize::MAX)]
    sweep_to: usize,
}

const EPS: f32 = 1e-5;

struct Row {
    imp: &'static str,
    level: &'static str,
    dtype: DType,
    rows: usize,
    cols: usize,
    us: f64,
    bytes: usize,
}

impl Row {
    /// `imp`'s time at `level` (fwd, bwd, ...) on a tensor of `dtype` and `(rows, cols)`.
    fn new(
        imp: &'static str,
        level: &'static str,
        dtype: DType,
        (rows, cols): (usize, usize),
        us: f64,
        bytes: usize,
    ) -> Self {
        Self {
            imp,
            level,
            dtype,
            rows,
            cols,
            us,
            bytes,
        }
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let dev = match args.device.as_str() {
        "cpu" => Device::Cpu,
        "cuda" => Device::new_cuda(0)?,
        d => anyhow::bail!("unknown device {d}, use cpu or cuda"),
    };
    if dev.is_cuda() {
        set_pool(&dev, args.pool)?;
    }
    if let Some(spec) = &args.memory {
        return memory(&dev, spec, &args.csv);
    }
    if let Some(shape) = &args.breakdown {
        return breakdown(&dev, shape, args.reps);
    }
    let mut out = Vec::new();
    let shapes = &SHAPES[..args.shapes.unwrap_or(SHAPES.len()).min(SHAPES.len())];
    for dtype in args.dtypes.split(',') {
        let dtype: DType = dtype.parse()?;
        if args.sweep {
            let in_range = |c: &usize| (args.sweep_from..=args.sweep_to).contains(c);
            for cols in sweep_hidden().into_iter().filter(in_range) {
                let rows = sweep_rows(cols, dtype.size_in_bytes());
                bench_ops(&dev, &inputs(&dev, dtype, rows, cols)?, args.reps, &mut out)?;
                eprintln!("sweep {} {rows}x{cols} done", dtype.as_str());
            }
            continue;
        }
        for &(rows, cols) in shapes {
            bench_shape(&dev, dtype, rows, cols, args.reps, &mut out)?;
        }
    }
    print_table(&out);
    let mut f = std::fs::File::create(&args.csv)?;
    // The share of the device's copy speed is the report's (bench/scripts/report.py), from the
    // copy that torch_bench.py measures in the same run.
    writeln!(f, "impl,level,dtype,rows,cols,us,gbps")?;
    for r in &out {
        let gbps = r.bytes as f64 / r.us / 1e3;
        let dt = r.dtype.as_str();
        let (imp, level, rows, cols, us) = (r.imp, r.level, r.rows, r.cols, r.us);
        writeln!(f, "{imp},{level},{dt},{rows},{cols},{us:.3},{gbps:.1}")?;
    }
    if let Some(dir) = &args.dump {
        dump_numerics(&dev, dir)?;
    }
    Ok(())
}

/// Random inputs of one point: x and dy [rows, cols], weight and bias [cols].
fn inputs(dev: &Device, dtype: DType, rows: usize, cols: usize) -> Result<[Tensor; 4]> {
    Ok([
        Tensor::randn(0f32, 1., (rows, cols), dev)?.to_dtype(dtype)?,
        Tensor::randn(1f32, 0.1, cols, dev)?.to_dtype(dtype)?,
        Tensor::randn(0f32, 0.1, cols, dev)?.to_dtype(dtype)?,
        Tensor::randn(0f32, 1., (rows, cols), dev)?.to_dtype(dtype)?,
    ])
}

/// The fused forward op and backward op alone (the sweep's two measurements, the grid's first).
fn bench_ops(
    dev: &Device,
    [x, w, b, dy]: &[Tensor; 4],
    reps: usize,
    out: &mut Vec<Row>,
) -> Result<()> {
    let (rows, cols) = x.dims2()?;
    let dtype = x.dtype();
    let (fwd_bytes, bwd_bytes) = op_bytes(dtype, rows, cols);
    let iters = iters_for(fwd_bytes);
    let us = time_us(dev, iters, reps, || {
        candle_nn::ops::layer_norm(x, w, b, EPS).map(drop)
    })?;
    let row = |level, us, bytes| Row::new("fused", level, dtype, (rows, cols), us, bytes);
    out.push(row("fwd", us, fwd_bytes));
    let us = time_us(dev, iters, reps, || {
        candle_nn::ops::layer_norm_bwd(x, Some(w), dy, EPS, true).map(drop)
    })?;
    out.push(row("bwd", us, bwd_bytes));
    Ok(())
}

/// Bytes the forward op (x, weight, bias in; y out) and the backward op (x, dy, weight in; dx,
/// dweight, dbias out) must move at the least.
fn op_bytes(dtype: DType, rows: usize, cols: usize) -> (usize, usize) {
    let n = rows * cols * dtype.size_in_bytes();
    let p = cols * dtype.size_in_bytes();
    (2 * n + 2 * p, 3 * n + 3 * p)
}

fn bench_shape(
    dev: &Device,
    dtype: DType,
    rows: usize,
    cols: usize,
    reps: usize,
    out: &mut Vec<Row>,
) -> Result<()> {
    let inputs = inputs(dev, dtype, rows, cols)?;
    bench_ops(dev, &inputs, reps, out)?;
    let [x, w, b, dy] = inputs;
    let (fwd_bytes, bwd_bytes) = op_bytes(dtype, rows, cols);
    let iters = iters_for(fwd_bytes);
    let mut push =
        |imp, level, us, bytes| out.push(Row::new(imp, level, dtype, (rows, cols), us, bytes));

    if dev.is_cuda() {
        let us = time_us(dev, iters, reps, || {
            stock_layer_norm(&x, &w, &b, EPS).map(drop)
        })?;
        push("stock", "fwd", us, fwd_bytes);
    }
    let us = time_us(dev, iters, reps, || {
        candle_nn::ops::layer_norm_slow(&x, &w, &b, EPS).map(drop)
    })?;
    push("composite", "fwd", us, fwd_bytes);

    // What a user gets through autograd: forward, then `(y * dy).backward()` (candle seeds the
    // backward with ones, so the gradient reaching y is dy).
    let (xv, wv, bv) = (
        Var::from_tensor(&x)?,
        Var::from_tensor(&w)?,
        Var::from_tensor(&b)?,
    );
    let fused = || {
        let y = candle_nn::ops::layer_norm(&xv, &wv, &bv, EPS)?;
        (y * &dy)?.backward().map(drop)
    };
    let us = time_us(dev, iters.div_ceil(4), reps, fused)?;
    push("fused", "fwd+bwd", us, fwd_bytes + bwd_bytes);
    let composite = || {
        let y = candle_nn::ops::layer_norm_slow(&xv, &wv, &bv, EPS)?;
        (y * &dy)?.backward().map(drop)
    };
    let us = time_us(dev, iters.div_ceil(4), reps, composite)?;
    push("composite", "fwd+bwd", us, fwd_bytes + bwd_bytes);
    Ok(())
}

fn print_table(out: &[Row]) {
    let get = |r: &Row, imp: &str, level: &str| {
        out.iter()
            .find(|o| {
                o.imp == imp
                    && o.level == level
                    && o.dtype == r.dtype
                    && o.rows == r.rows
                    && o.cols == r.cols
            })
            .map(|o| (o.us, o.bytes as f64 / o.us / 1e3))
    };
    println!(
        "{:<5} {:>12} | {:>16} {:>16} {:>16} | {:>16} | {:>11} {:>11} {:>7}",
        "dtype",
        "rows x cols",
        "fused fwd us GB/s",
        "stock fwd",
        "composite fwd",
        "fused bwd",
        "ag fused us",
        "ag comp us",
        "speedup"
    );
    for r in out.iter().filter(|r| r.imp == "fused" && r.level == "fwd") {
        let cell = |v: Option<(f64, f64)>| match v {
            Some((us, gbps)) => format!("{us:>8.1} {gbps:>7.0}"),
            None => format!("{:>16}", "-"),
        };
        let ag = |imp| get(r, imp, "fwd+bwd").map(|v| v.0).unwrap_or(f64::NAN);
        let (agf, agc) = (ag("fused"), ag("composite"));
        println!(
            "{:<5} {:>12} | {} {} {} | {} | {:>11.1} {:>11.1} {:>6.1}x",
            r.dtype.as_str(),
            format!("{}x{}", r.rows, r.cols),
            cell(get(r, "fused", "fwd")),
            cell(get(r, "stock", "fwd")),
            cell(get(r, "composite", "fwd")),
            cell(get(r, "fused", "bwd")),
            agf,
            agc,
            agc / agf
        );
    }
}

/// Writes inputs and fused outputs (forward and all gradients) for several shapes and every
/// dtype, so that `torch_check.py` can compare them with PyTorch in f64 on the same device.
fn dump_numerics(dev: &Device, dir: &str) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let cases: [(&str, usize, usize, f32, f32); 6] = [
        ("small", 4096, 64, 0., 1.),
        ("odd", 1000, 17, 0., 1.),
        ("medium", 512, 1024, 0., 1.),
        ("wide", 64, 4097, 0., 1.),
        ("huge", 8, 65536, 0., 1.),
        ("large_mean", 256, 1024, 1e4, 1e-2),
    ];
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        for (name, rows, cols, mean, std) in cases {
            let x = (Tensor::randn(0f64, 1., (rows, cols), dev)? * std as f64)?;
            let x = (x + mean as f64)?.to_dtype(dtype)?;
            let w = Tensor::randn(1f64, 0.1, cols, dev)?.to_dtype(dtype)?;
            let b = Tensor::randn(0f64, 0.1, cols, dev)?.to_dtype(dtype)?;
            let dy = Tensor::randn(0f64, 1., (rows, cols), dev)?.to_dtype(dtype)?;
            let (xv, wv, bv) = (
                Var::from_tensor(&x)?,
                Var::from_tensor(&w)?,
                Var::from_tensor(&b)?,
            );
            let y = candle_nn::ops::layer_norm(&xv, &wv, &bv, EPS)?;
            let grads = (&y * &dy)?.backward()?;
            let grad = |v: &Var| {
                grads
                    .get(v)
                    .cloned()
                    .ok_or_else(|| anyhow::anyhow!("no gradient"))
            };
            let tensors: HashMap<String, Tensor> = [
                ("x", x.clone()),
                ("w", w),
                ("b", b),
                ("dy", dy),
                ("y", y.detach()),
                ("dx", grad(&xv)?),
                ("dw", grad(&wv)?),
                ("db", grad(&bv)?),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            let path = format!("{dir}/{}_{name}.safetensors", dtype.as_str());
            candle_core::safetensors::save(&tensors, path)?;
        }
    }
    Ok(())
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Pool {
    Retain,
    Release,
}

#[cfg(feature = "cuda")]
fn set_pool(dev: &Device, pool: Pool) -> Result<()> {
    let threshold = match pool {
        Pool::Retain => u64::MAX,
        Pool::Release => 0,
    };
    Ok(dev
        .as_cuda_device()?
        .set_pool_release_threshold(threshold)?)
}

#[cfg(not(feature = "cuda"))]
fn set_pool(_: &Device, _: Pool) -> Result<()> {
    anyhow::bail!("a cuda device needs a cuda build (--features cuda)")
}

/// Pool memory used after `(y * dy).backward()` through `layers` layer norms (the activations
/// dropped, the `GradStore` kept), and the peak during forward and backward, relative to the
/// memory used before; fused op vs composite `layer_norm_slow`, f32. Writes `csv`.
#[cfg(feature = "cuda")]
fn memory(dev: &Device, spec: &str, csv: &str) -> Result<()> {
    let dims: Vec<usize> = spec
        .split('x')
        .map(|d| d.parse())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("--memory {spec}: {e}, use ROWSxCOLSxLAYERS"))?;
    let &[rows, cols, layers] = dims.as_slice() else {
        anyhow::bail!("--memory {spec}: use ROWSxCOLSxLAYERS, e.g. 4096x4096x8")
    };
    let cuda = dev.as_cuda_device()?;
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let act = (rows * cols * 4) as f64 / (1 << 20) as f64;
    let params: Vec<(Var, Var)> = (0..layers)
        .map(|_| -> Result<_> {
            let w = Var::from_tensor(&Tensor::randn(1f32, 0.1, cols, dev)?)?;
            let b = Var::from_tensor(&Tensor::randn(0f32, 0.1, cols, dev)?)?;
            Ok((w, b))
        })
        .collect::<Result<_>>()?;
    let x = Tensor::randn(0f32, 1., (rows, cols), dev)?;
    let dy = Tensor::randn(0f32, 1., (rows, cols), dev)?;
    let grads_mib = mib((layers * 2 * cols * 4) as u64);
    println!(
        "{layers} layer norms at {rows}x{cols} f32 (one activation {act:.1} MiB, the parameter \
         gradients {grads_mib:.2} MiB), pool threshold {}",
        cuda.pool_release_threshold()?
    );
    let mut f = std::fs::File::create(csv)?;
    writeln!(f, "impl,rows,cols,layers,retained_mib,peak_mib,grads_mib")?;
    for imp in ["fused", "composite"] {
        dev.synchronize()?;
        let base = cuda.pool_used_memory()?;
        cuda.reset_pool_peaks()?;
        let grads = {
            let mut h = x.clone();
            for (w, b) in &params {
                h = match imp {
                    "fused" => candle_nn::ops::layer_norm(&h, w, b, EPS)?,
                    _ => candle_nn::ops::layer_norm_slow(&h, w, b, EPS)?,
                };
            }
            (h * &dy)?.backward()?
        };
        for (w, b) in &params {
            anyhow::ensure!(grads.get(w).is_some() && grads.get(b).is_some());
        }
        dev.synchronize()?;
        let retained = mib(cuda.pool_used_memory()? - base);
        let peak = mib(cuda.pool_max_used_memory()? - base);
        println!("{imp:<10} retained {retained:>9.2} MiB   peak {peak:>9.2} MiB");
        writeln!(
            f,
            "{imp},{rows},{cols},{layers},{retained:.3},{peak:.3},{grads_mib:.3}"
        )?;
        drop(grads);
    }
    Ok(())
}

#[cfg(not(feature = "cuda"))]
fn memory(_: &Device, _: &str, _: &str) -> Result<()> {
    anyhow::bail!("--memory needs a cuda build (--features cuda)")
}

/// Times the pieces of `y = layer_norm(x, w, b); (y * dy).backward()` one by one.
fn breakdown(dev: &Device, shape: &str, reps: usize) -> Result<()> {
    let (rows, cols) = shape
        .split_once('x')
        .ok_or_else(|| anyhow::anyhow!("shape is ROWSxCOLS"))?;
    let (rows, cols): (usize, usize) = (rows.parse()?, cols.parse()?);
    let x = Tensor::randn(0f32, 1., (rows, cols), dev)?;
    let w = Tensor::randn(1f32, 0.1, cols, dev)?;
    let b = Tensor::randn(0f32, 0.1, cols, dev)?;
    let dy = Tensor::randn(0f32, 1., (rows, cols), dev)?;
    let (xv, wv, bv) = (
        Var::from_tensor(&x)?,
        Var::from_tensor(&w)?,
        Var::from_tensor(&b)?,
    );
    let iters = iters_for(rows * cols * 8).div_ceil(2);
    let t = |name: &str, f: &mut dyn FnMut() -> candle_core::Result<()>| -> Result<()> {
        let us = time_us(dev, iters, reps, f)?;
        println!("{name:<40} {us:>9.1} us");
        Ok(())
    };
    t("fused forward op", &mut || {
        candle_nn::ops::layer_norm(&x, &w, &b, EPS).map(drop)
    })?;
    t("fused backward op", &mut || {
        candle_nn::ops::layer_norm_bwd(&x, Some(&w), &dy, EPS, true).map(drop)
    })?;
    t("x * dy (mul)", &mut || (&x * &dy).map(drop))?;
    t("ones_like", &mut || x.ones_like().map(drop))?;
    t("zeros_like", &mut || x.zeros_like().map(drop))?;
    t("x + dy (add)", &mut || (&x + &dy).map(drop))?;
    t("forward through autograd (vars)", &mut || {
        candle_nn::ops::layer_norm(&xv, &wv, &bv, EPS).map(drop)
    })?;
    t("forward + (y * dy).backward()", &mut || {
        let y = candle_nn::ops::layer_norm(&xv, &wv, &bv, EPS)?;
        (y * &dy)?.backward().map(drop)
    })?;
    t("composite forward + (y * dy).backward()", &mut || {
        let y = candle_nn::ops::layer_norm_slow(&xv, &wv, &bv, EPS)?;
        (y * &dy)?.backward().map(drop)
    })?;
    Ok(())
}
