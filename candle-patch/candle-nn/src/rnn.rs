//! Recurrent Neural Networks
use candle::{DType, Device, IndexOp, Result, Tensor};

/// Trait for Recurrent Neural Networks.
#[allow(clippy::upper_case_acronyms)]
pub trait RNN {
    type State: Clone;

    /// A zero state from which the recurrent network is usually initialized.
    fn zero_state(&self, batch_dim: usize) -> Result<Self::State>;

    /// Applies a single step of the recurrent network.
    ///
    /// The input should have dimensions [batch_size, features].
    fn step(&self, input: &Tensor, state: &Self::State) -> Result<Self::State>;

    /// Applies multiple steps of the recurrent network.
    ///
    /// The input should have dimensions [batch_size, seq_len, features].
    /// The initial state is the result of applying zero_state.
    fn seq(&self, input: &Tensor) -> Result<Vec<Self::State>> {
        let batch_dim = input.dim(0)?;
        let state = self.zero_state(batch_dim)?;
        self.seq_init(input, &state)
    }

    /// Applies multiple steps of the recurrent network.
    ///
    /// The input should have dimensions [batch_size, seq_len, features].
    fn seq_init(&self, input: &Tensor, init_state: &Self::State) -> Result<Vec<Self::State>> {
        let (_b_size, seq_len, _features) = input.dims3()?;
        let mut output = Vec::with_capacity(seq_len);
        for seq_index in 0..seq_len {
            let input = input.i((.., seq_index, ..))?.contiguous()?;
            let state = if seq_index == 0 {
                self.step(&input, init_state)?
            } else {
                self.step(&input, &output[seq_index - 1])?
            };
            output.push(state);
        }
        Ok(output)
    }

    /// Converts a sequence of state to a tensor.
    fn states_to_tensor(&self, states: &[Self::State]) -> Result<Tensor>;
}

/// The state for a LSTM network, this contains two tensors.
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone)]
pub struct LSTMState {
    pub h: Tensor,
    pub c: Tensor,
}

impl LSTMState {
    pub fn new(h: Tensor, c: Tensor) -> Self {
        LSTMState { h, c }
    }

    /// The hidden state vector, which is also the output of the LSTM.
    pub fn h(&self) -> &Tensor {
        &self.h
    }

    /// The cell state vector.
    pub fn c(&self) -> &Tensor {
        &self.c
    }
}

#[derive(Debug, Clone, Copy)]
pub enum Direction {
    Forward,
    Backward,
}

#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy)]
pub struct LSTMConfig {
    pub w_ih_init: super::Init,
    pub w_hh_init: super::Init,
    pub b_ih_init: Option<super::Init>,
    pub b_hh_init: Option<super::Init>,
    pub layer_idx: usize,
    pub direction: Direction,
}

impl Default for LSTMConfig {
    fn default() -> Self {
        Self {
            w_ih_init: super::init::DEFAULT_KAIMING_UNIFORM,
            w_hh_init: super::init::DEFAULT_KAIMING_UNIFORM,
            b_ih_init: Some(super::Init::Const(0.)),
            b_hh_init: Some(super::Init::Const(0.)),
            layer_idx: 0,
            direction: Direction::Forward,
        }
    }
}

impl LSTMConfig {
    pub fn default_no_bias() -> Self {
        Self {
            w_ih_init: super::init::DEFAULT_KAIMING_UNIFORM,
            w_hh_init: super::init::DEFAULT_KAIMING_UNIFORM,
            b_ih_init: None,
            b_hh_init: None,
            layer_idx: 0,
            direction: Direction::Forward,
        }
    }
}

/// A Long Short-Term Memory (LSTM) layer.
///
/// <https://en.wikipedia.org/wiki/Long_short-term_memory>
#[allow(clippy::upper_case_acronyms)]
#[derive(Clone, Debug)]
pub struct LSTM {
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Option<Tensor>,
    b_hh: Option<Tensor>,
    hidden_dim: usize,
    config: LSTMConfig,
    device: Device,
    dtype: DType,
}

impl LSTM {
    /// Creates a LSTM layer.
    pub fn new(
        in_dim: usize,
        hidden_dim: usize,
        config: LSTMConfig,
        vb: crate::VarBuilder,
    ) -> Result<Self> {
        let layer_idx = config.layer_idx;
        let direction_str = match config.direction {
            Direction::Forward => "",
            Direction::Backward => "_reverse",
        };
        let w_ih = vb.get_with_hints(
            (4 * hidden_dim, in_dim),
            &format!("weight_ih_l{layer_idx}{direction_str}"), // Only a single layer is supported.
            config.w_ih_init,
        )?;
        let w_hh = vb.get_with_hints(
            (4 * hidden_dim, hidden_dim),
            &format!("weight_hh_l{layer_idx}{direction_str}"), // Only a single layer is supported.
            config.w_hh_init,
        )?;
        let b_ih = match config.b_ih_init {
            Some(init) => Some(vb.get_with_hints(
                4 * hidden_dim,
                &format!("bias_ih_l{layer_idx}{direction_str}"),
                init,
            )?),
            None => None,
        };
        let b_hh = match config.b_hh_init {
            Some(init) => Some(vb.get_with_hints(
                4 * hidden_dim,
                &format!("bias_hh_l{layer_idx}{direction_str}"),
                init,
            )?),
            None => None,
        };
        Ok(Self {
            w_ih,
            w_hh,
            b_ih,
            b_hh,
            hidden_dim,
            config,
            device: vb.device().clone(),
            dtype: vb.dtype(),
        })
    }

    pub fn config(&self) -> &LSTMConfig {
        &self.config
    }

