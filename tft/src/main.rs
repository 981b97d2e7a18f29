//! Train the TFT on weekly Mauna Loa CO2 (or the synthetic panel, `--dataset synthetic`) and
//! check that every parameter learns.
//!
//! `cargo run --release -p tft -- --epochs 5`

mod cli;

use anyhow::{bail, Result};
use candle_core::Device;
use cli::{DeviceChoice, LayerNormChoice};
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Instant;
use tft::data::Dataset;
use tft::norm::{self, Backend};
use tft::train::{cosine_lr, epoch_batches, ParamTracker, Trainer};
use tft::TftConfig;

// Counts host allocations for `--profile` (a relaxed atomic add per allocation otherwise).
#[global_allocator]
static ALLOC: tft::profile::CountingAlloc = tft::profile::CountingAlloc;

/// The device to train on (`cli::Args::validate` has refused CUDA in a build without it).
fn device(choice: DeviceChoice) -> Result<Device> {
    match choice {
        DeviceChoice::Cpu => Ok(Device::Cpu),
        DeviceChoice::Cuda => cuda_device(),
    }
}

/// GPU 0, keeping the memory candle frees in the device's pool across synchronizations (as
/// PyTorch's caching allocator does) instead of handing it back to the driver each step.
#[cfg(feature = "cuda")]
fn cuda_device() -> Result<Device> {
    let dev = Device::new_cuda(0)?;
    dev.as_cuda_device()?.set_pool_release_threshold(u64::MAX)?;
    Ok(dev)
}

#[cfg(not(feature = "cuda"))]
fn cuda_device() -> Result<Device> {
    Ok(Device::new_cuda(0)?)
}

/// The program runs on a worker of its own rayon pool (as many threads as rayon's default), so
/// candle's parallel CPU ops (gemm, layer norm, softmax) take the calling thread as one of their
/// workers. Called from outside a pool, each such op hands its work to rayon's global pool and
/// sleeps, and after it the pool's idle workers spin beside the program's next serial ops: on
/// 2 cores the TFT step took 1.1–1.6× as long (bench/results/2026-12-01-cpu-step-lstm/).
fn main() -> Result<()> {
    rayon::ThreadPoolBuilder::new()
        // The main thread's stack size: candle's backward walks the graph recursively.
        .stack_size(8 << 20)
        .build()
        .map_err(|e| anyhow::anyhow!("could not start the CPU thread pool: {e}"))?
        .install(run)
}

