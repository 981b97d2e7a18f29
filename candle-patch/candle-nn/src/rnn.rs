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
        // [seq_len, b_size, 4 * hidden]: the slice of a step is contiguous.
        let xg = xg
            .reshape((b_size, seq_len, 4 * self.hidden_dim))?
            .transpose(0, 1)?
            .contiguous()?;
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

fn lstm_cell_fwd_cpu<T: num_traits::Float>(gates: &[T], c_prev: &[T], h: usize) -> Vec<T> {
    let n = c_prev.len();
    let mut out = vec![T::zero(); 6 * n];
    for (row, g) in gates.chunks_exact(4 * h).enumerate() {
        for j in 0..h {
            let idx = row * h + j;
            let (i, f) = (sigmoid_f(g[j]), sigmoid_f(g[h + j]));
            let (gg, o) = (g[2 * h + j].tanh(), sigmoid_f(g[3 * h + j]));
            let c = f * c_prev[idx] + i * gg;
            out[idx] = o * c.tanh();
            out[n + idx] = c;
            out[2 * n + idx] = i;
            out[3 * n + idx] = f;
            out[4 * n + idx] = gg;
            out[5 * n + idx] = o;
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
    let one = T::one();
    let mut d = vec![T::zero(); 5 * n];
    let (d_gates, d_c_prev) = d.split_at_mut(4 * n);
    for (row, dg) in d_gates.chunks_exact_mut(4 * h).enumerate() {
        for j in 0..h {
            let idx = row * h + j;
            let (c, i, f) = (out[n + idx], out[2 * n + idx], out[3 * n + idx]);
            let (gg, o) = (out[4 * n + idx], out[5 * n + idx]);
            let tc = c.tanh();
            let dh = grad[idx];
            let dc = grad[n + idx] + dh * o * (one - tc * tc);
            dg[j] = dc * gg * i * (one - i);
            dg[h + j] = dc * c_prev[idx] * f * (one - f);
            dg[2 * h + j] = dc * i * (one - gg * gg);
            dg[3 * h + j] = dh * tc * o * (one - o);
            d_c_prev[idx] = dc * f;
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
        None => candle::bail!("lstm cell: non-contiguous input"),
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
                None => candle::bail!("lstm cell: non-contiguous input"),
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