    /// The outputs of all the steps, `[batch, seq_len, hidden]` (contiguous), and the last
    /// state for an input `[batch, seq_len, features]` and an initial state: the same as
    /// [`RNN::seq_init`] then [`RNN::states_to_tensor`]. On cpu and cuda for f32 and f64 the
    /// recurrence is one op forward and one backward (a gemm and a fused cell per step inside
    /// it, no tensor per step), and the gradient of the recurrent weights one matmul.
    pub fn seq_output(
        &self,
        input: &Tensor,
        init_state: &LSTMState,
    ) -> Result<(Tensor, LSTMState)> {
        let (b_size, seq_len, _) = input.dims3()?;
        let hidden = self.hidden_dim;
        if seq_len == 0 {
            candle::bail!("lstm: an input {:?} without time steps", input.shape())
        }
        for (name, t) in [("h", &init_state.h), ("c", &init_state.c)] {
            if t.dims() != [b_size, hidden] || t.dtype() != self.dtype {
                candle::bail!(
                    "lstm: an initial {name} {:?} {:?} for an input {:?}, expected [{b_size}, {hidden}] {:?}",
                    t.shape(),
                    t.dtype(),
                    input.shape(),
                    self.dtype
                )
            }
        }
        if !lstm_cell_fused(&self.device, self.dtype) {
            let states = self.seq_init(input, init_state)?;
            let out = self.states_to_tensor(&states)?;
            return Ok((out, states[seq_len - 1].clone()));
        }
        let xg = self.input_projection(input)?;
        let state0 = Tensor::stack(&[&init_state.h, &init_state.c], 0)?;
        let out = xg.apply_op3(&self.w_hh.contiguous()?, &state0, LstmSeq)?;
        let hs = out.get(0)?;
        let (h, c) = (hs.get(seq_len)?, out.get(1)?.get(seq_len)?);
        let hs = hs.narrow(0, 1, seq_len)?.transpose(0, 1)?.contiguous()?;
        if out.track_op() {
            // The backward reads the gate activations in `out`: h and c stay views of it.
            Ok((hs, LSTMState { h, c }))
        } else {
            let (h, c) = (h.force_contiguous()?, c.force_contiguous()?);
            Ok((hs, LSTMState { h, c }))
        }
    }

    /// The input projection of all the steps with both biases, `[seq_len, batch, 4 * hidden]`
    /// (the slice of a step is contiguous).
    fn input_projection(&self, input: &Tensor) -> Result<Tensor> {
        let (b_size, seq_len, features) = input.dims3()?;
        let xg = input
            .reshape((b_size * seq_len, features))?
            .matmul(&self.w_ih.t()?)?;
        let xg = match &self.b_ih {
            None => xg,
            Some(b_ih) => xg.broadcast_add(b_ih)?,
        };
        let xg = match &self.b_hh {
            None => xg,
            Some(b_hh) => xg.broadcast_add(b_hh)?,
        };
        xg.reshape((b_size, seq_len, 4 * self.hidden_dim))?
            .transpose(0, 1)?
            .contiguous()
    }
}

/// Creates a LSTM layer.
pub fn lstm(
    in_dim: usize,
    hidden_dim: usize,
    config: LSTMConfig,
    vb: crate::VarBuilder,
) -> Result<LSTM> {
    LSTM::new(in_dim, hidden_dim, config, vb)
}

impl RNN for LSTM {
    type State = LSTMState;

    fn zero_state(&self, batch_dim: usize) -> Result<Self::State> {
        let zeros =
            Tensor::zeros((batch_dim, self.hidden_dim), self.dtype, &self.device)?.contiguous()?;
        Ok(Self::State {
            h: zeros.clone(),
            c: zeros.clone(),
        })
    }

    fn step(&self, input: &Tensor, in_state: &Self::State) -> Result<Self::State> {
        let w_ih = input.matmul(&self.w_ih.t()?)?;
        let w_hh = in_state.h.matmul(&self.w_hh.t()?)?;
        let w_ih = match &self.b_ih {
            None => w_ih,
            Some(b_ih) => w_ih.broadcast_add(b_ih)?,
        };
        let w_hh = match &self.b_hh {
            None => w_hh,
            Some(b_hh) => w_hh.broadcast_add(b_hh)?,
        };
        let (h, c) = lstm_cell(&(&w_ih + &w_hh)?, &in_state.c)?;
        Ok(LSTMState { c, h })
    }

    /// As the default: `step` for each time step, but the input projection (and both biases)
    /// of all the steps is one matmul, and each step reads a contiguous slice of it.
    fn seq_init(&self, input: &Tensor, init_state: &Self::State) -> Result<Vec<Self::State>> {
        let seq_len = input.dim(1)?;
        let xg = self.input_projection(input)?;
        let w_hh_t = self.w_hh.t()?;
        let mut output: Vec<LSTMState> = Vec::with_capacity(seq_len);
        for seq_index in 0..seq_len {
            let state = match output.last() {
                None => init_state,
                Some(state) => state,
            };
            let gates = (xg.get(seq_index)? + state.h.matmul(&w_hh_t)?)?;
            let (h, c) = lstm_cell(&gates, &state.c)?;
            output.push(LSTMState { h, c });
        }
        Ok(output)
    }

    fn states_to_tensor(&self, states: &[Self::State]) -> Result<Tensor> {
        let states = states.iter().map(|s| s.h.clone()).collect::<Vec<_>>();
        Tensor::stack(&states, 1)
    }
}