fn run() -> Result<()> {
    tft::heap::keep_freed_memory();
    let args = cli::parse();
    let t_start = Instant::now();
    let dev = device(args.device)?;
    norm::set_backend(match args.layer_norm {
        LayerNormChoice::Kernel => Backend::Auto,
        LayerNormChoice::Composite => Backend::Composite,
    });

    let data = args.dataset()?;
    if let Some(path) = &args.dump_data {
        let rows = data.write_panel_csv(path)?;
        println!(
            "wrote the synthetic panel ({rows} rows) to {}",
            path.display()
        );
        println!(
            "data fingerprint: {:.4} (lookback {}, horizon {}; the twin's --expect-fingerprint)",
            data.fingerprint()?,
            args.lookback,
            args.horizon
        );
        return Ok(());
    }
    println!("data: {}", data.describe());
    println!("data fingerprint: {:.4}", data.fingerprint()?);
    let cfg = TftConfig {
        hidden: args.hidden,
        n_heads: args.heads,
        lookback: args.lookback,
        horizon: args.horizon,
        n_static: data.n_static(),
        n_past: data.n_past(),
        n_future: data.n_future(),
        ..TftConfig::default()
    };
    let mut trainer = Trainer::new(cfg.clone(), args.seed, args.lr, &dev)?;
    let n_params: usize = trainer
        .params
        .named_vars()
        .iter()
        .map(|(_, v)| v.elem_count())
        .sum();
    println!(
        "model: TFT hidden={} heads={} lookback={} horizon={} quantiles={:?}; {} tensors, {} parameters",
        cfg.hidden,
        cfg.n_heads,
        cfg.lookback,
        cfg.horizon,
        cfg.quantiles,
        trainer.params.named_vars().len(),
        n_params
    );
    println!(
        "device: {:?}, layer norm: {:?} (backend {:?}, kernel compiled: {}), seed {}, lr {}, batch {}",
        args.device,
        args.layer_norm,
        norm::backend(),
        norm::kernel_compiled(),
        args.seed,
        args.lr,
        args.batch_size
    );
    if let Some(steps) = args.profile {
        return profile(&mut trainer, &data, &args, steps);
    }
    let mut tracker = ParamTracker::new(&trainer.params)?;

    let style = ProgressStyle::with_template(
        "epoch {prefix:>3} [{bar:30}] {pos}/{len} {elapsed_precise} {msg}",
    )?
    .progress_chars("=> ");
    let mut step_times = Vec::new();
    let mut last_eval = None;
    let steps_per_epoch = data.train_ends.len().div_ceil(args.batch_size);
    let total_steps = steps_per_epoch * args.epochs;
    let mut global_step = 0usize;
    for epoch in 1..=args.epochs {
        let batches = epoch_batches(&data.train_ends, args.batch_size, args.seed, epoch);
        let pb = if args.quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(batches.len() as u64)
        };
        pb.set_style(style.clone());
        pb.set_prefix(epoch.to_string());
        let (mut loss_sum, mut n) = (0.0, 0usize);
        let t_epoch = Instant::now();
        for ends in &batches {
            trainer.set_lr(cosine_lr(args.lr, global_step, total_steps));
            global_step += 1;
            let t = Instant::now();
            let (loss, grads) = trainer.step(&data, ends)?;
            step_times.push(t.elapsed().as_secs_f64() * 1e3);
            tracker.record(&trainer.params, &grads)?;
            if !loss.is_finite() {
                bail!("non-finite loss at epoch {epoch}");
            }
            loss_sum += loss as f64 * ends.len() as f64;
            n += ends.len();
            pb.set_message(format!("loss {loss:.4}"));
            pb.inc(1);
        }
        pb.finish_and_clear();
        let epoch_ms = t_epoch.elapsed().as_secs_f64() * 1e3;
        let val = trainer.evaluate(&data, &data.val_ends, 256)?;
        println!(
            "epoch {epoch:>3}: train loss {:.4}  val loss {:.4}  val MAE(p50) {:.3} {}  {:.1} ms/step",
            loss_sum / n as f64,
            val.loss,
            val.mae,
            data.unit(),
            epoch_ms / batches.len() as f64
        );
        last_eval = Some(val);
    }

    let persistence = data.persistence_mae(&data.val_ends);
    let seasonal = data.seasonal_naive_mae(&data.val_ends);
    let drift = data.seasonal_drift_mae(&data.val_ends);
    let best_naive = persistence.min(seasonal).min(drift);
    println!(
        "validation MAE over {} windows x {} horizons ({}):",
        data.val_ends.len(),
        args.horizon,
        data.unit()
    );
    println!("  persistence             {persistence:.3}");
    println!(
        "  seasonal naive          {seasonal:.3}  (period {})",
        data.season()
    );
    println!("  seasonal naive + drift  {drift:.3}");
    let beats = match last_eval {
        Some(v) => {
            println!("  TFT median (p50)        {:.3}", v.mae);
            let beats = v.mae < best_naive;
            println!(
                "  TFT {} the best naive baseline ({:.3} {}, {:+.1}%)",
                if beats { "BEATS" } else { "does NOT beat" },
                best_naive,
                data.unit(),
                100.0 * (v.mae - best_naive) / best_naive
            );
            beats
        }
        None => false,
    };
    if !step_times.is_empty() {
        let mut st = step_times.clone();
        st.sort_by(|a, b| a.total_cmp(b));
        println!(
            "step time: mean {:.1} ms, median {:.1} ms over {} steps",
            st.iter().sum::<f64>() / st.len() as f64,
            st[st.len() / 2],
            st.len()
        );
    }

    let report = tracker.report(&trainer.params)?;
    println!(
        "parameters: {} tensors ({} scalars); non-zero gradient: {}/{}; changed from init: {}/{}",
        report.total, report.scalars, report.with_grad, report.total, report.changed, report.total
    );
    for n in &report.no_grad {
        println!("  NO GRADIENT: {n}");
    }
    for n in &report.unchanged {
        println!("  UNCHANGED:   {n}");
    }
    println!("total wall time {:.1} s", t_start.elapsed().as_secs_f64());
    if !report.ok() {
        bail!("not every parameter received a gradient and changed");
    }
    if !beats {
        eprintln!("warning: the TFT did not beat the naive baseline; train longer (--epochs)");
    }
    Ok(())
}

/// `--profile STEPS`: 3 warm-up steps, then STEPS steps timed phase by phase (the CUDA profiler
/// range of `ncu --profile-from-start off` covers these steps only).
fn profile(trainer: &mut Trainer, data: &Dataset, args: &cli::Args, steps: usize) -> Result<()> {
    let mut prof = tft::profile::StepProfile::default();
    let mut warm_up = tft::profile::StepProfile::default();
    let batches: Vec<Vec<usize>> = (1..)
        .flat_map(|epoch| epoch_batches(&data.train_ends, args.batch_size, args.seed, epoch))
        .filter(|b| b.len() == args.batch_size.min(data.train_ends.len()))
        .take(steps + 3)
        .collect();
    for (i, ends) in batches.iter().enumerate() {
        if i == 3 {
            tft::profile::cuda_profiler_range(&trainer.device, true)?;
        }
        let p = if i < 3 { &mut warm_up } else { &mut prof };
        let loss = p.step(trainer, data, ends)?;
        if !loss.is_finite() {
            bail!("non-finite loss at profiled step {i}");
        }
    }
    tft::profile::cuda_profiler_range(&trainer.device, false)?;
    println!(
        "profile: {steps} steps of batch {} after 3 warm-up steps; device synchronized at each phase boundary",
        args.batch_size
    );
    print!("{}", prof.report());
    Ok(())
}
