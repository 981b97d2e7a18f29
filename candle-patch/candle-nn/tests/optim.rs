#[cfg(feature = "mkl")]
extern crate intel_mkl_src;

#[cfg(feature = "accelerate")]
extern crate accelerate_src;

use candle::test_utils::{to_vec0_round, to_vec2_round};

use anyhow::Result;
use candle::{DType, Device, Tensor, Var};
use candle_nn::{AdamW, Linear, Module, Optimizer, ParamsAdamW, SGD};

#[test]
fn sgd_optim() -> Result<()> {
    let x = Var::new(0f32, &Device::Cpu)?;
    let mut sgd = SGD::new(vec![x.clone()], 0.1)?;
    let xt = x.as_tensor();
    for _step in 0..100 {
        let loss = ((xt - 4.2)? * (xt - 4.2)?)?;
        sgd.backward_step(&loss)?
    }
    assert_eq!(x.to_scalar::<f32>()?, 4.199999);
    Ok(())
}

/* The results of this test have been checked against the following PyTorch code.
    import torch
    from torch import optim

    w_gen = torch.tensor([[3., 1.]])
    b_gen = torch.tensor([-2.])

    sample_xs = torch.tensor([[2., 1.], [7., 4.], [-4., 12.], [5., 8.]])
    sample_ys = sample_xs.matmul(w_gen.t()) + b_gen

    m = torch.nn.Linear(2, 1)
    with torch.no_grad():
        m.weight.zero_()
        m.bias.zero_()
    optimizer = optim.SGD(m.parameters(), lr=0.004, momentum=0.)
    for _step in range(1000):
        optimizer.zero_grad()
        ys = m(sample_xs)
        loss = ((ys - sample_ys)**2).sum()
        loss.backward()
        optimizer.step()
    print(m.weight)
    print(m.bias)
*/
#[test]
fn sgd_linear_regression() -> Result<()> {
    // Generate some linear data, y = 3.x1 + x2 - 2.
    let w_gen = Tensor::new(&[[3f32, 1.]], &Device::Cpu)?;
    let b_gen = Tensor::new(-2f32, &Device::Cpu)?;
    let gen = Linear::new(w_gen, Some(b_gen));
    let sample_xs = Tensor::new(&[[2f32, 1.], [7., 4.], [-4., 12.], [5., 8.]], &Device::Cpu)?;
    let sample_ys = gen.forward(&sample_xs)?;

    // Now use backprop to run a linear regression between samples and get the coefficients back.
    let w = Var::new(&[[0f32, 0.]], &Device::Cpu)?;
    let b = Var::new(0f32, &Device::Cpu)?;
    let mut sgd = SGD::new(vec![w.clone(), b.clone()], 0.004)?;
    let lin = Linear::new(w.as_tensor().clone(), Some(b.as_tensor().clone()));
    for _step in 0..1000 {
        let ys = lin.forward(&sample_xs)?;
        let loss = ys.sub(&sample_ys)?.sqr()?.sum_all()?;
        sgd.backward_step(&loss)?;
    }
    assert_eq!(w.to_vec2::<f32>()?, &[[2.9983196, 0.99790204]]);
    assert_eq!(b.to_scalar::<f32>()?, -1.9796902);
    Ok(())
}

