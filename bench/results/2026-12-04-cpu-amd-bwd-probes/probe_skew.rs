// Probe of 2026-12-04 (not built by the workspace): copy to bench/src/bin/ and run
// `cargo build --release -p ln-bench --bin probe_skew`, then
// `RAYON_NUM_THREADS=1 target/release/probe_skew ROWS COLS X_OFFSET DY_OFFSET`: the best time of
// `layer_norm_bwd` over PROBE_N calls (200), x and dy starting at the given element offsets of
// their buffers (to see whether 4K aliasing between x, dy and dx slows the loop).
use candle_core::{Device, Tensor};
fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().unwrap()).collect();
    let (rows, cols, ox, ody) = (args[0], args[1], args[2], args[3]);
    let dev = Device::Cpu;
    let n = rows * cols;
    let mk = |off: usize| {
        Tensor::randn(0f32, 1., n + off, &dev).unwrap().narrow(0, off, n).unwrap().reshape((rows, cols)).unwrap()
    };
    let x = mk(ox);
    let dy = mk(ody);
    let w = Tensor::randn(1f32, 0.1, cols, &dev).unwrap();
    let mut best = f64::MAX;
    let mut keep = Vec::new();
    for _ in 0..std::env::var("PROBE_N").map(|v| v.parse().unwrap()).unwrap_or(200) {
        let t = std::time::Instant::now();
        let r = candle_nn::ops::layer_norm_bwd(&x, Some(&w), &dy, 1e-5, true).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
        keep.push(r);
        if keep.len() > 2 { keep.remove(0); }
    }
    println!("{rows}x{cols} ox={ox} ody={ody} best {:.1} us", best * 1e6);
}
