//! The stock `candle_nn::LayerNorm` (built with `candle_nn::layer_norm`) must pass gradients
//! to its weight, its bias and its input. On stock candle 0.9.1 the contiguous forward goes
//! through `candle_nn::ops::layer_norm`, a custom op without a backward, and all three vanish.

use candle_core::{DType, Device, Module, Result, Tensor, Var, D};
use candle_nn::{VarBuilder, VarMap};

fn max_abs(t: &Tensor) -> Result<f32> {
    t.abs()?.max_all()?.to_scalar::<f32>()
}

/// The same LayerNorm written with differentiable elementary ops (the reference).
fn reference(x: &Tensor, w: &Tensor, b: &Tensor, eps: f64) -> Result<Tensor> {
    let n = x.dim(D::Minus1)? as f64;
    let mean = (x.sum_keepdim(D::Minus1)? / n)?;
    let xc = x.broadcast_sub(&mean)?;
    let var = (xc.sqr()?.sum_keepdim(D::Minus1)? / n)?;
    xc.broadcast_div(&(var + eps)?.sqrt()?)?
        .broadcast_mul(w)?
        .broadcast_add(b)
}

fn main() -> Result<()> {
    let dev = Device::Cpu;
    let (rows, hidden, eps) = (6usize, 16usize, 1e-5);
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &dev);
    let ln = candle_nn::layer_norm(hidden, eps, vb.pp("ln"))?; // the stock module type
    let data = varmap.data().lock().unwrap();
    let w = data["ln.weight"].clone();
    let b = data["ln.bias"].clone();
    drop(data);
    // Non-trivial affine parameters so every gradient term matters.
    let wv: Vec<f32> = (0..hidden).map(|i| 0.5 + 0.1 * i as f32).collect();
    let bv: Vec<f32> = (0..hidden).map(|i| 0.05 * i as f32 - 0.3).collect();
    w.set(&Tensor::from_vec(wv, hidden, &dev)?)?;
    b.set(&Tensor::from_vec(bv, hidden, &dev)?)?;
    let xv: Vec<f32> = (0..rows * hidden)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.17)
        .collect();
    let x = Var::from_tensor(&Tensor::from_vec(xv, (rows, hidden), &dev)?)?;
    // A loss that weights every output differently.
    let g: Vec<f32> = (0..rows * hidden)
        .map(|i| ((i * 13 % 7) as f32 - 3.0) * 0.25)
        .collect();
    let g = Tensor::from_vec(g, (rows, hidden), &dev)?;

    let y = ln.forward(x.as_tensor())?;
    let grads = (&y * &g)?.sum_all()?.backward()?;
    let y_ref = reference(x.as_tensor(), w.as_tensor(), b.as_tensor(), eps)?;
    let grads_ref = (&y_ref * &g)?.sum_all()?.backward()?;

    let mut ok = true;
    let fwd = max_abs(&(&y - &y_ref)?)?;
    println!("forward   max |y - y_ref| = {fwd:.3e}");
    ok &= fwd < 1e-4;
    for (name, t) in [
        ("input", x.as_tensor()),
        ("weight", w.as_tensor()),
        ("bias", b.as_tensor()),
    ] {
        let want = grads_ref.get(t).expect("reference gradient");
        match grads.get(t) {
            None => {
                println!("grad {name:<6}: MISSING (the gradient was dropped)");
                ok = false;
            }
            Some(got) => {
                let (mag, err) = (max_abs(got)?, max_abs(&(got - want)?)?);
                let good = mag > 0.0 && err <= 1e-4 * (1.0 + max_abs(want)?);
                println!(
                    "grad {name:<6}: max |g| = {mag:.3e}, max |g - g_ref| = {err:.3e} {}",
                    if good { "ok" } else { "WRONG" }
                );
                ok &= good;
            }
        }
    }
    if !ok {
        eprintln!("downstream: FAIL — candle_nn::LayerNorm does not propagate gradients");
        std::process::exit(1);
    }
    println!("downstream: OK");
    Ok(())
}
