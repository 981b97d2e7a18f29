#[cfg(feature = "mkl")]
extern crate intel_mkl_src;

#[cfg(feature = "accelerate")]
extern crate accelerate_src;

use candle::{test_utils::to_vec2_round, DType, Device, IndexOp, Result, Tensor};
use candle_nn::RNN;

/* The following test can be verified against PyTorch using the following snippet.
import torch
from torch import nn
lstm = nn.LSTM(2, 3, 1)
lstm.weight_ih_l0 = torch.nn.Parameter(torch.arange(0., 24.).reshape(12, 2).cos())
lstm.weight_hh_l0 = torch.nn.Parameter(torch.arange(0., 36.).reshape(12, 3).sin())
lstm.bias_ih_l0 = torch.nn.Parameter(torch.tensor([-1., 1., -0.5, 2, -1, 1, -0.5, 2, -1, 1, -0.5, 2]))
lstm.bias_hh_l0 = torch.nn.Parameter(torch.tensor([-1., 1., -0.5, 2, -1, 1, -0.5, 2, -1, 1, -0.5, 2]).cos())
state = torch.zeros((1, 3)), torch.zeros((1, 3))
for inp in [3., 1., 4., 1., 5., 9., 2.]:
    inp = torch.tensor([[inp, inp * 0.5]])
    _out, state = lstm(inp, state)
print(state)
# (tensor([[ 0.9919,  0.1738, -0.1451]], grad_fn=...), tensor([[ 5.7250,  0.4458, -0.2908]], grad_fn=...))
*/
#[test]
fn lstm() -> Result<()> {
    let cpu = &Device::Cpu;
    let w_ih = Tensor::arange(0f32, 24f32, cpu)?.reshape((12, 2))?;
    let w_ih = w_ih.cos()?;
    let w_hh = Tensor::arange(0f32, 36f32, cpu)?.reshape((12, 3))?;
    let w_hh = w_hh.sin()?;
    let b_ih = Tensor::new(
        &[-1f32, 1., -0.5, 2., -1., 1., -0.5, 2., -1., 1., -0.5, 2.],
        cpu,
    )?;
    let b_hh = b_ih.cos()?;
    let tensors: std::collections::HashMap<_, _> = [
        ("weight_ih_l0".to_string(), w_ih),
        ("weight_hh_l0".to_string(), w_hh),
        ("bias_ih_l0".to_string(), b_ih),
        ("bias_hh_l0".to_string(), b_hh),
    ]
    .into_iter()
    .collect();
    let vb = candle_nn::VarBuilder::from_tensors(tensors, DType::F32, cpu);
    let lstm = candle_nn::lstm(2, 3, Default::default(), vb)?;
    let mut state = lstm.zero_state(1)?;
    for inp in [3f32, 1., 4., 1., 5., 9., 2.] {
        let inp = Tensor::new(&[[inp, inp * 0.5]], cpu)?;
        state = lstm.step(&inp, &state)?
    }
    let h = state.h();
    let c = state.c();
    assert_eq!(to_vec2_round(h, 4)?, &[[0.9919, 0.1738, -0.1451]]);
    assert_eq!(to_vec2_round(c, 4)?, &[[5.725, 0.4458, -0.2908]]);
    Ok(())
}

