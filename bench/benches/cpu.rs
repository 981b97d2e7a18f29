//! CPU: the fused layer norm forward, its backward op alone (`ops::layer_norm_bwd`, dx,
//! dw and db) and the autograd step (`y = layer_norm(..)`, `(y * dy).backward()`), against the
//! composite `layer_norm_slow`, and two element-wise ops that move the same bytes as the forward
//! (`affine`: one read, one write) and as the backward's dx (`mul`: two reads, one write), the
//! speed this machine's memory and candle's allocations allow. `bench/scripts/cpu_torch.py`
//! times PyTorch's CPU kernels at the same shapes with the same thread count;
//! `LN_CPU_SHAPES=RxC,RxC` picks the shapes; `LN_CPU_DTYPES=f32,bf16,f16,f64` the dtypes (f32
//! by default; the others' benchmark ids end in `-<dtype>`); `LN_CPU_IN_POOL=1` times from a
//! worker of a rayon pool, as `tft` runs (candle's parallel ops then do not hand their work to
//! other threads and wait).

use candle_core::{DType, Device, Tensor, Var};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// The shapes (a TFT-like one, LLM widths, a wide row) and two odd ones.
const SHAPES: &[(usize, usize)] = &[
    (4096, 64),
    (2048, 1024),
    (512, 4096),
    (64, 16384),
    (3000, 333),
    (257, 5000),
];

fn shapes() -> Vec<(usize, usize)> {
    match std::env::var("LN_CPU_SHAPES") {
        Err(_) => SHAPES.to_vec(),
        Ok(s) => s
            .split(',')
            .map(|rc| {
                let (r, c) = rc.split_once('x').expect("LN_CPU_SHAPES: RxC,RxC");
                (r.parse().expect("rows"), c.parse().expect("cols"))
            })
            .collect(),
    }
}

/// The dtypes of `LN_CPU_DTYPES` (candle's names), f32 when unset.
fn dtypes() -> Vec<DType> {
    match std::env::var("LN_CPU_DTYPES") {
        Err(_) => vec![DType::F32],
        Ok(s) => s
            .split(',')
            .map(|d| {
                d.parse()
                    .unwrap_or_else(|e| panic!("LN_CPU_DTYPES: f32,bf16,f16,f64: {e}"))
            })
            .collect(),
    }
}

/// Runs the timed loop on a worker of a rayon pool when `LN_CPU_IN_POOL` is set (as `tft`
/// runs), so candle's parallel ops take the calling thread as one of their workers.
fn iter<R, F: FnMut() -> R + Send>(bch: &mut criterion::Bencher<'_>, f: F) {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        std::env::var_os("LN_CPU_IN_POOL").map(|_| {
            rayon::ThreadPoolBuilder::new()
                .build()
                .expect("LN_CPU_IN_POOL: could not start a rayon pool")
        })
    });
    match pool {
        Some(pool) => pool.install(|| bch.iter(f)),
        None => bch.iter(f),
    }
}

fn bench(c: &mut Criterion) {
    let dev = Device::Cpu;
    let mut group = c.benchmark_group("layer_norm_cpu");
    let cases = dtypes()
        .into_iter()
        .flat_map(|dtype| shapes().into_iter().map(move |shape| (dtype, shape)));
    for (dtype, (rows, cols)) in cases {
        let randn = |mean: f32, std: f32, shape: &[usize]| {
            let t = Tensor::randn(mean, std, shape, &dev).unwrap();
            t.to_dtype(dtype).unwrap()
        };
        let x = randn(0., 1., &[rows, cols]);
        let w = randn(1., 0.1, &[cols]);
        let b = randn(0., 0.1, &[cols]);
        let dy = randn(0., 1., &[rows, cols]);
        let elem = dtype.size_in_bytes();
        let (xv, wv, bv) = (
            Var::from_tensor(&x).unwrap(),
            Var::from_tensor(&w).unwrap(),
            Var::from_tensor(&b).unwrap(),
        );
        let shape = match dtype {
            DType::F32 => format!("{rows}x{cols}"),
            _ => format!("{rows}x{cols}-{}", dtype.as_str()),
        };
        group.throughput(Throughput::Bytes((rows * cols * elem * 2) as u64));
        group.bench_with_input(BenchmarkId::new("fused_fwd", &shape), &(), |bch, _| {
            iter(bch, || {
                candle_nn::ops::layer_norm(&x, &w, &b, 1e-5).unwrap()
            })
        });
        group.bench_with_input(BenchmarkId::new("composite_fwd", &shape), &(), |bch, _| {
            iter(bch, || {
                candle_nn::ops::layer_norm_slow(&x, &w, &b, 1e-5).unwrap()
            })
        });
        group.bench_with_input(BenchmarkId::new("affine", &shape), &(), |bch, _| {
            iter(bch, || x.affine(2.0, 1.0).unwrap())
        });
        group.throughput(Throughput::Bytes((rows * cols * elem * 3) as u64));
        group.bench_with_input(BenchmarkId::new("mul", &shape), &(), |bch, _| {
            iter(bch, || (&x * &dy).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("fused_bwd", &shape), &(), |bch, _| {
            iter(bch, || {
                candle_nn::ops::layer_norm_bwd(&x, Some(&w), &dy, 1e-5, true).unwrap()
            })
        });
        group.throughput(Throughput::Bytes((rows * cols * elem * 5) as u64));
        group.bench_with_input(BenchmarkId::new("fused_fwd_bwd", &shape), &(), |bch, _| {
            iter(bch, || {
                let y = candle_nn::ops::layer_norm(&xv, &wv, &bv, 1e-5).unwrap();
                (y * &dy).unwrap().backward().unwrap()
            })
        });
        group.bench_with_input(
            BenchmarkId::new("composite_fwd_bwd", &shape),
            &(),
            |bch, _| {
                iter(bch, || {
                    let y = candle_nn::ops::layer_norm_slow(&xv, &wv, &bv, 1e-5).unwrap();
                    (y * &dy).unwrap().backward().unwrap()
                })
            },
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
