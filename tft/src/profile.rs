//! Where a training step goes: `tft --profile STEPS` splits each step into data, forward,
//! backward and optimizer, and reports per phase the wall time (the device is synchronized at
//! every phase boundary, so the GPU's work is charged to the phase that queued it), the host time
//! spent queueing it (before that synchronization: close to the wall time when the host, not the
//! GPU, bounds the phase), the tensors candle created (one per op result or view) and the host
//! heap allocations.

use crate::data::Dataset;
use crate::loss::quantile_loss;
use crate::train::Trainer;
use anyhow::{Context, Result};
use candle_core::{DType, Device, Tensor};
use candle_nn::Optimizer;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The system allocator, counting allocations. A binary opts in with
/// `#[global_allocator] static A: CountingAlloc = CountingAlloc;`.
pub struct CountingAlloc;

static HOST_ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded to `System` unchanged; only a counter is added.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HOST_ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        HOST_ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        HOST_ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

/// Host heap allocations so far (0 unless the binary installed [`CountingAlloc`]).
pub fn host_allocs() -> u64 {
    HOST_ALLOCS.load(Ordering::Relaxed)
}

/// Tensors created so far in the process: candle numbers every tensor (op result or view)
/// from one counter; its value is read from the id of a fresh probe tensor.
pub fn tensors_created() -> Result<u64> {
    let probe = Tensor::zeros((), DType::U8, &Device::Cpu)?;
    let id = format!("{:?}", probe.id());
    id.trim_start_matches("TensorId(")
        .trim_end_matches(')')
        .parse()
        .with_context(|| format!("unexpected tensor id format {id}"))
}

/// The phases of a step, in order.
pub const PHASES: [&str; 4] = ["data", "forward", "backward", "optimizer"];

/// Per-phase samples over the profiled steps.
#[derive(Debug, Default)]
pub struct StepProfile {
    ms: [Vec<f64>; 4],
    queued_ms: [Vec<f64>; 4],
    tensors: [u64; 4],
    allocs: [u64; 4],
    steps: u64,
}

struct Mark {
    t: Instant,
    tensors: u64,
    allocs: u64,
}

impl Mark {
    fn now() -> Result<Self> {
        // The probe tensor of `tensors_created` is charged to nobody: counters first.
        let (tensors, allocs) = (tensors_created()?, host_allocs());
        Ok(Self {
            t: Instant::now(),
            tensors,
            allocs,
        })
    }
}

impl StepProfile {
    fn lap(&mut self, phase: usize, dev: &Device, from: Mark) -> Result<Mark> {
        self.queued_ms[phase].push(from.t.elapsed().as_secs_f64() * 1e3);
        dev.synchronize()?;
        let ms = from.t.elapsed().as_secs_f64() * 1e3;
        let to = Mark::now()?;
        self.ms[phase].push(ms);
        // -1: the probe tensor of the mark itself.
        self.tensors[phase] += to.tensors - from.tensors - 1;
        self.allocs[phase] += to.allocs - from.allocs;
        Ok(to)
    }

    /// One AdamW step on the windows `ends`, timed phase by phase; returns the loss.
    pub fn step(&mut self, tr: &mut Trainer, data: &Dataset, ends: &[usize]) -> Result<f32> {
        let dev = tr.device.clone();
        dev.synchronize()?;
        let m = Mark::now()?;
        let b = data.batch(ends, &dev)?;
        let m = self.lap(0, &dev, m)?;
        let out = tr.model.forward(&b.static_x, &b.past, &b.future)?;
        let loss = quantile_loss(&out.quantiles, &b.target, &tr.model.config().quantiles)?;
        let m = self.lap(1, &dev, m)?;
        let grads = loss.backward()?;
        let m = self.lap(2, &dev, m)?;
        tr.opt.step(&grads)?;
        self.lap(3, &dev, m)?;
        self.steps += 1;
        Ok(loss.to_scalar::<f32>()?)
    }

    /// A table: per phase the median and mean ms, the median ms queueing it, and the tensors
    /// and host allocations per step.
    pub fn report(&self) -> String {
        let per_step = |x: u64| x as f64 / self.steps.max(1) as f64;
        let mut s = format!(
            "{:<10} {:>10} {:>10} {:>10} {:>14} {:>14}\n",
            "phase", "median ms", "mean ms", "queued ms", "tensors/step", "host allocs"
        );
        let (mut med_sum, mut mean_sum, mut q_sum, mut t_sum, mut a_sum) =
            (0.0, 0.0, 0.0, 0.0, 0.0);
        for (i, name) in PHASES.iter().enumerate() {
            let (med, mean) = median_mean(&self.ms[i]);
            let (q, _) = median_mean(&self.queued_ms[i]);
            let (t, a) = (per_step(self.tensors[i]), per_step(self.allocs[i]));
            s += &format!("{name:<10} {med:>10.2} {mean:>10.2} {q:>10.2} {t:>14.0} {a:>14.0}\n");
            (med_sum, mean_sum, q_sum, t_sum, a_sum) = (
                med_sum + med,
                mean_sum + mean,
                q_sum + q,
                t_sum + t,
                a_sum + a,
            );
        }
        s += &format!(
            "{:<10} {med_sum:>10.2} {mean_sum:>10.2} {q_sum:>10.2} {t_sum:>14.0} {a_sum:>14.0}\n",
            "step"
        );
        s
    }
}

/// Median and mean of `v` (0 for an empty slice).
fn median_mean(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    (s[s.len() / 2], s.iter().sum::<f64>() / s.len() as f64)
}

/// Marks the profiled steps for a CUDA profiler started with `--profile-from-start off`
/// (`ncu`, `nsys`): `cuProfilerStart`/`cuProfilerStop`; no-ops without a profiler attached.
#[cfg(feature = "cuda")]
pub fn cuda_profiler_range(dev: &Device, start: bool) -> Result<()> {
    use candle_core::cuda_backend::cudarc::driver::{result::DriverError, sys};
    if !dev.is_cuda() {
        return Ok(());
    }
    dev.synchronize()?;
    // SAFETY: neither call takes arguments; the device's context is current after `synchronize`.
    let r = unsafe {
        if start {
            sys::cuProfilerStart()
        } else {
            sys::cuProfilerStop()
        }
    };
    r.result().map_err(|e: DriverError| {
        anyhow::anyhow!("cuProfiler{}: {e}", if start { "Start" } else { "Stop" })
    })
}

/// Without CUDA there is no profiler range to mark.
#[cfg(not(feature = "cuda"))]
pub fn cuda_profiler_range(_dev: &Device, _start: bool) -> Result<()> {
    Ok(())
}