/// The LSTM cell as one op: `(gates [b, 4h], c_prev [b, h]) -> (h, c)`, with `gates` the
/// pre-activations of the input, forget, cell and output gates (PyTorch's order).
/// Differentiable: one fused op forward and one backward on cpu and cuda for f32 and f64,
/// tensor ops otherwise. [`LSTM::step`] uses it.
pub fn lstm_cell(gates: &Tensor, c_prev: &Tensor) -> Result<(Tensor, Tensor)> {
    let (b, h) = c_prev.dims2()?;
    if gates.dims() != [b, 4 * h] || gates.dtype() != c_prev.dtype() {
        candle::bail!(
            "lstm cell: gates {:?} {:?} for a cell state {:?} {:?}",
            gates.shape(),
            gates.dtype(),
            c_prev.shape(),
            c_prev.dtype()
        )
    }
    if !lstm_cell_fused(gates.device(), gates.dtype()) {
        let chunks = gates.chunk(4, 1)?;
        let in_gate = crate::ops::sigmoid(&chunks[0])?;
        let forget_gate = crate::ops::sigmoid(&chunks[1])?;
        let cell_gate = chunks[2].tanh()?;
        let out_gate = crate::ops::sigmoid(&chunks[3])?;
        let next_c = ((forget_gate * c_prev)? + (in_gate * cell_gate)?)?;
        let next_h = (out_gate * next_c.tanh()?)?;
        return Ok((next_h, next_c));
    }
    let out = gates
        .contiguous()?
        .apply_op2(&c_prev.contiguous()?, LstmCell)?;
    let (h, c) = (out.get(0)?, out.get(1)?);
    if gates.track_op() || c_prev.track_op() {
        // The backward reads the gate activations in `out`: h and c stay views of it.
        Ok((h, c))
    } else {
        // Without a backward, h and c alone stay alive, not the activations.
        Ok((h.force_contiguous()?, c.force_contiguous()?))
    }
}

/// Whether [`lstm_cell`] has fused kernels for tensors of this device and dtype.
fn lstm_cell_fused(device: &Device, dtype: DType) -> bool {
    (device.is_cpu() || device.is_cuda()) && matches!(dtype, DType::F32 | DType::F64)
}

struct LstmCell;

/// The forward writes `[6, b, h]`: h, c, then the activated input, forget, cell and output
/// gates, which the backward reads. The backward: `(out, c_prev, grad [6, b, h])` to the
/// gradient of `gates` followed by that of `c_prev`, flat (the gradients of the gate slices
/// of `out` are zero: they are only read by the backward).
struct LstmCellBwd;

fn sigmoid_f<T: num_traits::Float>(x: T) -> T {
    T::one() / (T::one() + (-x).exp())
}

/// One cell element from the pre-activations of the input, forget, cell and output gates:
/// `[h, c, i, f, g, o]`.
fn cell_fwd<T: num_traits::Float>(g: [T; 4], c_prev: T) -> [T; 6] {
    let (i, f) = (sigmoid_f(g[0]), sigmoid_f(g[1]));
    let (gg, o) = (g[2].tanh(), sigmoid_f(g[3]));
    let c = f * c_prev + i * gg;
    [o * c.tanh(), c, i, f, gg, o]
}

/// The backward of [`cell_fwd`] from its saved `[c, i, f, g, o]`, `c_prev` and the gradients
/// of h and c: the gradients of the four gates and of `c_prev`.
fn cell_bwd<T: num_traits::Float>(saved: [T; 5], c_prev: T, dh: T, dc: T) -> ([T; 4], T) {
    let one = T::one();
    let [c, i, f, gg, o] = saved;
    let tc = c.tanh();
    let dc = dc + dh * o * (one - tc * tc);
    let d_gates = [
        dc * gg * i * (one - i),
        dc * c_prev * f * (one - f),
        dc * i * (one - gg * gg),
        dh * tc * o * (one - o),
    ];
    (d_gates, dc * f)
}

fn lstm_cell_fwd_cpu<T: num_traits::Float>(gates: &[T], c_prev: &[T], h: usize) -> Vec<T> {
    let n = c_prev.len();
    let mut out = vec![T::zero(); 6 * n];
    for (row, g) in gates.chunks_exact(4 * h).enumerate() {
        for j in 0..h {
            let idx = row * h + j;
            let values = cell_fwd(std::array::from_fn(|k| g[k * h + j]), c_prev[idx]);
            for (k, v) in values.into_iter().enumerate() {
                out[k * n + idx] = v;
            }
        }
    }
    out
}

fn lstm_cell_bwd_cpu<T: num_traits::Float>(
    out: &[T],
    c_prev: &[T],
    grad: &[T],
    h: usize,
) -> Vec<T> {
    let n = c_prev.len();
    let mut d = vec![T::zero(); 5 * n];
    let (d_gates, d_c_prev) = d.split_at_mut(4 * n);
    for (row, dg) in d_gates.chunks_exact_mut(4 * h).enumerate() {
        for j in 0..h {
            let idx = row * h + j;
            let saved = std::array::from_fn(|k| out[(k + 1) * n + idx]);
            let (d_g, d_c) = cell_bwd(saved, c_prev[idx], grad[idx], grad[n + idx]);
            for (k, v) in d_g.into_iter().enumerate() {
                dg[k * h + j] = v;
            }
            d_c_prev[idx] = d_c;
        }
    }
    d
}

/// The contiguous slice of a cpu storage of type `T`.
fn lstm_slice<'a, T: candle::WithDType>(
    s: &'a candle::CpuStorage,
    l: &candle::Layout,
) -> Result<&'a [T]> {
    match l.contiguous_offsets() {
        Some((start, end)) => Ok(&s.as_slice::<T>()?[start..end]),
        None => candle::bail!("lstm: non-contiguous input"),
    }
}

