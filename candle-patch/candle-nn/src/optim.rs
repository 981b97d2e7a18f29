//! Various optimization algorithms.
use candle::{DType, Layout, Result, Tensor, Var};

/// The interface optimizers should implement.
pub trait Optimizer: Sized {
    type Config: Sized;

    fn new(vars: Vec<Var>, config: Self::Config) -> Result<Self>;

    fn step(&mut self, grads: &candle::backprop::GradStore) -> Result<()>;

    fn learning_rate(&self) -> f64;

    fn set_learning_rate(&mut self, lr: f64);

    fn empty(config: Self::Config) -> Result<Self> {
        Self::new(vec![], config)
    }

    fn backward_step(&mut self, loss: &Tensor) -> Result<()> {
        let grads = loss.backward()?;
        self.step(&grads)
    }

    fn from_slice(vars: &[&Var], config: Self::Config) -> Result<Self> {
        let vars: Vec<_> = vars.iter().map(|&v| v.clone()).collect();
        Self::new(vars, config)
    }
}

/// Optimizer for Stochastic Gradient Descent.
///
/// Contrary to the PyTorch implementation of SGD, this version does not support momentum.
#[derive(Debug)]
pub struct SGD {
    vars: Vec<Var>,
    learning_rate: f64,
}

impl Optimizer for SGD {
    type Config = f64;

    fn new(vars: Vec<Var>, learning_rate: f64) -> Result<Self> {
        let vars = vars
            .into_iter()
            .filter(|var| var.dtype().is_float())
            .collect();
        Ok(Self {
            vars,
            learning_rate,
        })
    }

    fn learning_rate(&self) -> f64 {
        self.learning_rate
    }

    fn step(&mut self, grads: &candle::backprop::GradStore) -> Result<()> {
        for var in self.vars.iter() {
            if let Some(grad) = grads.get(var) {
                var.set(&var.sub(&(grad * self.learning_rate)?)?)?;
            }
        }
        Ok(())
    }

    fn set_learning_rate(&mut self, lr: f64) {
        self.learning_rate = lr
    }
}

impl SGD {
    pub fn into_inner(self) -> Vec<Var> {
        self.vars
    }

    pub fn push(&mut self, var: &Var) {
        self.vars.push(var.clone())
    }
}

#[derive(Clone, Debug)]
pub struct ParamsAdamW {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
}

impl Default for ParamsAdamW {
    fn default() -> Self {
        Self {
            lr: 0.001,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
        }
    }
}

#[derive(Debug)]
struct VarAdamW {
    var: Var,
    /// The first moment then the second one, `2 * var.elem_count()` elements of its dtype.
    moments: Tensor,
}

#[derive(Debug)]
pub struct AdamW {
    vars: Vec<VarAdamW>,
    step_t: usize,
    params: ParamsAdamW,
}

impl Optimizer for AdamW {
    type Config = ParamsAdamW;

    fn new(vars: Vec<Var>, params: ParamsAdamW) -> Result<Self> {
        let vars = vars
            .into_iter()
            .filter(|var| var.dtype().is_float())
            .map(|var| {
                let moments = Tensor::zeros(2 * var.elem_count(), var.dtype(), var.device())?;
                Ok(VarAdamW { var, moments })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            vars,
            params,
            step_t: 0,
        })
    }

    fn learning_rate(&self) -> f64 {
        self.params.lr
    }

    fn set_learning_rate(&mut self, lr: f64) {
        self.params.lr = lr
    }

    fn step(&mut self, grads: &candle::backprop::GradStore) -> Result<()> {
        self.step_t += 1;
        let lr = self.params.lr;
        let lambda = self.params.weight_decay;
        let lr_lambda = lr * lambda;
        let beta1 = self.params.beta1;
        let beta2 = self.params.beta2;
        let scale_m = 1f64 / (1f64 - beta1.powi(self.step_t as i32));
        let scale_v = 1f64 / (1f64 - beta2.powi(self.step_t as i32));
        let moments_op = AdamWMoments([beta1, 1.0 - beta1, beta2, 1.0 - beta2]);
        let update_op = AdamWUpdate([1f64 - lr_lambda, lr, scale_m, scale_v, self.params.eps]);
        for var in self.vars.iter_mut() {
            let theta = &var.var;
            let Some(g) = grads.get(theta) else { continue };
            let fused = (theta.device().is_cpu() || theta.device().is_cuda())
                && matches!(theta.dtype(), DType::F32 | DType::F64)
                && theta.is_contiguous()
                && g.is_contiguous()
                && g.shape() == theta.shape()
                && g.dtype() == theta.dtype();
            if fused {
                // Two passes over the parameter, in place: the moments, then the parameter.
                var.moments.inplace_op2(g, &moments_op)?;
                theta.inplace_op2(&var.moments, &update_op)?;
                continue;
            }
            let n = theta.elem_count();
            let m = var.moments.narrow(0, 0, n)?.reshape(theta.shape())?;
            let v = var.moments.narrow(0, n, n)?.reshape(theta.shape())?;
            let next_m = ((m * beta1)? + (g * (1.0 - beta1))?)?;
            let next_v = ((v * beta2)? + (g.sqr()? * (1.0 - beta2))?)?;
            let m_hat = (&next_m * scale_m)?;
            let v_hat = (&next_v * scale_v)?;
            let next_theta = (theta.as_tensor() * (1f64 - lr_lambda))?;
            let adjusted_grad = (m_hat / (v_hat.sqrt()? + self.params.eps)?)?;
            let next_theta = (next_theta - (adjusted_grad * lr)?)?;
            var.moments = Tensor::cat(&[next_m.flatten_all()?, next_v.flatten_all()?], 0)?;
            theta.set(&next_theta)?;
        }
        Ok(())
    }
}

