//! Gated residual network with LayerNorm: shapes, and gradients reach the LayerNorm's
//! weight and bias (and every other GRN parameter), with and without a context.

use candle_core::{DType, Device, Tensor};
use tft::grn::Grn;
use tft::init::SeededVarMap;

fn input(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| (((i as u64 * 2654435761 + seed * 97) % 1000) as f32 / 500.0) - 1.0)
        .collect();
    Tensor::from_vec(v, shape, &Device::Cpu).unwrap()
}

fn check_all_grads(params: &SeededVarMap, loss: &Tensor) {
    let grads = loss.backward().unwrap();
    let vars = params.named_vars();
    assert!(vars.iter().any(|(n, _)| n.ends_with("norm.weight")));
    assert!(vars.iter().any(|(n, _)| n.ends_with("norm.bias")));
    for (name, var) in vars {
        let g = grads
            .get(var.as_tensor())
            .unwrap_or_else(|| panic!("no gradient for {name}"));
        let m = g
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!(m > 0.0 && m.is_finite(), "gradient of {name} is {m}");
    }
}

#[test]
fn grn_with_projection_skip_and_context() {
    let params = SeededVarMap::new(1);
    let vb = params.var_builder(DType::F32, &Device::Cpu);
    let grn = Grn::new(5, 16, 8, Some(4), vb.pp("grn")).unwrap();
    let x = input(&[3, 7, 5], 1);
    let c = input(&[3, 4], 2);
    let y = grn.forward(&x, Some(&c)).unwrap();
    assert_eq!(y.dims(), &[3, 7, 8]);
    // LayerNorm output with unit weight and zero bias: zero mean per row.
    let row_mean = y.mean(2).unwrap().abs().unwrap().max_all().unwrap();
    assert!(row_mean.to_scalar::<f32>().unwrap() < 1e-4);
    // Weighted loss so the LayerNorm bias/weight gradients are not trivially zero.
    let w = input(&[3, 7, 8], 3);
    check_all_grads(&params, &(y * w).unwrap().sum_all().unwrap());
}

#[test]
fn grn_identity_skip_without_context_2d() {
    let params = SeededVarMap::new(2);
    let vb = params.var_builder(DType::F32, &Device::Cpu);
    let grn = Grn::new(8, 8, 8, None, vb.pp("grn")).unwrap();
    let x = input(&[5, 8], 4);
    let y = grn.forward(&x, None).unwrap();
    assert_eq!(y.dims(), &[5, 8]);
    let w = input(&[5, 8], 5);
    check_all_grads(&params, &(y * w).unwrap().sum_all().unwrap());
    // Calling without the context it was built with (or vice versa) is an error.
    assert!(grn.forward(&x, Some(&input(&[5, 8], 6))).is_err());
}