/* The following test can be verified against PyTorch using the following snippet.
import torch
from torch import nn
gru = nn.GRU(2, 3, 1)
gru.weight_ih_l0 = torch.nn.Parameter(torch.arange(0., 18.).reshape(9, 2).cos())
gru.weight_hh_l0 = torch.nn.Parameter(torch.arange(0., 27.).reshape(9, 3).sin())
gru.bias_ih_l0 = torch.nn.Parameter(torch.tensor([-1., 1., -0.5, 2, -1, 1, -0.5, 2, -1]))
gru.bias_hh_l0 = torch.nn.Parameter(torch.tensor([-1., 1., -0.5, 2, -1, 1, -0.5, 2, -1]).cos())
state = torch.zeros((1, 3))
for inp in [3., 1., 4., 1., 5., 9., 2.]:
    inp = torch.tensor([[inp, inp * 0.5]])
    _out, state = gru(inp, state)
print(state)
# tensor([[ 0.0579,  0.8836, -0.9991]], grad_fn=<SqueezeBackward1>)
*/
#[test]
fn gru() -> Result<()> {
    let cpu = &Device::Cpu;
    let w_ih = Tensor::arange(0f32, 18f32, cpu)?.reshape((9, 2))?;
    let w_ih = w_ih.cos()?;
    let w_hh = Tensor::arange(0f32, 27f32, cpu)?.reshape((9, 3))?;
    let w_hh = w_hh.sin()?;
    let b_ih = Tensor::new(&[-1f32, 1., -0.5, 2., -1., 1., -0.5, 2., -1.], cpu)?;
    let b_hh = b_ih.cos()?;
    let tensors: std::collections::HashMap<_, _> = [
        ("weight_ih_l0".to_string(), w_ih),
        ("weight_hh_l0".to_string(), w_hh),
        ("bias_ih_l0".to_string(), b_ih),
        ("bias_hh_l0".to_string(), b_hh),
    ]
    .into_iter()
    .collect();
    let vb = candle_nn::VarBuilder::from_tensors(tensors, DType::F32, cpu);
    let gru = candle_nn::gru(2, 3, Default::default(), vb)?;
    let mut state = gru.zero_state(1)?;
    for inp in [3f32, 1., 4., 1., 5., 9., 2.] {
        let inp = Tensor::new(&[[inp, inp * 0.5]], cpu)?;
        state = gru.step(&inp, &state)?
    }
    let h = state.h();
    assert_eq!(to_vec2_round(h, 4)?, &[[0.0579, 0.8836, -0.9991]]);
    Ok(())
}

/// The LSTM cell with tensor ops, as `LSTM::step` computes it without the fused op.
fn lstm_cell_reference(gates: &Tensor, c_prev: &Tensor) -> Result<(Tensor, Tensor)> {
    let chunks = gates.chunk(4, 1)?;
    let i = candle_nn::ops::sigmoid(&chunks[0])?;
    let f = candle_nn::ops::sigmoid(&chunks[1])?;
    let g = chunks[2].tanh()?;
    let o = candle_nn::ops::sigmoid(&chunks[3])?;
    let c = ((f * c_prev)? + (i * g)?)?;
    let h = (o * c.tanh()?)?;
    Ok((h, c))
}

/// The fused LSTM cell gives the values and gradients (of the gates and of the previous cell
/// state) of the tensor-op cell.
fn lstm_cell_matches_tensor_ops(dev: &Device) -> Result<()> {
    let dtypes: &[DType] = if dev.is_metal() {
        &[DType::F32]
    } else {
        &[DType::F32, DType::F64]
    };
    let (b, h) = (3, 5);
    let det = |n: usize, k: usize| -> Vec<f64> {
        (0..n)
            .map(|j| ((j * k + 3) % 17) as f64 / 4. - 2.)
            .collect()
    };
    for &dtype in dtypes {
        let gates = Tensor::new(det(b * 4 * h, 7), dev)?.reshape((b, 4 * h))?;
        let c_prev = Tensor::new(det(b * h, 5), dev)?.reshape((b, h))?;
        let wh = Tensor::new(det(b * h, 3), dev)?.reshape((b, h))?;
        let wc = Tensor::new(det(b * h, 11), dev)?.reshape((b, h))?;
        let (gates, c_prev, wh, wc) = (
            candle::Var::from_tensor(&gates.to_dtype(dtype)?)?,
            candle::Var::from_tensor(&c_prev.to_dtype(dtype)?)?,
            wh.to_dtype(dtype)?,
            wc.to_dtype(dtype)?,
        );
        let mut results = vec![];
        for fused in [true, false] {
            let (h1, c1) = if fused {
                candle_nn::rnn::lstm_cell(&gates, &c_prev)?
            } else {
                lstm_cell_reference(&gates, &c_prev)?
            };
            let loss = ((&h1 * &wh)?.sum_all()? + (&c1 * &wc)?.sum_all()?)?;
            let grads = loss.backward()?;
            let dg = grads.get(&gates).expect("no grad for the gates").clone();
            let dc = grads.get(&c_prev).expect("no grad for c_prev").clone();
            results.push([h1, c1, dg, dc]);
        }
        // Without gradients, h and c are not views of the buffer holding the gate activations.
        let (h0, c0) = candle_nn::rnn::lstm_cell(&gates.detach(), &c_prev.detach())?;
        for t in [&h0, &c0] {
            assert_eq!(t.layout().start_offset(), 0, "{dtype:?}: inference h/c");
            if let candle::Storage::Cpu(s) = &*t.storage_and_layout().0 {
                let held = match dtype {
                    DType::F64 => s.as_slice::<f64>()?.len(),
                    _ => s.as_slice::<f32>()?.len(),
                };
                assert_eq!(held, b * h, "{dtype:?}: storage behind inference h/c");
            }
        }
        let tol = if dtype == DType::F64 { 1e-12 } else { 1e-5 };
        for (k, name) in ["h", "c", "d gates", "d c_prev"].iter().enumerate() {
            let (got, want) = (&results[0][k], &results[1][k]);
            assert_eq!(got.dims(), want.dims(), "{name}");
            let diff = (got - want)?.abs()?.max_all()?.to_dtype(DType::F64)?;
            let diff = diff.to_scalar::<f64>()?;
            assert!(diff <= tol, "{dtype:?} {name}: max diff {diff:e}");
        }
    }
    Ok(())
}