/// The moments of one parameter in place (`moments.inplace_op2(grad, ..)`), `[b1, 1 - b1, b2,
/// 1 - b2]`: m = m * b1 + g * (1 - b1), v = v * b2 + g² * (1 - b2), one rounding per op as in
/// the tensor-op version.
struct AdamWMoments([f64; 4]);

/// One parameter in place (`param.inplace_op2(moments, ..)`), `[decay, lr, sm, sv, eps]`:
/// p = p * decay - (m * sm / (sqrt(v * sv) + eps)) * lr.
struct AdamWUpdate([f64; 5]);

fn adamw_moments_cpu<T: num_traits::Float>(mv: &mut [T], g: &[T], s: &[T]) {
    let (m, v) = mv.split_at_mut(g.len());
    for ((m, v), &g) in m.iter_mut().zip(v.iter_mut()).zip(g) {
        *m = *m * s[0] + g * s[1];
        *v = *v * s[2] + g * g * s[3];
    }
}

fn adamw_update_cpu<T: num_traits::Float>(p: &mut [T], mv: &[T], s: &[T]) {
    let (m, v) = mv.split_at(p.len());
    for ((p, &m), &v) in p.iter_mut().zip(m).zip(v) {
        *p = *p * s[0] - (m * s[2] / ((v * s[3]).sqrt() + s[4])) * s[1];
    }
}

/// The range of a contiguous layout in its storage.
fn adamw_range(l: &Layout, what: &str) -> Result<std::ops::Range<usize>> {
    match l.contiguous_offsets() {
        Some((start, end)) => Ok(start..end),
        None => candle::bail!("adamw: the {what} is not contiguous"),
    }
}

/// Runs `f` on the slices of `dst` (written) and `src` (read) with the scalars `s` in their
/// dtype, for f32 and f64.
fn adamw_cpu(
    (dst, dst_l): (&mut candle::CpuStorage, &Layout),
    (src, src_l): (&candle::CpuStorage, &Layout),
    s: &[f64],
    f32_fn: fn(&mut [f32], &[f32], &[f32]),
    f64_fn: fn(&mut [f64], &[f64], &[f64]),
) -> Result<()> {
    use candle::backend::BackendStorage;
    use candle::CpuStorage as C;
    let (dr, sr) = (
        adamw_range(dst_l, "destination")?,
        adamw_range(src_l, "source")?,
    );
    match (dst, src) {
        (C::F32(d), C::F32(x)) => {
            let s: Vec<f32> = s.iter().map(|&v| v as f32).collect();
            f32_fn(&mut d[dr], &x[sr], &s)
        }
        (C::F64(d), C::F64(x)) => f64_fn(&mut d[dr], &x[sr], s),
        (d, x) => candle::bail!("adamw: unsupported dtypes {:?} {:?}", d.dtype(), x.dtype()),
    }
    Ok(())
}

