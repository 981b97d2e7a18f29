//! Module API (drop-in for candle_nn::LayerNorm), deprecated aliases, backend switch, errors.

mod common;

use std::collections::HashMap;

use candle_core::{DType, Device, Module, Tensor, Var};
use candle_layer_norm_compat as lnc;
use candle_nn::{LayerNormConfig, VarBuilder, VarMap};
use common::*;
use lnc::{ops, Backend, LayerNorm};

#[test]
fn varbuilder_parameter_names_match_candle_nn() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    for affine in [true, false] {
        let config = LayerNormConfig {
            eps: 1e-5,
            remove_mean: true,
            affine,
        };
        let ours = VarMap::new();
        let ln = lnc::layer_norm(
            8,
            config,
            VarBuilder::from_varmap(&ours, DType::F32, &dev).pp("ln"),
        )?;
        let theirs = VarMap::new();
        candle_nn::layer_norm(
            8,
            config,
            VarBuilder::from_varmap(&theirs, DType::F32, &dev).pp("ln"),
        )?;
        let names = |m: &VarMap| {
            let mut v: Vec<String> = m.data().lock().unwrap().keys().cloned().collect();
            v.sort();
            v
        };
        assert_eq!(names(&ours), names(&theirs));
        assert_eq!(
            ln.bias().is_some(),
            affine,
            "affine: false -> weight, no bias"
        );
        assert_eq!(values(ln.weight()), vec![1.0; 8]);
        if let Some(b) = ln.bias() {
            assert_eq!(values(b), vec![0.0; 8]);
        }
    }
    let no_bias = lnc::layer_norm_no_bias(
        8,
        1e-6,
        VarBuilder::from_varmap(&VarMap::new(), DType::F32, &dev),
    )?;
    assert!(no_bias.bias().is_none());
    assert_eq!(no_bias.eps(), 1e-6);
    let rms = LayerNormConfig {
        eps: 1e-5,
        remove_mean: false,
        affine: false,
    };
    assert!(lnc::layer_norm(
        8,
        rms,
        VarBuilder::from_varmap(&VarMap::new(), DType::F32, &dev)
    )
    .is_err());
    Ok(())
}

/// A checkpoint written for candle_nn::LayerNorm loads and gives the same forward.
#[test]
fn loads_candle_nn_checkpoint_and_matches_its_forward() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let mut rng = Rng::new(5);
    let h = 24;
    let mut ts = HashMap::new();
    ts.insert(
        "enc.ln.weight".to_string(),
        tensor(&rng.normals(h, 1.0, 0.3), &[h], DType::F32, &dev),
    );
    ts.insert(
        "enc.ln.bias".to_string(),
        tensor(&rng.normals(h, 0.0, 0.3), &[h], DType::F32, &dev),
    );
    let vb = VarBuilder::from_tensors(ts, DType::F32, &dev);
    let ours = lnc::layer_norm(h, 1e-5, vb.pp("enc").pp("ln"))?;
    let theirs = candle_nn::layer_norm(h, 1e-5, vb.pp("enc").pp("ln"))?;
    let x = tensor(
        &rng.normals(3 * 5 * h, 0.2, 1.0),
        &[3, 5, h],
        DType::F32,
        &dev,
    );
    assert_close(
        "vs candle_nn",
        &values(&ours.forward(&x)?),
        &values(&theirs.forward(&x)?),
        1e-5,
    );
    Ok(())
}

/// The bug this crate exists for: gradients reach the input and the parameters.
#[test]
fn module_is_differentiable() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let mut rng = Rng::new(6);
    let w = Var::from_tensor(&tensor(&rng.normals(10, 1.0, 0.2), &[10], DType::F32, &dev))?;
    let b = Var::from_tensor(&tensor(&rng.normals(10, 0.0, 0.2), &[10], DType::F32, &dev))?;
    let x = Var::from_tensor(&tensor(
        &rng.normals(40, 0.0, 1.0),
        &[4, 10],
        DType::F32,
        &dev,
    ))?;
    let ln = LayerNorm::new(w.as_tensor().clone(), b.as_tensor().clone(), 1e-5);
    assert_eq!(ln.normalized_shape(), &[10]);
    let dy = tensor(&rng.normals(40, 0.0, 1.0), &[4, 10], DType::F32, &dev);
    let y = ln.forward(x.as_tensor())?;
    let grads = (&y * &dy)?.backward()?;
    for (name, v) in [("x", &x), ("weight", &w), ("bias", &b)] {
        let g = grads
            .get(v.as_tensor())
            .unwrap_or_else(|| panic!("no gradient for {name}"));
        assert!(
            values(g).iter().any(|v| *v != 0.0),
            "zero gradient for {name}"
        );
    }
    Ok(())
}