candle::test_device!(
    lstm_cell_matches_tensor_ops,
    lstm_cell_matches_tensor_ops_cpu,
    lstm_cell_matches_tensor_ops_gpu,
    lstm_cell_matches_tensor_ops_metal
);

/// `LSTM::seq_init` (one input projection for the whole sequence) gives the values and the
/// gradients of calling `step` for each time step.
fn lstm_seq_matches_steps(dev: &Device) -> Result<()> {
    let dtype = if dev.is_metal() {
        DType::F32
    } else {
        DType::F64
    };
    let (b, t, f, h) = (2, 5, 3, 4);
    let vm = candle_nn::VarMap::new();
    let vb = candle_nn::VarBuilder::from_varmap(&vm, dtype, dev);
    let cfg = candle_nn::LSTMConfig {
        b_hh_init: Some(candle_nn::Init::Uniform { lo: -0.5, up: 0.5 }),
        b_ih_init: Some(candle_nn::Init::Uniform { lo: -0.5, up: 0.5 }),
        ..Default::default()
    };
    let lstm = candle_nn::lstm(f, h, cfg, vb)?;
    let x: Vec<f64> = (0..b * t * f)
        .map(|i| ((i * 5) % 13) as f64 / 6. - 1.)
        .collect();
    let x = candle::Var::from_tensor(&Tensor::new(x, dev)?.reshape((b, t, f))?.to_dtype(dtype)?)?;
    let init = lstm.zero_state(b)?;
    let mut results = vec![];
    for by_step in [false, true] {
        let states = if by_step {
            let mut states: Vec<candle_nn::rnn::LSTMState> = vec![];
            for s in 0..t {
                let xs = x.i((.., s, ..))?.contiguous()?;
                let prev = states.last().unwrap_or(&init).clone();
                states.push(lstm.step(&xs, &prev)?);
            }
            states
        } else {
            lstm.seq_init(&x, &init)?
        };
        let out = lstm.states_to_tensor(&states)?;
        let last_c = &states[t - 1].c;
        let loss = ((out.sqr()?.sum_all()? + last_c.sum_all()?)? + out.sum_all()?)?;
        let grads = loss.backward()?;
        let mut r = vec![
            out.flatten_all()?,
            grads.get(&x).expect("no grad for x").flatten_all()?,
        ];
        for (_, v) in vm.data().lock().unwrap().iter() {
            r.push(grads.get(v).expect("no grad for a weight").flatten_all()?);
        }
        results.push(r);
    }
    let tol = if dtype == DType::F64 { 1e-12 } else { 1e-5 };
    for (k, (got, want)) in results[0].iter().zip(&results[1]).enumerate() {
        let diff = (got - want)?.abs()?.max_all()?.to_dtype(DType::F64)?;
        let diff = diff.to_scalar::<f64>()?;
        assert!(diff <= tol, "tensor {k}: max diff {diff:e}");
    }
    Ok(())
}

candle::test_device!(
    lstm_seq_matches_steps,
    lstm_seq_matches_steps_cpu,
    lstm_seq_matches_steps_gpu,
    lstm_seq_matches_steps_metal
);