/// Launches `{name}_{dtype}` with the contiguous inputs `args` and a new output of `out_len`
/// elements, over `n` = b * h threads.
#[cfg(feature = "cuda")]
fn lstm_cell_cuda(
    name: &str,
    args: &[(&candle::CudaStorage, &candle::Layout)],
    out_len: usize,
    (b, h): (usize, usize),
) -> Result<candle::CudaStorage> {
    use candle::backend::BackendStorage;
    use candle::cuda_backend::cudarc::driver::{DeviceRepr, LaunchConfig, PushKernelArg};
    use candle::cuda_backend::{kernel_name, kernels, CudaDType, WrapErr};
    fn launch<T: CudaDType + DeviceRepr + candle::WithDType>(
        name: &str,
        args: &[(&candle::CudaStorage, &candle::Layout)],
        out_len: usize,
        (b, h): (usize, usize),
    ) -> Result<candle::CudaStorage> {
        let dev = args[0].0.device().clone();
        let func = dev.get_or_load_func(&kernel_name::<T>(name), &kernels::RNN)?;
        let views = args
            .iter()
            .map(|(s, l)| match l.contiguous_offsets() {
                Some((start, end)) => Ok(s.as_cuda_slice::<T>()?.slice(start..end)),
                None => candle::bail!("lstm: non-contiguous input"),
            })
            .collect::<Result<Vec<_>>>()?;
        // SAFETY: every element is written by the kernel.
        let out = unsafe { dev.alloc::<T>(out_len)? };
        let blocks = (b * h).div_ceil(256).clamp(1, 65535 * 8) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut builder = func.builder();
        for v in views.iter() {
            builder.arg(v);
        }
        builder.arg(&out);
        builder.arg(&b);
        builder.arg(&h);
        // SAFETY: ffi; the sizes were checked by the caller.
        unsafe { builder.launch(cfg) }.w()?;
        Ok(candle::CudaStorage::wrap_cuda_slice(out, dev))
    }
    match args[0].0.dtype() {
        DType::F32 => launch::<f32>(name, args, out_len, (b, h)),
        DType::F64 => launch::<f64>(name, args, out_len, (b, h)),
        dt => candle::bail!("lstm cell: no fused kernel for {dt:?}"),
    }
}

/// `(b, h)` from the layouts of `gates` [b, 4h] and `c_prev` [b, h].
fn lstm_cell_dims(gates: &candle::Layout, c_prev: &candle::Layout) -> Result<(usize, usize)> {
    match (gates.dims(), c_prev.dims()) {
        (&[b1, h4], &[b, h]) if b1 == b && h4 == 4 * h => Ok((b, h)),
        (g, c) => candle::bail!("lstm cell: gates {g:?} for a cell state {c:?}"),
    }
}

/// `(b, h)` from the layouts of the forward's output [6, b, h], `c_prev` [b, h] and the
/// gradient of the output [6, b, h].
fn lstm_cell_bwd_dims(
    out: &candle::Layout,
    c_prev: &candle::Layout,
    grad: &candle::Layout,
) -> Result<(usize, usize)> {
    match (out.dims(), c_prev.dims(), grad.dims()) {
        (&[6, b1, h1], &[b, h], &[6, b2, h2]) if (b1, h1) == (b, h) && (b2, h2) == (b, h) => {
            Ok((b, h))
        }
        (o, c, g) => candle::bail!("lstm cell: backward of {o:?} {c:?} with a gradient {g:?}"),
    }
}

