//! CPU matmul time by size, to compare candle's gemm threading (`RAYON_NUM_THREADS=1` keeps
//! the gemm on one thread; the default uses every core). Shapes: the TFT's at the default and
//! paper sizes, and square ones.
//!
//!     cargo run --release -p ln-bench --bin gemm_threads
use anyhow::Result;
use candle_core::{Device, Tensor};
use std::time::Instant;

fn main() -> Result<()> {
    let dev = Device::Cpu;
    // (batch, m, k, n)
    let shapes: [(usize, usize, usize, usize); 10] = [
        (1, 4096, 32, 32),
        (1, 4096, 32, 128),
        (1, 64, 32, 128),
        (256, 64, 8, 64),
        (1, 512, 64, 64),
        (1, 1024, 128, 128),
        (1, 43008, 160, 160),
        (1, 256, 160, 640),
        (1, 256, 256, 256),
        (1, 1024, 1024, 1024),
    ];
    println!("{:<24} {:>12} {:>10}", "b x m x k x n", "us/call", "MMAC");
    for (b, m, k, n) in shapes {
        let x = Tensor::randn(0f32, 1., (b, m, k), &dev)?;
        let w = Tensor::randn(0f32, 1., (b, k, n), &dev)?;
        let macs = b * m * k * n;
        let reps = (2_000_000_000 / macs.max(1)).clamp(3, 2000);
        x.matmul(&w)?;
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t = Instant::now();
            for _ in 0..reps {
                x.matmul(&w)?;
            }
            best = best.min(t.elapsed().as_secs_f64() * 1e6 / reps as f64);
        }
        println!(
            "{:<24} {:>12.1} {:>10.2}",
            format!("{b}x{m}x{k}x{n}"),
            best,
            macs as f64 / 1e6
        );
    }
    Ok(())
}
