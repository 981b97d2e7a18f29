//! Time to the first fused layer norm on a GPU: creating the device, the first forward +
//! backward (`candle_nn::ops::layer_norm`, then `backward()`), which loads the layer-norm kernel
//! module, and the second one; then loading that module on its own the way candle does (from its
//! fatbin when it has one) and from its PTX (what candle did before the fatbin: the driver
//! JIT-compiles it), and with `--all-modules` every other candle module from its PTX.
//!
//! Run it with `CUDA_CACHE_DISABLE=1` for a cold JIT cache (a new container, CI):
//! `CUDA_CACHE_DISABLE=1 cargo run --release -p ln-bench --features cuda --bin first_launch`

use anyhow::Result;
use candle_core::cuda::{cudarc, kernels};
use candle_core::{Device, Tensor, Var};
use clap::Parser;
use std::time::Instant;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value_t = 4096)]
    rows: usize,
    #[arg(long, default_value_t = 1024)]
    cols: usize,
    /// A kernel of the layer-norm module, to load the module through candle.
    #[arg(long, default_value = "layernorm_bwd_reduce_f32")]
    kernel: String,
    /// Do not load the layer-norm module from its PTX (~30 s of JIT on a cold cache).
    #[arg(long)]
    no_ptx: bool,
    /// Also load every other candle module from its PTX, one by one.
    #[arg(long)]
    all_modules: bool,
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

fn main() -> Result<()> {
    let args = Args::parse();
    println!(
        "CUDA_CACHE_DISABLE={} layer-norm fatbin: {}",
        std::env::var("CUDA_CACHE_DISABLE").unwrap_or_default(),
        match kernels::LAYER_NORM.fatbin() {
            Some(fatbin) => format!("{} bytes", fatbin.len()),
            None => "none".to_string(),
        }
    );
    let start = Instant::now();
    let device = Device::new_cuda(0)?;
    println!("device creation: {:.1} ms", ms(start));

    let (rows, cols) = (args.rows, args.cols);
    let host = |n: usize, k: f32| (0..n).map(|i| (i as f32 * k).sin()).collect::<Vec<f32>>();
    let x = Var::from_tensor(&Tensor::from_vec(
        host(rows * cols, 0.37),
        (rows, cols),
        &device,
    )?)?;
    let w = Var::from_tensor(&Tensor::from_vec(host(cols, 0.11), cols, &device)?)?;
    let b = Var::from_tensor(&Tensor::from_vec(host(cols, 0.23), cols, &device)?)?;
    let dy = Tensor::from_vec(host(rows * cols, 0.71), (rows, cols), &device)?;

    // The other ops of the step (mul, the ones backward() starts from) load their modules
    // here, so that the first step below loads the layer-norm module only.
    let start = Instant::now();
    let grads = (x.as_tensor() * &dy)?.backward()?;
    grads
        .get(&x)
        .expect("no gradient")
        .sum_all()?
        .to_scalar::<f32>()?;
    println!("other ops, first use: {:.1} ms", ms(start));

    let step = || -> Result<f32> {
        let y = candle_nn::ops::layer_norm(&x, &w, &b, 1e-5)?;
        let grads = (y * &dy)?.backward()?;
        let mut sum = 0f32;
        for v in [&x, &w, &b] {
            sum += grads
                .get(v)
                .expect("no gradient")
                .sum_all()?
                .to_scalar::<f32>()?;
        }
        Ok(sum)
    };
    for name in ["first", "second"] {
        let start = Instant::now();
        let sum = step()?;
        println!(
            "{name} layer_norm forward + backward ({rows}x{cols} f32): {:.1} ms (sum of gradients {sum:.4})",
            ms(start)
        );
    }

    // The module alone: through candle on a new device (its own module store), then from the
    // PTX with the same driver call candle made before the fatbin.
    let device = Device::new_cuda(0)?;
    let dev = device.as_cuda_device()?;
    let start = Instant::now();
    dev.get_or_load_func(&args.kernel, &kernels::LAYER_NORM)?;
    println!("layer-norm module load through candle: {:.1} ms", ms(start));
    let context = dev.cuda_stream().context().clone();
    let mut modules = vec![];
    if !args.no_ptx {
        modules.push(("layer_norm", kernels::LAYER_NORM));
    }
    if args.all_modules {
        modules.extend([
            ("affine", kernels::AFFINE),
            ("binary", kernels::BINARY),
            ("cast", kernels::CAST),
            ("conv", kernels::CONV),
            ("fill", kernels::FILL),
            ("indexing", kernels::INDEXING),
            ("optim", kernels::OPTIM),
            ("quantized", kernels::QUANTIZED),
            ("reduce", kernels::REDUCE),
            ("rnn", kernels::RNN),
            ("sort", kernels::SORT),
            ("ternary", kernels::TERNARY),
            ("unary", kernels::UNARY),
        ]);
    }
    let mut total = 0.0;
    for (name, module) in modules {
        let start = Instant::now();
        context.load_module(cudarc::nvrtc::Ptx::from_src(module.ptx()))?;
        let t = ms(start);
        total += t;
        println!(
            "{name} module load from PTX ({} bytes): {t:.1} ms",
            module.ptx().len()
        );
    }
    if args.all_modules {
        println!("all modules from PTX: {total:.1} ms");
    }
    Ok(())
}