impl candle::CustomOp2 for LstmCell {
    fn name(&self) -> &'static str {
        "lstm-cell"
    }

    fn cpu_fwd(
        &self,
        s1: &candle::CpuStorage,
        l1: &candle::Layout,
        s2: &candle::CpuStorage,
        l2: &candle::Layout,
    ) -> Result<(candle::CpuStorage, candle::Shape)> {
        use candle::backend::BackendStorage;
        let (b, h) = lstm_cell_dims(l1, l2)?;
        let out = match s1.dtype() {
            DType::F32 => candle::CpuStorage::F32(lstm_cell_fwd_cpu(
                lstm_slice::<f32>(s1, l1)?,
                lstm_slice::<f32>(s2, l2)?,
                h,
            )),
            DType::F64 => candle::CpuStorage::F64(lstm_cell_fwd_cpu(
                lstm_slice::<f64>(s1, l1)?,
                lstm_slice::<f64>(s2, l2)?,
                h,
            )),
            dt => candle::bail!("lstm cell: no fused kernel for {dt:?}"),
        };
        Ok((out, (6, b, h).into()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle::CudaStorage,
        l1: &candle::Layout,
        s2: &candle::CudaStorage,
        l2: &candle::Layout,
    ) -> Result<(candle::CudaStorage, candle::Shape)> {
        let (b, h) = lstm_cell_dims(l1, l2)?;
        let out = lstm_cell_cuda("lstm_cell_fwd", &[(s1, l1), (s2, l2)], 6 * b * h, (b, h))?;
        Ok((out, (6, b, h).into()))
    }

    fn bwd(
        &self,
        _gates: &Tensor,
        c_prev: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let (b, h) = c_prev.dims2()?;
        let n = b * h;
        let packed = res.apply_op3_no_bwd(c_prev, &grad.contiguous()?, &LstmCellBwd)?;
        let d_gates = packed.narrow(0, 0, 4 * n)?.reshape((b, 4 * h))?;
        let d_c_prev = packed.narrow(0, 4 * n, n)?.reshape((b, h))?;
        Ok((Some(d_gates), Some(d_c_prev)))
    }
}

impl candle::CustomOp3 for LstmCellBwd {
    fn name(&self) -> &'static str {
        "lstm-cell-bwd"
    }

    fn cpu_fwd(
        &self,
        s1: &candle::CpuStorage,
        l1: &candle::Layout,
        s2: &candle::CpuStorage,
        l2: &candle::Layout,
        s3: &candle::CpuStorage,
        l3: &candle::Layout,
    ) -> Result<(candle::CpuStorage, candle::Shape)> {
        use candle::backend::BackendStorage;
        let (b, h) = lstm_cell_bwd_dims(l1, l2, l3)?;
        let out = match s1.dtype() {
            DType::F32 => candle::CpuStorage::F32(lstm_cell_bwd_cpu(
                lstm_slice::<f32>(s1, l1)?,
                lstm_slice::<f32>(s2, l2)?,
                lstm_slice::<f32>(s3, l3)?,
                h,
            )),
            DType::F64 => candle::CpuStorage::F64(lstm_cell_bwd_cpu(
                lstm_slice::<f64>(s1, l1)?,
                lstm_slice::<f64>(s2, l2)?,
                lstm_slice::<f64>(s3, l3)?,
                h,
            )),
            dt => candle::bail!("lstm cell: no fused kernel for {dt:?}"),
        };
        Ok((out, (5 * b * h).into()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle::CudaStorage,
        l1: &candle::Layout,
        s2: &candle::CudaStorage,
        l2: &candle::Layout,
        s3: &candle::CudaStorage,
        l3: &candle::Layout,
    ) -> Result<(candle::CudaStorage, candle::Shape)> {
        let (b, h) = lstm_cell_bwd_dims(l1, l2, l3)?;
        let args = [(s1, l1), (s2, l2), (s3, l3)];
        let out = lstm_cell_cuda("lstm_cell_bwd", &args, 5 * b * h, (b, h))?;
        Ok((out, (5 * b * h).into()))
    }
}

/// The recurrence of [`LSTM::seq_output`] as one op: `(xg [t, b, 4h], w_hh [4h, h],
/// state0 [2, b, h])` with `xg` the input projection of the steps (biases included) and
/// `state0` h0 then c0, to `[6, t + 1, b, h]`: h, c, then the activated input, forget, cell
/// and output gates, step s at index s + 1, index 0 holding h0 and c0 (and zero gates).
struct LstmSeq;

/// The backward of [`LstmSeq`] through the time steps: `(out, grad, w_hh)` with `grad` the
/// gradient of `out` (only its h and c planes are read) to the gradient of `xg`
/// (`t * b * 4h`) followed by those of h0 and c0 (`2 * b * h`), flat.
struct LstmSeqBwd;

/// `(t, b, h)` from the layouts of [`LstmSeq`]'s inputs.
fn lstm_seq_dims(
    xg: &candle::Layout,
    w_hh: &candle::Layout,
    state0: &candle::Layout,
) -> Result<(usize, usize, usize)> {
    match (xg.dims(), w_hh.dims(), state0.dims()) {
        (&[t, b1, h4], &[h4w, h1], &[2, b, h])
            if t > 0 && b1 == b && h4 == 4 * h && h4w == 4 * h && h1 == h =>
        {
            Ok((t, b, h))
        }
        (x, w, s) => candle::bail!("lstm seq: input projection {x:?}, w_hh {w:?}, state {s:?}"),
    }
}

/// `(t, b, h)` from the layouts of [`LstmSeqBwd`]'s inputs.
fn lstm_seq_bwd_dims(
    out: &candle::Layout,
    grad: &candle::Layout,
    w_hh: &candle::Layout,
) -> Result<(usize, usize, usize)> {
    match (out.dims(), grad.dims(), w_hh.dims()) {
        (&[6, t1, b, h], g, &[h4, h1]) if t1 > 1 && g == out.dims() && h4 == 4 * h && h1 == h => {
            Ok((t1 - 1, b, h))
        }
        (o, g, w) => candle::bail!("lstm seq: backward of {o:?} with a gradient {g:?}, w_hh {w:?}"),
    }
}

fn lstm_seq_fwd_cpu<T: candle::WithDType + num_traits::Float>(
    xg: &[T],
    w_hh: &[T],
    state0: &[T],
    (t, b, h): (usize, usize, usize),
) -> Result<Vec<T>> {
    let n = b * h;
    let plane = (t + 1) * n;
    let mut out = vec![T::zero(); 6 * plane];
    out[..n].copy_from_slice(&state0[..n]);
    out[plane..plane + n].copy_from_slice(&state0[n..]);
    let w_hh_t = Tensor::from_slice(w_hh, (4 * h, h), &Device::Cpu)?.t()?;
    for s in 0..t {
        let h_prev = Tensor::from_slice(&out[s * n..(s + 1) * n], (b, h), &Device::Cpu)?;
        let hw = h_prev.matmul(&w_hh_t)?.flatten_all()?.to_vec1::<T>()?;
        let xg = &xg[s * 4 * n..(s + 1) * 4 * n];
        for idx in 0..n {
            let at = (idx / h) * 4 * h + idx % h;
            let gates = std::array::from_fn(|k| xg[at + k * h] + hw[at + k * h]);
            let values = cell_fwd(gates, out[plane + s * n + idx]);
            for (k, v) in values.into_iter().enumerate() {
                out[k * plane + (s + 1) * n + idx] = v;
            }
        }
    }
    Ok(out)
}

fn lstm_seq_bwd_cpu<T: candle::WithDType + num_traits::Float>(
    out: &[T],
    grad: &[T],
    w_hh: &[T],
    (t, b, h): (usize, usize, usize),
) -> Result<Vec<T>> {
    let n = b * h;
    let plane = (t + 1) * n;
    let mut d = vec![T::zero(); t * 4 * n + 2 * n];
    let (d_xg, d_state0) = d.split_at_mut(t * 4 * n);
    // The gradient of h_s through step s + 1 (dg_{s+1} w_hh), and that of c_s.
    let (dh_rec, dc) = d_state0.split_at_mut(n);
    let w_hh = Tensor::from_slice(w_hh, (4 * h, h), &Device::Cpu)?;
    for s in (0..t).rev() {
        let at = (s + 1) * n;
        let dg = &mut d_xg[s * 4 * n..(s + 1) * 4 * n];
        for idx in 0..n {
            let saved = std::array::from_fn(|k| out[(k + 1) * plane + at + idx]);
            let dh = grad[at + idx] + dh_rec[idx];
            let (d_g, d_c) = cell_bwd(
                saved,
                out[plane + s * n + idx],
                dh,
                grad[plane + at + idx] + dc[idx],
            );
            let g_at = (idx / h) * 4 * h + idx % h;
            for (k, v) in d_g.into_iter().enumerate() {
                dg[g_at + k * h] = v;
            }
            dc[idx] = d_c;
        }
        let dg = Tensor::from_slice(dg, (b, 4 * h), &Device::Cpu)?;
        dh_rec.copy_from_slice(&dg.matmul(&w_hh)?.flatten_all()?.to_vec1::<T>()?);
    }
    Ok(d)
}

/// The contiguous view of a cuda storage of type `T`.
#[cfg(feature = "cuda")]
fn lstm_cuda_view<'a, T: candle::cuda_backend::CudaDType>(
    s: &'a candle::CudaStorage,
    l: &candle::Layout,
) -> Result<candle::cuda_backend::cudarc::driver::CudaView<'a, T>> {
    match l.contiguous_offsets() {
        Some((start, end)) => Ok(s.as_cuda_slice::<T>()?.slice(start..end)),
        None => candle::bail!("lstm: non-contiguous input"),
    }
}