/// Launches the kernel `{name}_{dtype}` over `n` elements of `dst` (written) and `src` (read).
#[cfg(feature = "cuda")]
fn adamw_cuda(
    name: &str,
    n: usize,
    (dst, dst_l): (&mut candle::CudaStorage, &Layout),
    (src, src_l): (&candle::CudaStorage, &Layout),
    s: &[f64],
) -> Result<()> {
    use candle::backend::BackendStorage;
    use candle::cuda_backend::cudarc::driver::{DeviceRepr, LaunchConfig, PushKernelArg};
    use candle::cuda_backend::{kernel_name, kernels, CudaDType, WrapErr};
    use candle::WithDType;
    fn launch<T: CudaDType + DeviceRepr + WithDType>(
        name: &str,
        n: usize,
        (dst, dr): (&mut candle::CudaStorage, std::ops::Range<usize>),
        (src, sr): (&candle::CudaStorage, std::ops::Range<usize>),
        s: &[f64],
    ) -> Result<()> {
        let dev = dst.device().clone();
        let func = dev.get_or_load_func(&kernel_name::<T>(name), &kernels::OPTIM)?;
        let src = src.as_cuda_slice::<T>()?.slice(sr);
        let mut dst = dst.as_cuda_slice_mut::<T>()?.slice_mut(dr);
        let s: Vec<T> = s.iter().map(|&v| T::from_f64(v)).collect();
        let blocks = n.div_ceil(256).clamp(1, 65535 * 8) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut builder = func.builder();
        builder.arg(&mut dst);
        builder.arg(&src);
        builder.arg(&n);
        for s in s.iter() {
            builder.arg(s);
        }
        // SAFETY: ffi; the kernel reads and writes the n (dst) and 2n (moments) elements of
        // the ranges checked by the caller.
        unsafe { builder.launch(cfg) }.w()?;
        Ok(())
    }
    let (dr, sr) = (
        adamw_range(dst_l, "destination")?,
        adamw_range(src_l, "source")?,
    );
    match (dst.dtype(), src.dtype()) {
        (DType::F32, DType::F32) => launch::<f32>(name, n, (dst, dr), (src, sr), s),
        (DType::F64, DType::F64) => launch::<f64>(name, n, (dst, dr), (src, sr), s),
        (d, x) => candle::bail!("adamw: unsupported dtypes {d:?} {x:?}"),
    }
}

impl candle::InplaceOp2 for AdamWMoments {
    fn name(&self) -> &'static str {
        "adamw-moments"
    }

    fn cpu_fwd(
        &self,
        mv: &mut candle::CpuStorage,
        mv_l: &Layout,
        g: &candle::CpuStorage,
        g_l: &Layout,
    ) -> Result<()> {
        if mv_l.shape().elem_count() != 2 * g_l.shape().elem_count() {
            candle::bail!(
                "adamw: moments {:?} for a gradient {:?}",
                mv_l.shape(),
                g_l.shape()
            )
        }
        let (f32_fn, f64_fn) = (adamw_moments_cpu::<f32>, adamw_moments_cpu::<f64>);
        adamw_cpu((mv, mv_l), (g, g_l), &self.0, f32_fn, f64_fn)
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        mv: &mut candle::CudaStorage,
        mv_l: &Layout,
        g: &candle::CudaStorage,
        g_l: &Layout,
    ) -> Result<()> {
        let n = g_l.shape().elem_count();
        if mv_l.shape().elem_count() != 2 * n {
            candle::bail!(
                "adamw: moments {:?} for a gradient {:?}",
                mv_l.shape(),
                g_l.shape()
            )
        }
        adamw_cuda("adamw_moments", n, (mv, mv_l), (g, g_l), &self.0)
    }
}

impl candle::InplaceOp2 for AdamWUpdate {
    fn name(&self) -> &'static str {
        "adamw-update"
    }

    fn cpu_fwd(
        &self,
        p: &mut candle::CpuStorage,
        p_l: &Layout,
        mv: &candle::CpuStorage,
        mv_l: &Layout,
    ) -> Result<()> {
        if mv_l.shape().elem_count() != 2 * p_l.shape().elem_count() {
            candle::bail!(
                "adamw: moments {:?} for a parameter {:?}",
                mv_l.shape(),
                p_l.shape()
            )
        }
        let (f32_fn, f64_fn) = (adamw_update_cpu::<f32>, adamw_update_cpu::<f64>);
        adamw_cpu((p, p_l), (mv, mv_l), &self.0, f32_fn, f64_fn)
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        p: &mut candle::CudaStorage,
        p_l: &Layout,
        mv: &candle::CudaStorage,
        mv_l: &Layout,
    ) -> Result<()> {
        let n = p_l.shape().elem_count();
        if mv_l.shape().elem_count() != 2 * n {
            candle::bail!(
                "adamw: moments {:?} for a parameter {:?}",
                mv_l.shape(),
                p_l.shape()
            )
        }
        adamw_cuda("adamw_update", n, (p, p_l), (mv, mv_l), &self.0)
    }
}

impl AdamW {
    pub fn new_lr(vars: Vec<Var>, learning_rate: f64) -> Result<Self> {
        let params = ParamsAdamW {
            lr: learning_rate,
            ..ParamsAdamW::default()
        };
        Self::new(vars, params)
    }

    pub fn params(&self) -> &ParamsAdamW {
        &self.params
    }

    pub fn set_params(&mut self, params: ParamsAdamW) {
        self.params = params;
    }
}
