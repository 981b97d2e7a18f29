//! Timing on a device: warm up, then `reps` batches of `iters` launches each followed by a
//! synchronize; the median batch time divided by `iters` is reported.

use candle_core::{Device, Result};
use std::time::Instant;

/// Median time of one call of `f` in microseconds.
pub fn time_us<F: FnMut() -> Result<()>>(
    dev: &Device,
    iters: usize,
    reps: usize,
    mut f: F,
) -> Result<f64> {
    for _ in 0..iters.clamp(3, 20) {
        f()?;
    }
    dev.synchronize()?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        for _ in 0..iters {
            f()?;
        }
        dev.synchronize()?;
        times.push(start.elapsed().as_secs_f64() * 1e6 / iters as f64);
    }
    Ok(median(&mut times))
}

/// Median of a non-empty slice (sorts it).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.
    }
}

/// Iterations per batch so that a batch moves about 2 GB (between 5 and 200).
pub fn iters_for(bytes: usize) -> usize {
    (2e9 / bytes.max(1) as f64).clamp(5., 200.) as usize
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_odd_even() {
        assert_eq!(super::median(&mut [3., 1., 2.]), 2.);
        assert_eq!(super::median(&mut [4., 1., 3., 2.]), 2.5);
    }

    #[test]
    fn iters_bounds() {
        assert_eq!(super::iters_for(1), 200);
        assert_eq!(super::iters_for(usize::MAX / 2), 5);
    }
}
