//! CPU: the fused layer norm against the composite `layer_norm_slow`, forward and forward +
//! backward through autograd.

use candle_core::{Device, Tensor, Var};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn bench(c: &mut Criterion) {
    let dev = Device::Cpu;
    let mut group = c.benchmark_group("layer_norm_cpu");
    for (rows, cols) in [(4096usize, 64usize), (1024, 1024), (64, 16384)] {
        let x = Tensor::randn(0f32, 1., (rows, cols), &dev).unwrap();
        let w = Tensor::randn(1f32, 0.1, cols, &dev).unwrap();
        let b = Tensor::randn(0f32, 0.1, cols, &dev).unwrap();
        let dy = Tensor::randn(0f32, 1., (rows, cols), &dev).unwrap();
        let (xv, wv, bv) = (
            Var::from_tensor(&x).unwrap(),
            Var::from_tensor(&w).unwrap(),
            Var::from_tensor(&b).unwrap(),
        );
        let shape = format!("{rows}x{cols}");
        group.throughput(Throughput::Bytes((rows * cols * 4 * 2) as u64));
        group.bench_with_input(BenchmarkId::new("fused_fwd", &shape), &(), |bch, _| {
            bch.iter(|| candle_nn::ops::layer_norm(&x, &w, &b, 1e-5).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("composite_fwd", &shape), &(), |bch, _| {
            bch.iter(|| candle_nn::ops::layer_norm_slow(&x, &w, &b, 1e-5).unwrap())
        });
        group.throughput(Throughput::Bytes((rows * cols * 4 * 5) as u64));
        group.bench_with_input(BenchmarkId::new("fused_fwd_bwd", &shape), &(), |bch, _| {
            bch.iter(|| {
                let y = candle_nn::ops::layer_norm(&xv, &wv, &bv, 1e-5).unwrap();
                (y * &dy).unwrap().backward().unwrap()
            })
        });
        group.bench_with_input(
            BenchmarkId::new("composite_fwd_bwd", &shape),
            &(),
            |bch, _| {
                bch.iter(|| {
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
