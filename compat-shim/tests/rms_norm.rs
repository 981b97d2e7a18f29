//! `RmsNorm` / `rms_norm_op` with both backends (the kernel only when compiled with `kernel`)
//! against an independent f64 reference of y, dx and dweight, the module built like
//! `candle_nn::rms_norm`, and clear errors for bad arguments.

mod common;

use candle_core::{DType, Device, Module, Tensor, Var};
use candle_layer_norm_compat::{rms_norm, rms_norm_with_backend, Backend, RmsNorm};
use candle_nn::{VarBuilder, VarMap};
use common::*;

// Exactly representable in f32: the fused kernel takes eps as f32 (see `ops::layer_norm`), 1e-5
// would differ from the f64 reference by ~1e-11 relative on rows of tiny mean square.
const EPS: f64 = 1.0 / 131072.0;

/// y, dx, dw of `sum(y * dy)` for rows of `n` in f64.
fn reference(x: &[f64], w: &[f64], dy: &[f64], n: usize) -> [Vec<f64>; 3] {
    let (mut y, mut dx, mut dw) = (vec![], vec![], vec![0.; n]);
    for (xr, gr) in x.chunks(n).zip(dy.chunks(n)) {
        let r = 1. / (xr.iter().map(|v| v * v).sum::<f64>() / n as f64 + EPS).sqrt();
        let mean_gx = (0..n).map(|i| gr[i] * w[i] * xr[i]).sum::<f64>() / n as f64;
        for i in 0..n {
            y.push(xr[i] * r * w[i]);
            dx.push(r * (gr[i] * w[i] - xr[i] * r * r * mean_gx));
            dw[i] += gr[i] * xr[i] * r;
        }
    }
    [y, dx, dw]
}

#[test]
fn rms_norm_matches_f64_reference_both_backends() {
    let mut rng = Rng::new(7);
    for dev in devices() {
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            for (rows, n) in [(3, 1), (5, 17), (4, 256), (2, 1000)] {
                let x = rng.normals(rows * n, 0.3, 1.5);
                let w = rng.normals(n, 1., 0.3);
                let dy = rng.normals(rows * n, 0., 1.);
                // The reference sees the inputs rounded to the tested dtype.
                let (xt, wt) = (
                    tensor(&x, &[rows, n], dtype, &dev),
                    tensor(&w, &[n], dtype, &dev),
                );
                let dyt = tensor(&dy, &[rows, n], dtype, &dev);
                let want = reference(&values(&xt), &values(&wt), &values(&dyt), n);
                for backend in [Backend::Auto, Backend::Composite] {
                    let (xv, wv) = (
                        Var::from_tensor(&xt).unwrap(),
                        Var::from_tensor(&wt).unwrap(),
                    );
                    let y = rms_norm_with_backend(backend, &xv, &wv, EPS).unwrap();
                    let grads = (&y * &dyt).unwrap().backward().unwrap();
                    let dx = grads.get(&xv).expect("no gradient for x");
                    let dw = grads.get(&wv).expect("no gradient for the weight");
                    let what = format!("{backend:?} {dev:?} {dtype:?} {rows}x{n}");
                    // Two roundings in the dtype for y (normalized value, then the weight).
                    let tol = 2. * tol(dtype);
                    assert_close(&format!("y {what}"), &values(&y), &want[0], tol);
                    assert_close(&format!("dx {what}"), &values(dx), &want[1], tol);
                    assert_close(&format!("dw {what}"), &values(dw), &want[2], tol);
                }
            }
        }
    }
}

/// Built like `candle_nn::rms_norm` (same parameter name and init), same output as the stock
/// module, and trainable: the weight and a strided input get gradients.
#[test]
fn module_is_a_drop_in_for_candle_nn_rms_norm() {
    let dev = Device::Cpu;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &dev);
    let ours: RmsNorm = rms_norm(8, EPS, vb.pp("norm")).unwrap();
    let stock = candle_nn::rms_norm(8, EPS, vb.pp("norm")).unwrap();
    assert_eq!(
        varmap.all_vars().len(),
        1,
        "the two share the one `norm.weight`"
    );
    let x = Var::from_tensor(&Tensor::randn(0f32, 1., (8, 3), &dev).unwrap()).unwrap();
    let xs = x.t().unwrap(); // strided
    let y = ours.forward(&xs).unwrap();
    let y_stock = stock.forward(&xs).unwrap();
    assert_close(
        "y vs candle_nn::RmsNorm",
        &values(&y),
        &values(&y_stock),
        tol(DType::F32),
    );
    let grads = y.sqr().unwrap().backward().unwrap();
    assert!(grads.get(&x).is_some(), "no gradient for the input");
    assert!(
        grads.get(ours.weight()).is_some(),
        "no gradient for the weight"
    );
}

#[test]
fn bad_arguments_are_errors() {
    let dev = Device::Cpu;
    let x = Tensor::zeros((2, 4), DType::F32, &dev).unwrap();
    let short = Tensor::ones(3, DType::F32, &dev).unwrap();
    let e = rms_norm_with_backend(Backend::Auto, &x, &short, EPS).unwrap_err();
    assert!(
        e.to_string().contains("[3]") && e.to_string().contains("[4]"),
        "{e}"
    );
    let half = Tensor::ones(4, DType::F16, &dev).unwrap();
    let e = rms_norm_with_backend(Backend::Auto, &x, &half, EPS).unwrap_err();
    assert!(e.to_string().contains("to_dtype"), "{e}");
    let scalar = Tensor::new(1f32, &dev).unwrap();
    assert!(rms_norm_with_backend(Backend::Composite, &scalar, &short, EPS).is_err());
}