/// A weight of shape [a, b] normalizes the last two dims, like PyTorch's normalized_shape.
#[test]
fn module_multi_dim_matches_functional() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let mut rng = Rng::new(8);
    let w = tensor(&rng.normals(12, 1.0, 0.2), &[3, 4], DType::F32, &dev);
    let x = tensor(&rng.normals(2 * 12, 0.0, 1.0), &[2, 3, 4], DType::F32, &dev);
    let ln = LayerNorm::new_no_bias(w.clone(), 1e-5);
    assert_eq!(ln.normalized_shape(), &[3, 4]);
    let a = ln.forward(&x)?;
    let b = ops::layer_norm(&x, &[3, 4], Some(&w), None, 1e-5)?;
    assert_close("module vs ops", &values(&a), &values(&b), 0.0);
    Ok(())
}

#[test]
#[allow(deprecated)]
fn deprecated_aliases_still_work() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let mut rng = Rng::new(10);
    let w = tensor(&rng.normals(6, 1.0, 0.2), &[6], DType::F32, &dev);
    let b = tensor(&rng.normals(6, 0.0, 0.2), &[6], DType::F32, &dev);
    let x = tensor(&rng.normals(18, 0.0, 1.0), &[3, 6], DType::F32, &dev);
    let want = values(&ops::layer_norm(&x, &[6], Some(&w), Some(&b), 1e-5)?);
    let m: lnc::CudaLayerNorm = lnc::CudaLayerNorm::new(w.clone(), b.clone(), 1e-5);
    assert_close("CudaLayerNorm", &values(&m.forward(&x)?), &want, 0.0);
    let y = lnc::cuda_layer_norm(&x, &[6], Some(&w), Some(&b), 1e-5)?;
    assert_close("cuda_layer_norm", &values(&y), &want, 0.0);
    let y = lnc::layer_norm_with_fallback(&x, &[6], Some(&w), Some(&b), 1e-5)?;
    assert_close("layer_norm_with_fallback", &values(&y), &want, 0.0);
    Ok(())
}

/// The only test in this binary touching the global backend (others pass it explicitly).
#[test]
fn set_backend_and_kernel_compiled() {
    assert_eq!(lnc::kernel_compiled(), cfg!(feature = "kernel"));
    assert_eq!(Backend::default(), Backend::Auto);
    lnc::set_backend(Backend::Composite);
    assert_eq!(lnc::backend(), Backend::Composite);
    lnc::set_backend(Backend::Auto);
    assert_eq!(lnc::backend(), Backend::Auto);
}

#[test]
fn bad_input_is_an_error_not_a_panic() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let x = Tensor::zeros((2, 3, 4), DType::F32, &dev)?;
    let w4 = Tensor::ones(4, DType::F32, &dev)?;
    let w5 = Tensor::ones(5, DType::F32, &dev)?;
    let w4_f64 = Tensor::ones(4, DType::F64, &dev)?;
    let w34 = Tensor::ones((3, 4), DType::F32, &dev)?;
    let scalar = Tensor::new(1f32, &dev)?;
    let ints = Tensor::zeros((2, 4), DType::U32, &dev)?;
    for backend in [Backend::Auto, Backend::Composite] {
        let err =
            |x: &Tensor, ns: &[usize], w: Option<&Tensor>, b: Option<&Tensor>, needle: &str| {
                let e = ops::layer_norm_with_backend(backend, x, ns, w, b, 1e-5)
                    .expect_err(needle)
                    .to_string();
                assert!(e.contains(needle), "error {e:?} should mention {needle:?}");
            };
        err(&x, &[4], Some(&w5), None, "weight has shape [5]");
        err(&x, &[4], None, Some(&w5), "bias has shape [5]");
        err(&x, &[4], Some(&w4_f64), None, "dtype");
        err(&x, &[4], None, Some(&w4_f64), "dtype");
        err(&x, &[3], None, None, "does not match the trailing dims");
        err(&x, &[2, 4], None, None, "does not match the trailing dims");
        err(
            &x,
            &[9, 2, 3, 4],
            None,
            None,
            "does not match the trailing dims",
        );
        err(&x, &[], None, None, "must not be empty");
        err(&scalar, &[1], None, None, "rank-0");
        err(&ints, &[4], None, None, "unsupported dtype");
        err(
            &x,
            &[3, 4],
            Some(&w4),
            None,
            "expected normalized_shape [3, 4]",
        );
        // The module reports the same errors.
        assert!(LayerNorm::new(w5.clone(), w5.clone(), 1e-5)
            .forward(&x)
            .is_err());
        assert!(ops::layer_norm_with_backend(backend, &x, &[3, 4], Some(&w34), None, 1e-5).is_ok());
    }
    Ok(())
}