/* The following test returns the same values as the PyTorch code below.
import torch
from torch import optim

w_gen = torch.tensor([[3., 1.]])
b_gen = torch.tensor([-2.])

sample_xs = torch.tensor([[2., 1.], [7., 4.], [-4., 12.], [5., 8.]])
sample_ys = sample_xs.matmul(w_gen.t()) + b_gen

m = torch.nn.Linear(2, 1)
with torch.no_grad():
    m.weight.zero_()
    m.bias.zero_()
optimizer = optim.AdamW(m.parameters(), lr=0.1)
for _step in range(100):
    optimizer.zero_grad()
    ys = m(sample_xs)
    loss = ((ys - sample_ys)**2).sum()
    loss.backward()
    optimizer.step()
print(m.weight)
print(m.bias)
*/
#[test]
fn adamw_linear_regression() -> Result<()> {
    let w_gen = Tensor::new(&[[3f32, 1.]], &Device::Cpu)?;
    let b_gen = Tensor::new(-2f32, &Device::Cpu)?;
    let gen = Linear::new(w_gen, Some(b_gen));
    let sample_xs = Tensor::new(&[[2f32, 1.], [7., 4.], [-4., 12.], [5., 8.]], &Device::Cpu)?;
    let sample_ys = gen.forward(&sample_xs)?;

    // Now use backprop to run a linear regression between samples and get the coefficients back.
    let w = Var::new(&[[0f32, 0.]], &Device::Cpu)?;
    let b = Var::new(0f32, &Device::Cpu)?;
    let params = ParamsAdamW {
        lr: 0.1,
        ..Default::default()
    };
    let mut opt = AdamW::new(vec![w.clone(), b.clone()], params)?;
    let lin = Linear::new(w.as_tensor().clone(), Some(b.as_tensor().clone()));
    for _step in 0..100 {
        let ys = lin.forward(&sample_xs)?;
        let loss = ys.sub(&sample_ys)?.sqr()?.sum_all()?;
        opt.backward_step(&loss)?;
    }
    assert_eq!(to_vec2_round(w.as_tensor(), 4)?, &[[2.7257, 0.7097]]);
    assert_eq!(to_vec0_round(b.as_tensor(), 4)?, 0.7873);
    Ok(())
}

#[test]
fn adamw_linear_regression_varmap() -> Result<()> {
    use candle_nn::Init::Const;

    // Similar as the previous test but using a VarMap.
    let w_gen = Tensor::new(&[[3f32, 1.]], &Device::Cpu)?;
    let b_gen = Tensor::new(-2f32, &Device::Cpu)?;
    let gen = Linear::new(w_gen, Some(b_gen));
    let sample_xs = Tensor::new(&[[2f32, 1.], [7., 4.], [-4., 12.], [5., 8.]], &Device::Cpu)?;
    let sample_ys = gen.forward(&sample_xs)?;

    let mut var_map = candle_nn::VarMap::new();

    let w = var_map.get((1, 2), "w", Const(0.), DType::F32, &Device::Cpu)?;
    let b = var_map.get((), "b", Const(0.), DType::F32, &Device::Cpu)?;
    let params = ParamsAdamW {
        lr: 0.1,
        ..Default::default()
    };
    let mut opt = AdamW::new(var_map.all_vars(), params)?;
    let lin = Linear::new(w, Some(b));
    for _step in 0..100 {
        let ys = lin.forward(&sample_xs)?;
        let loss = ys.sub(&sample_ys)?.sqr()?.sum_all()?;
        opt.backward_step(&loss)?;
    }
    assert_eq!(to_vec2_round(lin.weight(), 4)?, &[[2.7257, 0.7097]]);
    assert_eq!(to_vec0_round(lin.bias().unwrap(), 4)?, 0.7873);

    var_map.set([("w", Tensor::zeros((1, 2), DType::F32, &Device::Cpu)?)].into_iter())?;
    var_map.set([("b", Tensor::ones((), DType::F32, &Device::Cpu)?)].into_iter())?;

    assert_eq!(to_vec2_round(lin.weight(), 4)?, &[[0., 0.]]);
    assert_eq!(to_vec0_round(lin.bias().unwrap(), 4)?, 1.);
    Ok(())
}

/// AdamW with the tensor ops of candle-nn's original implementation, one parameter.
struct AdamWReference {
    var: Var,
    m: Tensor,
    v: Tensor,
    t: i32,
    p: ParamsAdamW,
}

impl AdamWReference {
    fn step(&mut self, g: &Tensor) -> Result<()> {
        self.t += 1;
        let p = &self.p;
        let scale_m = 1f64 / (1f64 - p.beta1.powi(self.t));
        let scale_v = 1f64 / (1f64 - p.beta2.powi(self.t));
        self.m = ((&self.m * p.beta1)? + (g * (1.0 - p.beta1))?)?;
        self.v = ((&self.v * p.beta2)? + (g.sqr()? * (1.0 - p.beta2))?)?;
        let m_hat = (&self.m * scale_m)?;
        let v_hat = (&self.v * scale_v)?;
        let next = (self.var.as_tensor() * (1f64 - p.lr * p.weight_decay))?;
        let adjusted = (m_hat / (v_hat.sqrt()? + p.eps)?)?;
        self.var.set(&(next - (adjusted * p.lr)?)?)?;
        Ok(())
    }
}