/// `LSTM::seq_output` (the recurrence as one op on cpu and cuda) against `LSTM::step` for
/// each step: outputs, last state and the gradients of the input, the initial state and the
/// weights.
fn lstm_seq_output_matches_steps(dev: &Device) -> Result<()> {
    let dtypes: &[DType] = if dev.is_metal() {
        &[DType::F32]
    } else {
        &[DType::F64, DType::F32]
    };
    for &dtype in dtypes {
        for (b, t, f, h) in [(3, 7, 4, 5), (2, 1, 3, 4), (1, 3, 2, 33)] {
            let vm = candle_nn::VarMap::new();
            let vb = candle_nn::VarBuilder::from_varmap(&vm, dtype, dev);
            let cfg = candle_nn::LSTMConfig {
                b_hh_init: Some(candle_nn::Init::Uniform { lo: -0.5, up: 0.5 }),
                b_ih_init: Some(candle_nn::Init::Uniform { lo: -0.5, up: 0.5 }),
                ..Default::default()
            };
            let lstm = candle_nn::lstm(f, h, cfg, vb)?;
            let var = |len: usize, k: usize, shape: &[usize]| -> Result<candle::Var> {
                let v: Vec<f64> = (0..len).map(|i| ((i * k) % 13) as f64 / 6. - 1.).collect();
                candle::Var::from_tensor(&Tensor::new(v, dev)?.reshape(shape)?.to_dtype(dtype)?)
            };
            let x = var(b * t * f, 5, &[b, t, f])?;
            let (h0, c0) = (var(b * h, 7, &[b, h])?, var(b * h, 3, &[b, h])?);
            let init =
                candle_nn::rnn::LSTMState::new(h0.as_tensor().clone(), c0.as_tensor().clone());
            let mut results = vec![];
            for by_step in [false, true] {
                let (out, last) = if by_step {
                    let mut states: Vec<candle_nn::rnn::LSTMState> = vec![];
                    for s in 0..t {
                        let xs = x.i((.., s, ..))?.contiguous()?;
                        let prev = states.last().unwrap_or(&init).clone();
                        states.push(lstm.step(&xs, &prev)?);
                    }
                    (lstm.states_to_tensor(&states)?, states[t - 1].clone())
                } else {
                    lstm.seq_output(&x, &init)?
                };
                assert_eq!(out.dims(), [b, t, h]);
                // A transposed view would fail in a cuda matmul downstream.
                assert!(out.is_contiguous(), "the output is not contiguous");
                let loss = (out.sqr()?.sum_all()? + out.sum_all()?)?;
                let loss = ((loss + (last.c() * 0.5)?.sum_all()?)? + last.h().sqr()?.sum_all()?)?;
                let grads = loss.backward()?;
                let mut r = vec![
                    out.flatten_all()?,
                    last.h().flatten_all()?,
                    last.c().flatten_all()?,
                ];
                for v in [&x, &h0, &c0] {
                    r.push(grads.get(v).expect("no grad for an input").flatten_all()?);
                }
                for (_, v) in vm.data().lock().unwrap().iter() {
                    r.push(grads.get(v).expect("no grad for a weight").flatten_all()?);
                }
                results.push(r);
            }
            let tol = if dtype == DType::F64 { 1e-12 } else { 2e-5 };
            for (k, (got, want)) in results[0].iter().zip(&results[1]).enumerate() {
                let scale = want
                    .abs()?
                    .max_all()?
                    .to_dtype(DType::F64)?
                    .to_scalar::<f64>()?;
                let diff = (got - want)?.abs()?.max_all()?.to_dtype(DType::F64)?;
                let diff = diff.to_scalar::<f64>()?;
                assert!(
                    diff <= tol * scale.max(1.),
                    "{dtype:?} {:?} tensor {k}: max diff {diff:e}",
                    (b, t, f, h)
                );
            }
        }
    }
    // Clear errors for what cannot work.
    let vb = candle_nn::VarBuilder::zeros(DType::F32, dev);
    let lstm = candle_nn::lstm(2, 3, Default::default(), vb)?;
    let init = lstm.zero_state(4)?;
    let err = lstm.seq_output(&Tensor::zeros((4, 0, 2), DType::F32, dev)?, &init);
    assert!(err.unwrap_err().to_string().contains("without time steps"));
    let err = lstm.seq_output(&Tensor::zeros((5, 2, 2), DType::F32, dev)?, &init);
    assert!(err.unwrap_err().to_string().contains("initial h"));
    Ok(())
}

candle::test_device!(
    lstm_seq_output_matches_steps,
    lstm_seq_output_matches_steps_cpu,
    lstm_seq_output_matches_steps_gpu,
    lstm_seq_output_matches_steps_metal
);
