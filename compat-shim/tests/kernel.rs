//! Feature `kernel`: the fused kernel and the composite agree (forward and every gradient), and
//! the runtime override really switches the implementation.
#![cfg(feature = "kernel")]

mod common;

use candle_core::{DType, Device};
use candle_layer_norm_compat::{kernel_compiled, ops, Backend};
use common::*;

#[test]
fn kernel_and_composite_agree_all_dtypes_shapes_affine() {
    assert!(kernel_compiled());
    for dev in devices() {
        for dtype in DTYPES {
            for (si, (shape, k)) in shapes().into_iter().enumerate() {
                for (ai, affine) in AFFINE.into_iter().enumerate() {
                    let case = Case::random(
                        500 + (si * 16 + ai) as u64,
                        &shape,
                        k,
                        affine,
                        dtype,
                        0.5,
                        2.0,
                    );
                    let what = format!("{dev:?} {dtype:?} {shape:?} k={k} {affine:?}");
                    let kern = case.run(Backend::Auto, &dev).expect(&what);
                    let comp = case.run(Backend::Composite, &dev).expect(&what);
                    // Each within tol of the truth, and of each other (both round the same f32
                    // value once for f16/bf16; f32/f64 differ by summation order only).
                    let want = case.reference();
                    assert_outputs(&format!("kernel {what}"), &kern, &want, case.tol());
                    assert_outputs(&format!("composite {what}"), &comp, &want, case.tol());
                    assert_outputs(
                        &format!("kernel vs composite {what}"),
                        &kern,
                        &comp,
                        case.tol(),
                    );
                }
            }
        }
    }
}

/// Wider rows and more rows than the shared shape list (tiers of the fused kernel).
#[test]
fn kernel_and_composite_agree_wide_rows() {
    for dev in devices() {
        for dtype in [DType::F32, DType::BF16] {
            for (seed, shape) in [
                (1u64, [256usize, 64]),
                (2, [64, 1000]),
                (3, [8, 4096]),
                (4, [4, 5000]),
            ] {
                let case = Case::random(seed, &shape, 1, (true, true), dtype, 0.0, 1.0);
                let kern = case.run(Backend::Auto, &dev).unwrap();
                let comp = case.run(Backend::Composite, &dev).unwrap();
                assert_outputs(
                    &format!("{dev:?} {dtype:?} {shape:?}"),
                    &kern,
                    &comp,
                    case.tol(),
                );
            }
        }
    }
}

/// `Auto` really is the fused op: bit-identical to calling `layer_norm_opt` directly, and
/// within rounding of the composite.
#[test]
fn auto_uses_the_fused_kernel() -> candle_core::Result<()> {
    let mut rng = Rng::new(9);
    let x = tensor(
        &rng.normals(64 * 333, 3.0, 2.0),
        &[64, 333],
        DType::F32,
        &Device::Cpu,
    );
    let a = ops::layer_norm_with_backend(Backend::Auto, &x, &[333], None, None, 1e-5)?;
    let c = ops::layer_norm_with_backend(Backend::Composite, &x, &[333], None, None, 1e-5)?;
    let direct = candle_nn::ops::layer_norm_opt(&x, None, None, 1e-5)?;
    assert_close("auto == layer_norm_opt", &values(&a), &values(&direct), 0.0);
    assert_close("auto ~ composite", &values(&a), &values(&c), 1e-5);
    Ok(())
}

/// The large-mean requirement applied to the fused kernel (composite: tests/composite.rs).
#[test]
fn large_mean_rows_f32_kernel() {
    for dev in devices() {
        check_large_mean_rows(Backend::Auto, &dev);
    }
}