/// The fused AdamW (cpu and cuda, f32 and f64) and its tensor-op fallback (other dtypes) give
/// the values of the original tensor ops, step after step, for parameters of several shapes
/// (one of them without a gradient, which must not move).
fn adamw_matches_tensor_ops(dev: &Device) -> Result<()> {
    let params = ParamsAdamW {
        lr: 0.01,
        beta1: 0.8,
        beta2: 0.95,
        eps: 1e-6,
        weight_decay: 0.1,
    };
    let dtypes: &[DType] = if dev.is_metal() {
        &[DType::F32, DType::BF16]
    } else {
        &[DType::F32, DType::F64, DType::BF16]
    };
    for &dtype in dtypes {
        let shapes: [&[usize]; 4] = [&[1], &[7], &[3, 5], &[2, 300, 9]];
        let init: Vec<Tensor> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let n: usize = s.iter().product();
                let v: Vec<f64> = (0..n)
                    .map(|j| ((i * 31 + j * 7) % 23) as f64 / 7. - 1.5)
                    .collect();
                Ok(Tensor::new(v, dev)?.reshape(*s)?.to_dtype(dtype)?)
            })
            .collect::<Result<_>>()?;
        let vars: Vec<Var> = init
            .iter()
            .map(Var::from_tensor)
            .collect::<candle::Result<_>>()?;
        let mut opt = AdamW::new(vars.clone(), params.clone())?;
        let mut refs: Vec<AdamWReference> = init
            .iter()
            .map(|t| {
                Ok(AdamWReference {
                    var: Var::from_tensor(t)?,
                    m: t.zeros_like()?,
                    v: t.zeros_like()?,
                    t: 0,
                    p: params.clone(),
                })
            })
            .collect::<Result<_>>()?;
        let frozen = vars.len() - 1;
        for step in 0..5 {
            // Gradients of sum(x^3 + step * x): 3x^2 + step, for all but the last parameter.
            let loss = vars[..frozen]
                .iter()
                .map(|x| {
                    ((x.powf(3.)? + (x.as_tensor() * step as f64)?)?.sum_all()?)
                        .to_dtype(DType::F32)
                })
                .collect::<candle::Result<Vec<_>>>()?;
            let loss = Tensor::stack(&loss, 0)?.sum_all()?;
            let grads = loss.backward()?;
            opt.step(&grads)?;
            for (r, x) in refs[..frozen].iter_mut().zip(&vars) {
                let g = grads.get(x).expect("no gradient");
                r.step(g)?;
            }
            for (i, (r, x)) in refs.iter().zip(&vars).enumerate() {
                let (want, got) = (r.var.to_dtype(DType::F64)?, x.to_dtype(DType::F64)?);
                let diff = (&want - &got)?.abs()?.max_all()?.to_scalar::<f64>()?;
                let scale = want.abs()?.max_all()?.to_scalar::<f64>()?.max(1.);
                // CPU: the same f32/f64 roundings in the same order (exact); CUDA: one rounding
                // per op too, the tolerance only covers sqrt/div implementations.
                let tol = match dtype {
                    DType::F64 => 1e-14,
                    _ => 4. * f32::EPSILON as f64,
                };
                assert!(
                    diff <= tol * scale,
                    "{dtype:?} parameter {i} after step {step}: max diff {diff:e}"
                );
            }
        }
        let frozen_now = vars[frozen].to_dtype(DType::F64)?;
        let frozen_init = init[frozen].to_dtype(DType::F64)?;
        let moved = (frozen_now - frozen_init)?
            .abs()?
            .max_all()?
            .to_scalar::<f64>()?;
        assert_eq!(moved, 0., "{dtype:?}: a parameter without gradient moved");
    }
    Ok(())
}

candle::test_device!(
    adamw_matches_tensor_ops,
    adamw_matches_tensor_ops_cpu,
    adamw_matches_tensor_ops_gpu,
    adamw_matches_tensor_ops_metal
);
