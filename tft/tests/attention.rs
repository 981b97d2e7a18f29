//! Interpretable multi-head attention followed by the gated skip + LayerNorm.

use candle_core::{DType, Device, IndexOp, Tensor};
use tft::attention::InterpretableMultiHeadAttention;
use tft::grn::GateAddNorm;
use tft::init::SeededVarMap;

fn input(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| (((i as u64 * 2654435761 + seed * 97) % 1000) as f32 / 500.0) - 1.0)
        .collect();
    Tensor::from_vec(v, shape, &Device::Cpu).unwrap()
}

fn max_abs(t: &Tensor) -> f32 {
    t.abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}

#[test]
fn attention_with_layer_norm_shapes_causality_and_gradients() {
    let (b, t, h, heads) = (2, 9, 16, 4);
    let params = SeededVarMap::new(3);
    let vb = params.var_builder(DType::F32, &Device::Cpu);
    let mha = InterpretableMultiHeadAttention::new(h, heads, vb.pp("mha")).unwrap();
    let gate = GateAddNorm::new(h, h, vb.pp("post_attn")).unwrap();
    let x = input(&[b, t, h], 1);
    let (a, w) = mha.forward(&x).unwrap();
    assert_eq!(a.dims(), &[b, t, h]);
    assert_eq!(w.dims(), &[b, t, t]);
    // Rows of the averaged attention are distributions, and causal.
    let row_sums = w.sum(2).unwrap().affine(1.0, -1.0).unwrap();
    assert!(max_abs(&row_sums) < 1e-5);
    let w0 = w.i(0).unwrap().to_vec2::<f32>().unwrap();
    for (i, row) in w0.iter().enumerate() {
        for (j, &p) in row.iter().enumerate() {
            if j > i {
                assert!(p < 1e-12, "attention to the future at ({i},{j}): {p}");
            }
        }
    }
    // Changing the last step does not change earlier outputs.
    let x2 = x
        .slice_assign(&[0..b, t - 1..t, 0..h], &input(&[b, 1, h], 9))
        .unwrap();
    let (a2, _) = mha.forward(&x2).unwrap();
    let d_past =
        max_abs(&(a.narrow(1, 0, t - 1).unwrap() - a2.narrow(1, 0, t - 1).unwrap()).unwrap());
    let d_last =
        max_abs(&(a.narrow(1, t - 1, 1).unwrap() - a2.narrow(1, t - 1, 1).unwrap()).unwrap());
    assert!(d_past < 1e-6, "past outputs changed by {d_past}");
    assert!(d_last > 1e-6);

    let y = gate.forward(&a, &x).unwrap();
    assert_eq!(y.dims(), &[b, t, h]);
    let loss = (y * input(&[b, t, h], 7)).unwrap().sum_all().unwrap();
    let grads = loss.backward().unwrap();
    for (name, var) in params.named_vars() {
        let g = grads
            .get(var.as_tensor())
            .unwrap_or_else(|| panic!("no gradient for {name}"));
        assert!(max_abs(g) > 0.0, "zero gradient for {name}");
    }
}