/// The launch configuration of the cell kernels, a thread per element of `[b, h]`.
#[cfg(feature = "cuda")]
fn lstm_launch_config(n: usize) -> candle::cuda_backend::cudarc::driver::LaunchConfig {
    candle::cuda_backend::cudarc::driver::LaunchConfig {
        grid_dim: (n.div_ceil(256).clamp(1, 65535 * 8) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

#[cfg(feature = "cuda")]
fn lstm_seq_fwd_cuda<T>(
    args: [(&candle::CudaStorage, &candle::Layout); 3],
    (t, b, h): (usize, usize, usize),
) -> Result<candle::CudaStorage>
where
    T: candle::cuda_backend::CudaDType
        + candle::WithDType
        + candle::cuda_backend::cudarc::driver::DeviceRepr,
    candle::cuda_backend::cudarc::cublas::CudaBlas: candle::cuda_backend::cudarc::cublas::Gemm<T>,
{
    use candle::backend::BackendStorage;
    use candle::cuda_backend::cudarc::cublas::{sys::cublasOperation_t, Gemm, GemmConfig};
    use candle::cuda_backend::cudarc::driver::PushKernelArg;
    use candle::cuda_backend::{kernel_name, kernels, WrapErr};
    let dev = args[0].0.device().clone();
    let xg = lstm_cuda_view::<T>(args[0].0, args[0].1)?;
    let w_hh = lstm_cuda_view::<T>(args[1].0, args[1].1)?;
    let state0 = lstm_cuda_view::<T>(args[2].0, args[2].1)?;
    let (n, plane) = (b * h, (t + 1) * b * h);
    // SAFETY: every element is written by the kernels (index 0 by the first step).
    let out = unsafe { dev.alloc::<T>(6 * plane)? };
    // SAFETY: written by each step's gemm before its kernel reads it.
    let mut hw = unsafe { dev.alloc::<T>(4 * n)? };
    let blas = dev.cublas_handle();
    let func = dev.get_or_load_func(&kernel_name::<T>("lstm_seq_fwd"), &kernels::RNN)?;
    // Row-major hw [b, 4h] = h_prev [b, h] w_hh^T: column-major w_hh^T^T h_prev^T.
    let gemm = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_T,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: (4 * h) as i32,
        n: b as i32,
        k: h as i32,
        alpha: T::from_f64(1.),
        lda: h as i32,
        ldb: h as i32,
        beta: T::from_f64(0.),
        ldc: (4 * h) as i32,
    };
    for s in 0..t {
        let (h_prev, c_prev) = if s == 0 {
            (state0.slice(..n), state0.slice(n..))
        } else {
            let c_at = plane + s * n;
            (out.slice(s * n..(s + 1) * n), out.slice(c_at..c_at + n))
        };
        // SAFETY: ffi; the sizes were checked by lstm_seq_dims.
        unsafe { blas.gemm(gemm, &w_hh, &h_prev, &mut hw) }.w()?;
        let xg_s = xg.slice(s * 4 * n..(s + 1) * 4 * n);
        let mut builder = func.builder();
        builder.arg(&xg_s);
        builder.arg(&hw);
        builder.arg(&h_prev);
        builder.arg(&c_prev);
        builder.arg(&out);
        builder.arg(&plane);
        builder.arg(&s);
        builder.arg(&b);
        builder.arg(&h);
        // SAFETY: ffi; the kernel writes index s + 1 (and 0 when s = 0), reads index s.
        unsafe { builder.launch(lstm_launch_config(n)) }.w()?;
    }
    Ok(candle::CudaStorage::wrap_cuda_slice(out, dev))
}

#[cfg(feature = "cuda")]
fn lstm_seq_bwd_cuda<T>(
    args: [(&candle::CudaStorage, &candle::Layout); 3],
    (t, b, h): (usize, usize, usize),
) -> Result<candle::CudaStorage>
where
    T: candle::cuda_backend::CudaDType
        + candle::WithDType
        + candle::cuda_backend::cudarc::driver::DeviceRepr
        + candle::cuda_backend::cudarc::driver::ValidAsZeroBits,
    candle::cuda_backend::cudarc::cublas::CudaBlas: candle::cuda_backend::cudarc::cublas::Gemm<T>,
{
    use candle::backend::BackendStorage;
    use candle::cuda_backend::cudarc::cublas::{sys::cublasOperation_t, Gemm, GemmConfig};
    use candle::cuda_backend::cudarc::driver::PushKernelArg;
    use candle::cuda_backend::{kernel_name, kernels, WrapErr};
    let dev = args[0].0.device().clone();
    let out = lstm_cuda_view::<T>(args[0].0, args[0].1)?;
    let grad = lstm_cuda_view::<T>(args[1].0, args[1].1)?;
    let w_hh = lstm_cuda_view::<T>(args[2].0, args[2].1)?;
    let (n, plane) = (b * h, (t + 1) * b * h);
    // SAFETY: the gradient of xg is written by the kernels, that of the state zeroed first.
    let mut d = unsafe { dev.alloc::<T>(t * 4 * n + 2 * n)? };
    let blas = dev.cublas_handle();
    let func = dev.get_or_load_func(&kernel_name::<T>("lstm_seq_bwd"), &kernels::RNN)?;
    // Row-major dh_rec [b, h] = dg [b, 4h] w_hh [4h, h]: column-major w_hh^T dg^T.
    let gemm = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: h as i32,
        n: b as i32,
        k: (4 * h) as i32,
        alpha: T::from_f64(1.),
        lda: h as i32,
        ldb: (4 * h) as i32,
        beta: T::from_f64(0.),
        ldc: h as i32,
    };
    {
        let (mut d_xg, mut d_state0) = d.split_at_mut(t * 4 * n);
        dev.cuda_stream().memset_zeros(&mut d_state0).w()?;
        // The gradient of h_s through step s + 1 (dg_{s+1} w_hh), and that of c_s: those of
        // h0 and c0 after the first step.
        let (mut dh_rec, mut dc) = d_state0.split_at_mut(n);
        for s in (0..t).rev() {
            let mut dg = d_xg.slice_mut(s * 4 * n..(s + 1) * 4 * n);
            {
                let mut builder = func.builder();
                builder.arg(&out);
                builder.arg(&grad);
                builder.arg(&mut dh_rec);
                builder.arg(&mut dc);
                builder.arg(&mut dg);
                builder.arg(&plane);
                builder.arg(&s);
                builder.arg(&b);
                builder.arg(&h);
                // SAFETY: ffi; the sizes were checked by lstm_seq_bwd_dims.
                unsafe { builder.launch(lstm_launch_config(n)) }.w()?;
            }
            // SAFETY: ffi; as above.
            unsafe { blas.gemm(gemm, &w_hh, &dg, &mut dh_rec) }.w()?;
        }
    }
    Ok(candle::CudaStorage::wrap_cuda_slice(d, dev))
}

impl candle::CustomOp3 for LstmSeq {
    fn name(&self) -> &'static str {
        "lstm-seq"
    }

    fn cpu_fwd(
        &self,
        s1: &candle::CpuStorage,
        l1: &candle::Layout,
        s2: &candle::CpuStorage,
        l2: &candle::Layout,
        s3: &candle::CpuStorage,
        l3: &candle::Layout,
    ) -> Result<(candle::CpuStorage, candle::Shape)> {
        use candle::backend::BackendStorage;
        let (t, b, h) = lstm_seq_dims(l1, l2, l3)?;
        let out = match s1.dtype() {
            DType::F32 => candle::CpuStorage::F32(lstm_seq_fwd_cpu(
                lstm_slice::<f32>(s1, l1)?,
                lstm_slice::<f32>(s2, l2)?,
                lstm_slice::<f32>(s3, l3)?,
                (t, b, h),
            )?),
            DType::F64 => candle::CpuStorage::F64(lstm_seq_fwd_cpu(
                lstm_slice::<f64>(s1, l1)?,
                lstm_slice::<f64>(s2, l2)?,
                lstm_slice::<f64>(s3, l3)?,
                (t, b, h),
            )?),
            dt => candle::bail!("lstm seq: no fused kernel for {dt:?}"),
        };
        Ok((out, (6, t + 1, b, h).into()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle::CudaStorage,
        l1: &candle::Layout,
        s2: &candle::CudaStorage,
        l2: &candle::Layout,
        s3: &candle::CudaStorage,
        l3: &candle::Layout,
    ) -> Result<(candle::CudaStorage, candle::Shape)> {
        use candle::backend::BackendStorage;
        let dims = lstm_seq_dims(l1, l2, l3)?;
        let args = [(s1, l1), (s2, l2), (s3, l3)];
        let out = match s1.dtype() {
            DType::F32 => lstm_seq_fwd_cuda::<f32>(args, dims)?,
            DType::F64 => lstm_seq_fwd_cuda::<f64>(args, dims)?,
            dt => candle::bail!("lstm seq: no fused kernel for {dt:?}"),
        };
        let (t, b, h) = dims;
        Ok((out, (6, t + 1, b, h).into()))
    }

    fn bwd(
        &self,
        _xg: &Tensor,
        w_hh: &Tensor,
        _state0: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (_, t1, b, h) = res.dims4()?;
        let (t, n) = (t1 - 1, b * h);
        let packed = res.apply_op3_no_bwd(&grad.contiguous()?, &w_hh.contiguous()?, &LstmSeqBwd)?;
        let d_xg = packed.narrow(0, 0, t * 4 * n)?;
        // d w_hh = sum over the steps of dg_s^T h_{s-1}, with h_{s-1} at index s of the h plane.
        let h_prev = res.get(0)?.narrow(0, 0, t)?.reshape((t * b, h))?;
        let d_w_hh = d_xg.reshape((t * b, 4 * h))?.t()?.matmul(&h_prev)?;
        let d_state0 = packed.narrow(0, t * 4 * n, 2 * n)?.reshape((2, b, h))?;
        Ok((
            Some(d_xg.reshape((t, b, 4 * h))?),
            Some(d_w_hh),
            Some(d_state0),
        ))
    }
}

impl candle::CustomOp3 for LstmSeqBwd {
    fn name(&self) -> &'static str {
        "lstm-seq-bwd"
    }

    fn cpu_fwd(
        &self,
        s1: &candle::CpuStorage,
        l1: &candle::Layout,
        s2: &candle::CpuStorage,
        l2: &candle::Layout,
        s3: &candle::CpuStorage,
        l3: &candle::Layout,
    ) -> Result<(candle::CpuStorage, candle::Shape)> {
        use candle::backend::BackendStorage;
        let (t, b, h) = lstm_seq_bwd_dims(l1, l2, l3)?;
        let d = match s1.dtype() {
            DType::F32 => candle::CpuStorage::F32(lstm_seq_bwd_cpu(
                lstm_slice::<f32>(s1, l1)?,
                lstm_slice::<f32>(s2, l2)?,
                lstm_slice::<f32>(s3, l3)?,
                (t, b, h),
            )?),
            DType::F64 => candle::CpuStorage::F64(lstm_seq_bwd_cpu(
                lstm_slice::<f64>(s1, l1)?,
                lstm_slice::<f64>(s2, l2)?,
                lstm_slice::<f64>(s3, l3)?,
                (t, b, h),
            )?),
            dt => candle::bail!("lstm seq: no fused kernel for {dt:?}"),
        };
        Ok((d, (t * 4 * b * h + 2 * b * h).into()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle::CudaStorage,
        l1: &candle::Layout,
        s2: &candle::CudaStorage,
        l2: &candle::Layout,
        s3: &candle::CudaStorage,
        l3: &candle::Layout,
    ) -> Result<(candle::CudaStorage, candle::Shape)> {
        use candle::backend::BackendStorage;
        let dims = lstm_seq_bwd_dims(l1, l2, l3)?;
        let args = [(s1, l1), (s2, l2), (s3, l3)];
        let d = match s1.dtype() {
            DType::F32 => lstm_seq_bwd_cuda::<f32>(args, dims)?,
            DType::F64 => lstm_seq_bwd_cuda::<f64>(args, dims)?,
            dt => candle::bail!("lstm seq: no fused kernel for {dt:?}"),
        };
        let (t, b, h) = dims;
        Ok((d, (t * 4 * b * h + 2 * b * h).into()))
    }
}

/// The state for a GRU network, this contains a single tensor.
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone)]
pub struct GRUState {
    pub h: Tensor,
}

impl GRUState {
    /// The hidden state vector, which is also the output of the LSTM.
    pub fn h(&self) -> &Tensor {
        &self.h
    }
}

#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy)]
pub struct GRUConfig {
    pub w_ih_init: super::Init,
    pub w_hh_init: super::Init,
    pub b_ih_init: Option<super::Init>,
    pub b_hh_init: Option<super::Init>,
}

impl Default for GRUConfig {
    fn default() -> Self {
        Self {
            w_ih_init: super::init::DEFAULT_KAIMING_UNIFORM,
            w_hh_init: super::init::DEFAULT_KAIMING_UNIFORM,
            b_ih_init: Some(super::Init::Const(0.)),
            b_hh_init: Some(super::Init::Const(0.)),
        }
    }
}

impl GRUConfig {
    pub fn default_no_bias() -> Self {
        Self {
            w_ih_init: super::init::DEFAULT_KAIMING_UNIFORM,
            w_hh_init: super::init::DEFAULT_KAIMING_UNIFORM,
            b_ih_init: None,
            b_hh_init: None,
        }
    }
}

/// A Gated Recurrent Unit (GRU) layer.
///
/// <https://en.wikipedia.org/wiki/Gated_recurrent_unit>
#[allow(clippy::upper_case_acronyms)]
#[derive(Clone, Debug)]
pub struct GRU {
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Option<Tensor>,
    b_hh: Option<Tensor>,
    hidden_dim: usize,
    config: GRUConfig,
    device: Device,
    dtype: DType,
}

impl GRU {
    /// Creates a GRU layer.
    pub fn new(
        in_dim: usize,
        hidden_dim: usize,
        config: GRUConfig,
        vb: crate::VarBuilder,
    ) -> Result<Self> {
        let w_ih = vb.get_with_hints(
            (3 * hidden_dim, in_dim),
            "weight_ih_l0", // Only a single layer is supported.
            config.w_ih_init,
        )?;
        let w_hh = vb.get_with_hints(
            (3 * hidden_dim, hidden_dim),
            "weight_hh_l0", // Only a single layer is supported.
            config.w_hh_init,
        )?;
        let b_ih = match config.b_ih_init {
            Some(init) => Some(vb.get_with_hints(3 * hidden_dim, "bias_ih_l0", init)?),
            None => None,
        };
        let b_hh = match config.b_hh_init {
            Some(init) => Some(vb.get_with_hints(3 * hidden_dim, "bias_hh_l0", init)?),
            None => None,
        };
        Ok(Self {
            w_ih,
            w_hh,
            b_ih,
            b_hh,
            hidden_dim,
            config,
            device: vb.device().clone(),
            dtype: vb.dtype(),
        })
    }

    pub fn config(&self) -> &GRUConfig {
        &self.config
    }
}

pub fn gru(
    in_dim: usize,
    hidden_dim: usize,
    config: GRUConfig,
    vb: crate::VarBuilder,
) -> Result<GRU> {
    GRU::new(in_dim, hidden_dim, config, vb)
}

impl RNN for GRU {
    type State = GRUState;

    fn zero_state(&self, batch_dim: usize) -> Result<Self::State> {
        let h =
            Tensor::zeros((batch_dim, self.hidden_dim), self.dtype, &self.device)?.contiguous()?;
        Ok(Self::State { h })
    }

    fn step(&self, input: &Tensor, in_state: &Self::State) -> Result<Self::State> {
        let w_ih = input.matmul(&self.w_ih.t()?)?;
        let w_hh = in_state.h.matmul(&self.w_hh.t()?)?;
        let w_ih = match &self.b_ih {
            None => w_ih,
            Some(b_ih) => w_ih.broadcast_add(b_ih)?,
        };
        let w_hh = match &self.b_hh {
            None => w_hh,
            Some(b_hh) => w_hh.broadcast_add(b_hh)?,
        };
        let chunks_ih = w_ih.chunk(3, 1)?;
        let chunks_hh = w_hh.chunk(3, 1)?;
        let r_gate = crate::ops::sigmoid(&(&chunks_ih[0] + &chunks_hh[0])?)?;
        let z_gate = crate::ops::sigmoid(&(&chunks_ih[1] + &chunks_hh[1])?)?;
        let n_gate = (&chunks_ih[2] + (r_gate * &chunks_hh[2])?)?.tanh();

        let next_h = ((&z_gate * &in_state.h)? - ((&z_gate - 1.)? * n_gate)?)?;
        Ok(GRUState { h: next_h })
    }

    fn states_to_tensor(&self, states: &[Self::State]) -> Result<Tensor> {
        let states = states.iter().map(|s| s.h.clone()).collect::<Vec<_>>();
        Tensor::cat(&states, 1)
    }
}
