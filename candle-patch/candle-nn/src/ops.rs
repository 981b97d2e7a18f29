//! Tensor ops.
//!

use candle::{CpuStorage, DType, Layout, Module, Result, Shape, Tensor, D};
use rayon::prelude::*;

#[cfg(feature = "cuda")]
use crate::layer_norm_cuda::{self, Norm};

/// Applies the softmax function to the input tensor, rescaling the element so that elements on
/// a slice of fixed index on dimension `dim` are between 0 and 1 and sum to 1.
///
/// ```rust
/// use candle::{Tensor, Device, test_utils::to_vec2_round};
/// let a = Tensor::new(&[[0f32, 1., 0., 1.], [-2., 2., 3., -3.]], &Device::Cpu)?;
/// let a = candle_nn::ops::softmax(&a, 1)?;
/// assert_eq!(
///     to_vec2_round(&a, 4)?,
///     &[
///         [0.1345, 0.3655, 0.1345, 0.3655],
///         [0.0049, 0.2671, 0.7262, 0.0018]
///     ]);
/// # Ok::<(), candle::Error>(())
/// ```
pub fn softmax<D: candle::shape::Dim>(xs: &Tensor, dim: D) -> Result<Tensor> {
    let dim = dim.to_index(xs.shape(), "softmax")?;
    let max = xs.max_keepdim(dim)?;
    let diff = xs.broadcast_sub(&max)?;
    let num = diff.exp()?;
    let den = num.sum_keepdim(dim)?;
    num.broadcast_div(&den)
}

pub fn log_softmax<D: candle::shape::Dim>(xs: &Tensor, d: D) -> Result<Tensor> {
    let d = d.to_index(xs.shape(), "log-softmax")?;
    let max = xs.max_keepdim(d)?;
    let diff = xs.broadcast_sub(&max)?;
    let sum_exp = diff.exp()?.sum_keepdim(d)?;
    let log_sm = diff.broadcast_sub(&sum_exp.log()?)?;
    Ok(log_sm)
}

pub fn silu(xs: &Tensor) -> Result<Tensor> {
    xs.silu()
}

pub fn swiglu(xs: &Tensor) -> Result<Tensor> {
    let xs = xs.chunk(2, D::Minus1)?;
    &xs[0].silu()? * &xs[1]
}

struct Sigmoid;

impl candle::CustomOp1 for Sigmoid {
    fn name(&self) -> &'static str {
        "sigmoid"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        use candle::backend::BackendStorage;

        fn fwd<T: num_traits::Float>(v: T) -> T {
            (v.neg().exp() + T::one()).recip()
        }

        // FIXME: using `candle::map_dtype` causes compilation errors.
        let storage = match storage {
            CpuStorage::BF16(slice) => {
                CpuStorage::BF16(candle::cpu_backend::unary_map(slice, layout, fwd))
            }
            CpuStorage::F16(slice) => {
                CpuStorage::F16(candle::cpu_backend::unary_map(slice, layout, fwd))
            }
            CpuStorage::F32(slice) => {
                CpuStorage::F32(candle::cpu_backend::unary_map(slice, layout, fwd))
            }
            CpuStorage::F64(slice) => {
                CpuStorage::F64(candle::cpu_backend::unary_map(slice, layout, fwd))
            }
            _ => Err(candle::Error::UnsupportedDTypeForOp(
                storage.dtype(),
                self.name(),
            ))?,
        };
        Ok((storage, layout.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        storage: &candle::CudaStorage,
        layout: &Layout,
    ) -> Result<(candle::CudaStorage, Shape)> {
        use candle::backend::BackendStorage;
        use candle::cuda_backend::cudarc::driver::{
            CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
        };
        use candle::cuda_backend::SlicePtrOrNull;
        use candle::cuda_backend::{kernel_name, kernels, Map1, WrapErr};
        use candle::{CudaDevice, WithDType};

        struct S;
        impl Map1 for S {
            fn f<T: DeviceRepr + WithDType + ValidAsZeroBits>(
                &self,
                src: &CudaSlice<T>,
                dev: &CudaDevice,
                layout: &Layout,
            ) -> Result<CudaSlice<T>> {
                let shape = layout.shape();
                let dims = shape.dims();
                let el_count = shape.elem_count();
                let cfg = LaunchConfig::for_num_elems(el_count as u32);
                let ds = SlicePtrOrNull::params_from_layout(dev, layout)?;
                let src = &src.slice(layout.start_offset()..);
                let func = dev.get_or_load_func(&kernel_name::<T>("usigmoid"), &kernels::UNARY)?;
                // SAFETY: Set later by running the kernel.
                let out = unsafe { dev.alloc::<T>(el_count)? };

                let mut builder = func.builder();
                candle::builder_arg!(builder, el_count, dims.len());
                ds.builder_arg(&mut builder);
                builder.arg(src);
                builder.arg(&out);
                // SAFETY: ffi.
                unsafe { builder.launch(cfg) }.w()?;
                Ok(out)
            }
        }

        let dev = storage.device();
        let slice = S.map(&storage.slice, dev, layout)?;
        let dst = candle::CudaStorage {
            slice,
            device: dev.clone(),
        };
        Ok((dst, layout.shape().clone()))
    }

    #[cfg(feature = "metal")]
    fn metal_fwd(
        &self,
        storage: &candle::MetalStorage,
        layout: &Layout,
    ) -> Result<(candle::MetalStorage, Shape)> {
        use candle::backend::BackendStorage;
        use candle::MetalError;
        let device = storage.device();
        let dtype = storage.dtype();
        let shape = layout.shape();
        let el_count = shape.elem_count();
        let buffer = device.new_buffer(el_count, dtype, "sigmoid")?;
        let command_buffer = device.command_buffer()?;
        command_buffer.set_label("sigmoid");
        let src = candle_metal_kernels::BufferOffset {
            buffer: storage.buffer(),
            offset_in_bytes: layout.start_offset() * storage.dtype().size_in_bytes(),
        };

        match (el_count % 2, dtype, layout.is_contiguous()) {
            (0, DType::BF16 | DType::F16, true) => {
                use candle_metal_kernels::unary::contiguous_tiled;
                let kernel_name = match dtype {
                    DType::F16 => contiguous_tiled::sigmoid::HALF,
                    DType::F32 => contiguous_tiled::sigmoid::FLOAT,
                    DType::BF16 => contiguous_tiled::sigmoid::BFLOAT,
                    dtype => {
                        candle::bail!(
                            "Metal contiguous_tiled unary sigmoid {dtype:?} not implemented"
                        )
                    }
                };
                candle_metal_kernels::call_unary_contiguous_tiled(
                    device.metal_device(),
                    &command_buffer,
                    device.kernels(),
                    kernel_name,
                    el_count,
                    src,
                    &buffer,
                )
                .map_err(MetalError::from)?;
            }
            (_, _, true) => {
                use candle_metal_kernels::unary::contiguous;
                let kernel_name = match dtype {
                    DType::F16 => contiguous::sigmoid::HALF,
                    DType::F32 => contiguous::sigmoid::FLOAT,
                    DType::BF16 => contiguous::sigmoid::BFLOAT,
                    dtype => {
                        candle::bail!("Metal contiguous unary sigmoid {dtype:?} not implemented")
                    }
                };
                candle_metal_kernels::call_unary_contiguous(
                    device.metal_device(),
                    &command_buffer,
                    device.kernels(),
                    kernel_name,
                    el_count,
                    src,
                    &buffer,
                )
                .map_err(MetalError::from)?;
            }
            (_, _, false) => {
                use candle_metal_kernels::unary::strided;
                let kernel_name = match dtype {
                    DType::F16 => strided::sigmoid::HALF,
                    DType::F32 => strided::sigmoid::FLOAT,
                    DType::BF16 => strided::sigmoid::BFLOAT,
                    dtype => {
                        candle::bail!("Metal strided unary sigmoid {dtype:?} not implemented")
                    }
                };
                let dst = candle_metal_kernels::BufferOffset::zero_offset(&buffer);
                candle_metal_kernels::call_unary_strided(
                    device.metal_device(),
                    &command_buffer,
                    device.kernels(),
                    kernel_name,
                    layout.dims(),
                    src,
                    layout.stride(),
                    dst,
                )
                .map_err(MetalError::from)?;
            }
        }

        let new_storage = candle::MetalStorage::new(buffer, device.clone(), el_count, dtype);
        Ok((new_storage, layout.shape().clone()))
    }

    fn bwd(&self, _arg: &Tensor, res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        // d/dx sigmoid(x) = (1 - sigmoid(x)) * sigmoid(x)
        let d_dx_sigmoid = res.ones_like()?.sub(res)?.mul(res)?;
        Ok(Some(grad_res.mul(&d_dx_sigmoid)?))
    }
}

pub fn sigmoid(xs: &Tensor) -> Result<Tensor> {
    xs.apply_op1(Sigmoid)
}

pub fn hard_sigmoid(xs: &Tensor) -> Result<Tensor> {
    // TODO: Should we have a specialized op for this?
    ((xs + 3.0)? / 6.0)?.clamp(0f32, 1f32)
}

pub fn mish(xs: &Tensor) -> Result<Tensor> {
    xs * (1.0 + xs.exp()?)?.log()?.tanh()
}

pub fn leaky_relu(xs: &Tensor, negative_slope: f64) -> Result<Tensor> {
    let zeros = xs.zeros_like()?;
    xs.maximum(&zeros)? + xs.minimum(&zeros)? * negative_slope
}

pub fn selu(xs: &Tensor, alpha: f32, gamma: f32) -> Result<Tensor> {
    let is_pos = xs.gt(0f32)?;
    let alpha_t = Tensor::full(alpha, xs.dims(), xs.device())?;
    let neg = xs.exp()?.mul(&alpha_t)?.sub(&alpha_t)?;
    let selu = is_pos.where_cond(xs, &neg)?;
    let gamma_t = Tensor::full(gamma, xs.dims(), xs.device())?;
    selu.broadcast_mul(&gamma_t)
}

pub fn dropout(xs: &Tensor, drop_p: f32) -> Result<Tensor> {
    // This implementation is inefficient as it stores the full mask for the backward pass.
    // Instead we could just store the seed and have a specialized kernel that would both
    // generate the random mask and apply it.
    // Another easier optimization would be to be able to generate boolean mask using just a bit of
    // entropy per element rather than generating a full float per element.
    if !(0. ..1.).contains(&drop_p) {
        candle::bail!("dropout probability has to be in [0, 1), got {drop_p}")
    }
    let rand = Tensor::rand(0f32, 1f32, xs.shape(), xs.device())?;
    let scale = 1.0 / (1.0 - drop_p as f64);
    let drop_p = Tensor::new(drop_p, xs.device())?.broadcast_as(xs.shape())?;
    let mask = (rand.ge(&drop_p)?.to_dtype(xs.dtype())? * scale)?;
    xs * mask
}

#[derive(Clone, Debug)]
pub struct Dropout {
    drop_p: f32,
}

impl Dropout {
    pub fn new(drop_p: f32) -> Dropout {
        Self { drop_p }
    }

    pub fn forward(&self, xs: &Tensor, train: bool) -> Result<Tensor> {
        if train {
            dropout(xs, self.drop_p)
        } else {
            Ok(xs.clone())
        }
    }
}

impl candle::ModuleT for Dropout {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Result<Tensor> {
        self.forward(xs, train)
    }
}

struct SoftmaxLastDim;

impl candle::CustomOp1 for SoftmaxLastDim {
    fn name(&self) -> &'static str {
        "softmax-last-dim"
    }

    fn bwd(&self, _arg: &Tensor, res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(softmax_last_dim_bwd(res, grad_res)?))
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        // Accumulated in f32 (f64 for f64): a sum of exponentials in f16/bf16 stops growing
        // after a few hundred elements.
        fn softmax<T: LayerNormDType>(src: &[T], layout: &Layout) -> Result<(CpuStorage, Shape)> {
            use num_traits::Float;
            let src = match layout.contiguous_offsets() {
                None => candle::bail!("input has to be contiguous"),
                Some((o1, o2)) => &src[o1..o2],
            };
            let el_count = layout.shape().elem_count();
            let dims = layout.shape().dims();
            let dim_m1 = dims[dims.len() - 1];
            let mut dst = vec![T::zero(); el_count];
            src.par_chunks(dim_m1)
                .zip(dst.par_chunks_mut(dim_m1))
                .for_each_init(Vec::new, |exps, (src, dst)| {
                    let max = src
                        .iter()
                        .fold(T::Acc::neg_infinity(), |m, &v| m.max(v.to_acc()));
                    exps.clear();
                    exps.extend(src.iter().map(|&v| (v.to_acc() - max).exp()));
                    let sum_exp = exps
                        .iter()
                        .fold(<T::Acc as num_traits::Zero>::zero(), |acc, &e| acc + e);
                    for (d, &e) in dst.iter_mut().zip(exps.iter()) {
                        *d = T::from_acc(e / sum_exp)
                    }
                });
            let storage = candle::WithDType::to_cpu_storage_owned(dst);
            Ok((storage, Shape::from_dims(dims)))
        }

        match storage {
            CpuStorage::BF16(slice) => softmax::<half::bf16>(slice, layout),
            CpuStorage::F16(slice) => softmax::<half::f16>(slice, layout),
            CpuStorage::F32(slice) => softmax::<f32>(slice, layout),
            CpuStorage::F64(slice) => softmax::<f64>(slice, layout),
            _ => candle::bail!("unsupported dtype for softmax {:?}", storage),
        }
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        storage: &candle::CudaStorage,
        layout: &Layout,
    ) -> Result<(candle::CudaStorage, Shape)> {
        use candle::backend::BackendStorage;
        if !layout.is_contiguous() {
            candle::bail!("softmax-last-dim: input has to be contiguous")
        }
        let (dev, x) = (storage.device(), (storage, layout));
        let storage = match storage.dtype() {
            DType::BF16 => layer_norm_cuda::softmax_fwd::<half::bf16>(dev, x)?,
            DType::F16 => layer_norm_cuda::softmax_fwd::<half::f16>(dev, x)?,
            DType::F32 => layer_norm_cuda::softmax_fwd::<f32>(dev, x)?,
            DType::F64 => layer_norm_cuda::softmax_fwd::<f64>(dev, x)?,
            dt => candle::bail!("softmax-last-dim is not implemented for {dt:?}"),
        };
        Ok((storage, layout.shape().clone()))
    }

    #[cfg(feature = "metal")]
    fn metal_fwd(
        &self,
        storage: &candle::MetalStorage,
        layout: &Layout,
    ) -> Result<(candle::MetalStorage, Shape)> {
        use candle::backend::BackendStorage;
        let device = storage.device();
        let command_buffer = device.command_buffer()?;
        let kernels = device.kernels();
        let name = match storage.dtype() {
            DType::F32 => "softmax_f32",
            DType::F16 => "softmax_f16",
            DType::BF16 => "softmax_bf16",
            dtype => candle::bail!("softmax-last-dim is not implemented for {dtype:?}"),
        };

        let n = layout.stride().len();
        if !(layout.is_contiguous() && layout.stride()[n - 1] == 1) {
            candle::bail!("Non contiguous softmax-last-dim is not implemented");
        }

        let last_dim = layout.dims()[layout.shape().rank() - 1];
        let elem_count = layout.shape().elem_count();
        let output = device.new_buffer(elem_count, storage.dtype(), "softmax")?;
        candle_metal_kernels::call_last_softmax(
            device.metal_device(),
            &command_buffer,
            kernels,
            name,
            elem_count,
            last_dim,
            storage.buffer(),
            layout.start_offset() * storage.dtype().size_in_bytes(),
            &output,
        )
        .map_err(candle::Error::wrap)?;
        let newstorage =
            candle::MetalStorage::new(output, device.clone(), elem_count, storage.dtype());
        Ok((newstorage, layout.shape().clone()))
    }
}

/// The gradient of `softmax_last_dim` from its output `ys` and the output gradient `grad`:
/// `ys * (grad - sum(grad * ys))` over the last dimension, one fused pass per row on cpu and
/// cuda (accumulated in f32, f64 for f64), tensor ops on other devices.
pub fn softmax_last_dim_bwd(ys: &Tensor, grad: &Tensor) -> Result<Tensor> {
    if ys.device().is_cpu() || ys.device().is_cuda() {
        return ys.apply_op2_no_bwd(&grad.contiguous()?, &SoftmaxLastDimBwd);
    }
    let dtype = ys.dtype();
    let internal_dtype = match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    };
    let ys = ys.to_dtype(internal_dtype)?;
    let grad = grad.to_dtype(internal_dtype)?;
    let dot = (&grad * &ys)?.sum_keepdim(D::Minus1)?;
    (ys * grad.broadcast_sub(&dot)?)?.to_dtype(dtype)
}

#[derive(Debug, Clone)]
struct SoftmaxLastDimBwd;

impl candle::CustomOp2 for SoftmaxLastDimBwd {
    fn name(&self) -> &'static str {
        "softmax-last-dim-bwd"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        use candle::backend::BackendStorage;
        if l1.shape() != l2.shape() {
            candle::bail!(
                "softmax grad shape {:?} does not match the output {:?}",
                l2.shape(),
                l1.shape()
            )
        }
        fn inner<T: LayerNormDType>(
            (ys, l1): (&CpuStorage, &Layout),
            (grad, l2): (&CpuStorage, &Layout),
        ) -> Result<CpuStorage> {
            let (ys, grad) = match (l1.contiguous_offsets(), l2.contiguous_offsets()) {
                (Some((a1, a2)), Some((b1, b2))) => {
                    (&ys.as_slice::<T>()?[a1..a2], &grad.as_slice::<T>()?[b1..b2])
                }
                _ => candle::bail!("softmax-last-dim-bwd: output and grad have to be contiguous"),
            };
            let n_cols = l1.dims().last().copied().unwrap_or(1).max(1);
            let zero = <T::Acc as num_traits::Zero>::zero();
            let mut dst = vec![T::zero(); ys.len()];
            dst.par_chunks_mut(n_cols)
                .zip(ys.par_chunks(n_cols).zip(grad.par_chunks(n_cols)))
                .for_each(|(dx, (y, dy))| {
                    let dot = y
                        .iter()
                        .zip(dy)
                        .fold(zero, |acc, (&y, &dy)| acc + y.to_acc() * dy.to_acc());
                    for ((dx, &y), &dy) in dx.iter_mut().zip(y).zip(dy) {
                        *dx = T::from_acc(y.to_acc() * (dy.to_acc() - dot));
                    }
                });
            Ok(candle::WithDType::to_cpu_storage_owned(dst))
        }
        let (y, g) = ((s1, l1), (s2, l2));
        let storage = match s1.dtype() {
            DType::BF16 => inner::<half::bf16>(y, g)?,
            DType::F16 => inner::<half::f16>(y, g)?,
            DType::F32 => inner::<f32>(y, g)?,
            DType::F64 => inner::<f64>(y, g)?,
            dt => candle::bail!("softmax-last-dim is not implemented for {dt:?}"),
        };
        Ok((storage, l1.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle::CudaStorage,
        l1: &Layout,
        s2: &candle::CudaStorage,
        l2: &Layout,
    ) -> Result<(candle::CudaStorage, Shape)> {
        use candle::backend::BackendStorage;
        if l1.shape() != l2.shape() {
            candle::bail!(
                "softmax grad shape {:?} does not match the output {:?}",
                l2.shape(),
                l1.shape()
            )
        }
        if !l1.is_contiguous() || !l2.is_contiguous() {
            candle::bail!("softmax-last-dim-bwd: output and grad have to be contiguous")
        }
        let (dev, y, g) = (s1.device(), (s1, l1), (s2, l2));
        let storage = match s1.dtype() {
            DType::BF16 => layer_norm_cuda::softmax_bwd::<half::bf16>(dev, y, g)?,
            DType::F16 => layer_norm_cuda::softmax_bwd::<half::f16>(dev, y, g)?,
            DType::F32 => layer_norm_cuda::softmax_bwd::<f32>(dev, y, g)?,
            DType::F64 => layer_norm_cuda::softmax_bwd::<f64>(dev, y, g)?,
            dt => candle::bail!("softmax-last-dim is not implemented for {dt:?}"),
        };
        Ok((storage, l1.shape().clone()))
    }
}

/// Softmax over the last dimension, fused. Differentiable: the backward is fused on cpu and cuda
/// and uses tensor ops on other devices.
pub fn softmax_last_dim(xs: &Tensor) -> Result<Tensor> {
    xs.apply_op1(SoftmaxLastDim)
}

#[derive(Debug, Clone)]
struct RmsNorm {
    eps: f32,
}

impl candle::CustomOp2 for RmsNorm {
    fn name(&self) -> &'static str {
        "rms-norm"
    }

    fn bwd(
        &self,
        xs: &Tensor,
        alpha: &Tensor,
        _res: &Tensor,
        grad_res: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let (dxs, dalpha) = rms_norm_bwd(xs, alpha, grad_res, self.eps)?;
        Ok((Some(dxs), dalpha))
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        use candle::backend::BackendStorage;

        let eps = self.eps;
        fn inner<T: LayerNormDType>(
            src: &[T],
            layout: &Layout,
            alpha: &[T],
            alpha_layout: &Layout,
            eps: f32,
        ) -> Result<(CpuStorage, Shape)> {
            use num_traits::{Float, NumCast};
            let src = match layout.contiguous_offsets() {
                None => candle::bail!("input has to be contiguous"),
                Some((o1, o2)) => &src[o1..o2],
            };
            let alpha = match alpha_layout.contiguous_offsets() {
                None => candle::bail!("alpha has to be contiguous"),
                Some((o1, o2)) => &alpha[o1..o2],
            };
            let el_count = layout.shape().elem_count();
            let dims = layout.shape().dims();
            let dim_m1 = dims[dims.len() - 1];
            let mut dst = vec![T::zero(); el_count];
            let zero = <T::Acc as num_traits::Zero>::zero();
            let n: T::Acc = NumCast::from(dim_m1).unwrap_or(zero);
            let eps: T::Acc = NumCast::from(eps).unwrap_or(zero);
            src.par_chunks(dim_m1)
                .zip(dst.par_chunks_mut(dim_m1))
                .for_each(|(src, dst)| {
                    // x / sqrt(mean(x^2) + eps) in this order, as before: f32 outputs unchanged.
                    let sum2 = src
                        .iter()
                        .fold(zero, |acc, &v| acc + v.to_acc() * v.to_acc());
                    let m = (sum2 / n + eps).sqrt();
                    for ((d, s), alpha) in dst.iter_mut().zip(src.iter()).zip(alpha) {
                        *d = T::from_acc(s.to_acc() / m * alpha.to_acc())
                    }
                });
            let storage = candle::WithDType::to_cpu_storage_owned(dst);
            Ok((storage, Shape::from_dims(dims)))
        }

        use CpuStorage as C;
        match (s1, s2) {
            (C::BF16(s1), C::BF16(s2)) => inner::<half::bf16>(s1, l1, s2, l2, eps),
            (C::F16(s1), C::F16(s2)) => inner::<half::f16>(s1, l1, s2, l2, eps),
            (C::F32(s1), C::F32(s2)) => inner::<f32>(s1, l1, s2, l2, eps),
            (C::F64(s1), C::F64(s2)) => inner::<f64>(s1, l1, s2, l2, eps),
            _ => candle::bail!("unsupported dtype for rmsnorm {:?}", s1.dtype()),
        }
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle::CudaStorage,
        l1: &Layout,
        s2: &candle::CudaStorage,
        l2: &Layout,
    ) -> Result<(candle::CudaStorage, Shape)> {
        use candle::backend::BackendStorage;
        let dev = s1.device();
        let (x, alpha, eps) = ((s1, l1), Some((s2, l2)), self.eps);
        let storage = match s1.dtype() {
            DType::BF16 => layer_norm_cuda::fwd::<half::bf16>(dev, Norm::Rms, x, alpha, None, eps)?,
            DType::F16 => layer_norm_cuda::fwd::<half::f16>(dev, Norm::Rms, x, alpha, None, eps)?,
            DType::F32 => layer_norm_cuda::fwd::<f32>(dev, Norm::Rms, x, alpha, None, eps)?,
            DType::F64 => layer_norm_cuda::fwd::<f64>(dev, Norm::Rms, x, alpha, None, eps)?,
            dt => candle::bail!("rms-norm is not implemented for {dt:?}"),
        };
        Ok((storage, l1.shape().clone()))
    }

    #[cfg(feature = "metal")]
    fn metal_fwd(
        &self,
        s1: &candle::MetalStorage,
        l1: &Layout,
        s2: &candle::MetalStorage,
        l2: &Layout,
    ) -> Result<(candle::MetalStorage, Shape)> {
        use candle::backend::BackendStorage;
        let device = s1.device();
        let command_buffer = device.command_buffer()?;
        let kernels = device.kernels();
        let name = match (s1.dtype(), s2.dtype()) {
            (DType::F32, DType::F32) => "rmsnorm_f32",
            (DType::F16, DType::F16) => "rmsnorm_f16",
            (DType::BF16, DType::BF16) => "rmsnorm_bf16",
            (dt1, dt2) => candle::bail!("rmsnorm is not implemented for {dt1:?} {dt2:?}"),
        };

        if !(l1.is_contiguous() && l2.is_contiguous()) {
            candle::bail!("Non contiguous rmsnorm is not implemented");
        }

        let last_dim = l1.dims()[l1.shape().rank() - 1];
        let elem_count = l1.shape().elem_count();
        let output = device.new_buffer(elem_count, s1.dtype(), "rmsnorm")?;
        candle_metal_kernels::call_rms_norm(
            device.metal_device(),
            &command_buffer,
            kernels,
            name,
            elem_count,
            last_dim,
            self.eps,
            s1.buffer(),
            l1.start_offset() * s1.dtype().size_in_bytes(),
            s2.buffer(),
            l2.start_offset() * s2.dtype().size_in_bytes(),
            &output,
        )
        .map_err(candle::Error::wrap)?;
        let newstorage = candle::MetalStorage::new(output, device.clone(), elem_count, s1.dtype());
        Ok((newstorage, l1.shape().clone()))
    }
}

pub fn rms_norm_slow(x: &Tensor, alpha: &Tensor, eps: f32) -> Result<Tensor> {
    let x_dtype = x.dtype();
    let internal_dtype = match x_dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    };
    let hidden_size = x.dim(D::Minus1)?;
    let x = x.to_dtype(internal_dtype)?;
    let norm_x = (x.sqr()?.sum_keepdim(D::Minus1)? / hidden_size as f64)?;
    let x_normed = x.broadcast_div(&(norm_x + eps as f64)?.sqrt()?)?;
    x_normed.to_dtype(x_dtype)?.broadcast_mul(alpha)
}

pub fn rms_norm(xs: &Tensor, alpha: &Tensor, eps: f32) -> Result<Tensor> {
    let hidden_size_xs = xs.dim(D::Minus1)?;
    let hidden_size_alpha = alpha.dims1()?;
    if hidden_size_xs != hidden_size_alpha {
        candle::bail!(
            "shape mismatch in rms-norm {:?} {:?}",
            xs.shape(),
            alpha.shape()
        )
    }
    xs.apply_op2(alpha, RmsNorm { eps })
}

/// `1 / sqrt(mean(x^2) + eps)` of a row, accumulated in `T::Acc`.
fn rms_norm_rstd<T: LayerNormDType>(row: &[T], n: T::Acc, eps: T::Acc) -> T::Acc {
    use num_traits::Float;
    let zero = <T::Acc as num_traits::Zero>::zero();
    let sum2 = row
        .iter()
        .fold(zero, |acc, &v| acc + v.to_acc() * v.to_acc());
    (sum2 / n + eps).sqrt().recip()
}

/// Returns `dx` followed by `dalpha` in one buffer. With `r = rstd` and `g = grad * alpha`:
/// `dx = r * (g - x * r^2 * mean(g * x))`, `dalpha = sum over the rows of grad * x * r`, the
/// per chunk partial sums of `dalpha` added in order (the chunks only depend on the shape).
fn rms_norm_cpu_bwd<T: LayerNormDType>(
    xs: &[T],
    grad: &[T],
    alpha: &[T],
    n_cols: usize,
    eps: f32,
) -> Vec<T> {
    use num_traits::NumCast;
    const MAX_CHUNKS: usize = 64;
    let zero = <T::Acc as num_traits::Zero>::zero();
    let el_count = xs.len();
    let mut dst = vec![T::zero(); el_count + n_cols];
    if el_count == 0 {
        return dst;
    }
    let n: T::Acc = NumCast::from(n_cols).unwrap_or(zero);
    let eps: T::Acc = NumCast::from(eps).unwrap_or(zero);
    let chunk = (el_count / n_cols).div_ceil(MAX_CHUNKS) * n_cols;
    let (dxs, dalpha) = dst.split_at_mut(el_count);
    let partials: Vec<Vec<T::Acc>> = xs
        .par_chunks(chunk)
        .zip(grad.par_chunks(chunk))
        .zip(dxs.par_chunks_mut(chunk))
        .map(|((xs, grad), dxs)| {
            let mut dalpha = vec![zero; n_cols];
            for ((x, dy), dx) in xs
                .chunks(n_cols)
                .zip(grad.chunks(n_cols))
                .zip(dxs.chunks_mut(n_cols))
            {
                let rstd = rms_norm_rstd(x, n, eps);
                let g = |i: usize| dy[i].to_acc() * alpha[i].to_acc();
                let sum_gx = (0..n_cols).fold(zero, |acc, i| acc + g(i) * x[i].to_acc());
                let c = sum_gx / n * rstd * rstd;
                for (i, dx) in dx.iter_mut().enumerate() {
                    let x = x[i].to_acc();
                    *dx = T::from_acc(rstd * (g(i) - x * c));
                    dalpha[i] = dalpha[i] + dy[i].to_acc() * x * rstd;
                }
            }
            dalpha
        })
        .collect();
    for (i, d) in dalpha.iter_mut().enumerate() {
        *d = T::from_acc(partials.iter().fold(zero, |acc, p| acc + p[i]));
    }
    dst
}

/// The fused rms-norm backward: its output is `dx`, `dalpha` goes to `params`.
#[derive(Debug)]
struct RmsNormBwd {
    eps: f32,
    params: ParamGrads,
}

impl candle::CustomOp3 for RmsNormBwd {
    fn name(&self) -> &'static str {
        "rms-norm-bwd"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        use candle::backend::BackendStorage;
        fn inner<T: LayerNormDType>(
            (xs, l1): (&CpuStorage, &Layout),
            (grad, l2): (&CpuStorage, &Layout),
            (alpha, l3): (&CpuStorage, &Layout),
            op: &RmsNormBwd,
        ) -> Result<CpuStorage> {
            let xs = layer_norm_cpu_slice::<T>(xs, l1, "input")?;
            let grad = layer_norm_cpu_slice::<T>(grad, l2, "grad")?;
            let alpha = layer_norm_cpu_slice::<T>(alpha, l3, "alpha")?;
            let n_cols = alpha.len();
            let mut dst = rms_norm_cpu_bwd(xs, grad, alpha, n_cols, op.eps);
            let dalpha = candle::WithDType::to_cpu_storage_owned(dst.split_off(xs.len()));
            op.params.push(candle::Storage::Cpu(dalpha), n_cols)?;
            Ok(candle::WithDType::to_cpu_storage_owned(dst))
        }
        let (x, g, a) = ((s1, l1), (s2, l2), (s3, l3));
        let storage = match s1.dtype() {
            DType::BF16 => inner::<half::bf16>(x, g, a, self)?,
            DType::F16 => inner::<half::f16>(x, g, a, self)?,
            DType::F32 => inner::<f32>(x, g, a, self)?,
            DType::F64 => inner::<f64>(x, g, a, self)?,
            dt => candle::bail!("rms-norm is not implemented for {dt:?}"),
        };
        Ok((storage, l1.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle::CudaStorage,
        l1: &Layout,
        s2: &candle::CudaStorage,
        l2: &Layout,
        s3: &candle::CudaStorage,
        l3: &Layout,
    ) -> Result<(candle::CudaStorage, Shape)> {
        use candle::backend::BackendStorage;
        if l1.shape() != l2.shape() {
            candle::bail!(
                "rms-norm grad shape {:?} does not match input {:?}",
                l2.shape(),
                l1.shape()
            )
        }
        let dev = s1.device();
        let (x, g, a, eps) = ((s1, l1), (s2, l2), Some((s3, l3)), self.eps);
        // dx and dalpha, no dbeta.
        let (rms, da, db) = (Norm::Rms, true, false);
        let (storage, params) = match s1.dtype() {
            DType::BF16 => layer_norm_cuda::bwd::<half::bf16, f32>(dev, rms, x, g, a, eps, da, db)?,
            DType::F16 => layer_norm_cuda::bwd::<half::f16, f32>(dev, rms, x, g, a, eps, da, db)?,
            DType::F32 => layer_norm_cuda::bwd::<f32, f32>(dev, rms, x, g, a, eps, da, db)?,
            DType::F64 => layer_norm_cuda::bwd::<f64, f64>(dev, rms, x, g, a, eps, da, db)?,
            dt => candle::bail!("rms-norm is not implemented for {dt:?}"),
        };
        let n_cols = l3.shape().elem_count();
        for grad in params {
            self.params.push(candle::Storage::Cuda(grad), n_cols)?;
        }
        Ok((storage, l1.shape().clone()))
    }
}

/// Gradients of [`rms_norm`] for the output gradient `grad`: `dx` and, when `alpha` tracks a
/// gradient, `dalpha`. Fused on cpu and cuda, tensor ops on other devices.
pub fn rms_norm_bwd(
    xs: &Tensor,
    alpha: &Tensor,
    grad: &Tensor,
    eps: f32,
) -> Result<(Tensor, Option<Tensor>)> {
    let n_cols = alpha.dims1()?;
    if xs.device().is_cpu() || xs.device().is_cuda() {
        let (xs, grad) = (xs.contiguous()?, grad.contiguous()?);
        let op = RmsNormBwd {
            eps,
            params: ParamGrads::default(),
        };
        let dxs = xs.apply_op3_no_bwd(&grad, &alpha.contiguous()?, &op)?;
        let dalpha = alpha.track_op().then(|| op.params.take(&xs)).transpose()?;
        return Ok((dxs, dalpha));
    }
    let dtype = xs.dtype();
    let internal_dtype = match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    };
    let x = xs.to_dtype(internal_dtype)?;
    let grad = grad.to_dtype(internal_dtype)?;
    let rstd = (x.sqr()?.mean_keepdim(D::Minus1)? + eps as f64)?
        .sqrt()?
        .recip()?;
    let g = grad.broadcast_mul(&alpha.to_dtype(internal_dtype)?)?;
    let c = ((&g * &x)?.mean_keepdim(D::Minus1)? * rstd.sqr()?)?;
    let dxs = (g - x.broadcast_mul(&c)?)?.broadcast_mul(&rstd)?;
    let dalpha = match alpha.track_op() {
        true => {
            let da = (grad * x.broadcast_mul(&rstd)?)?
                .reshape(((), n_cols))?
                .sum(0)?;
            Some(da.to_dtype(dtype)?)
        }
        false => None,
    };
    Ok((dxs.to_dtype(dtype)?, dalpha))
}

/// Element types supported by the fused layer norm, with the type used to accumulate the
/// statistics: f32 for f16, bf16 and f32, f64 for f64.
trait LayerNormDType: candle::WithDType {
    type Acc: num_traits::Float + Send + Sync;
    fn to_acc(self) -> Self::Acc;
    fn from_acc(v: Self::Acc) -> Self;
    /// `row` in the accumulation type: the row itself when it already is, else converted into
    /// `buf` (reused across rows).
    fn acc_row<'a>(row: &'a [Self], buf: &'a mut Vec<Self::Acc>) -> &'a [Self::Acc];
    /// The slice `acc_row(row, buf)` returned, without converting `row` again.
    fn acc_row_view<'a>(row: &'a [Self], buf: &'a [Self::Acc]) -> &'a [Self::Acc];

    /// `row_fwd_y` for a row of this type; `out` is a buffer for the row in the accumulation
    /// type where the type converts its output after the loop (f16).
    #[inline(always)]
    fn fwd_row<const L: usize>(
        row: (&[Self::Acc], Affine<'_, Self::Acc>),
        s: LayerNormRowStats<Self::Acc>,
        next: Option<&[Self::Acc]>,
        dst: &mut [std::mem::MaybeUninit<Self>],
        _out: &mut Vec<Self::Acc>,
    ) -> [[Self::Acc; L]; 2] {
        row_fwd_y::<Self, L>(row, s, next, dst)
    }

    /// `row_bwd_dx` for a row of this type, `out` as in `fwd_row`.
    #[inline(always)]
    fn bwd_row<const L: usize>(
        row: (BwdRow<'_, Self::Acc>, &[Self::Acc]),
        stats: (LayerNormRowStats<Self::Acc>, Self::Acc, Self::Acc),
        next: Option<BwdRow<'_, Self::Acc>>,
        (dx, dalpha, dbeta): BwdOut<'_, Self>,
        _out: &mut Vec<Self::Acc>,
    ) -> [[Self::Acc; L]; 4] {
        row_bwd_dx::<Self, L>(row, stats, next, dx, dalpha, dbeta)
    }

    /// The forward of a task's rows (see `layer_norm_fwd_task`) with the cpu's wider vectors,
    /// where this type has such a path (f32, f16 and bf16 on x86-64 with AVX-512 or AVX2):
    /// false when the rows were left to the portable path.
    fn fwd_rows_simd(_rows: FwdRows<'_, Self>, _affine: Affine<'_, Self::Acc>, _eps: f32) -> bool {
        false
    }

    /// The backward of a task's rows (see `layer_norm_bwd_task`) with the cpu's wider vectors,
    /// as `fwd_rows_simd`: their sums of `dalpha` and `dbeta`, `None` when the rows were left
    /// to the portable path.
    fn bwd_rows_simd(
        _rows: BwdGroup<'_, Self>,
        _alpha: &[Self::Acc],
        _eps: f32,
    ) -> Option<[Vec<Self::Acc>; 2]> {
        None
    }
}

/// The slots of a row's `dx` and the task's `dalpha` and `dbeta` sums.
type BwdOut<'a, T> = (
    &'a mut [std::mem::MaybeUninit<T>],
    &'a mut [<T as LayerNormDType>::Acc],
    &'a mut [<T as LayerNormDType>::Acc],
);

macro_rules! layer_norm_dtype {
    ($t:ty, $acc:ty, $to:expr, $from:expr, $acc_row:expr, $acc_row_view:expr $(, $item:item)*) => {
        impl LayerNormDType for $t {
            type Acc = $acc;
            fn to_acc(self) -> $acc {
                $to(self)
            }
            fn from_acc(v: $acc) -> Self {
                $from(v)
            }
            fn acc_row<'a>(row: &'a [Self], buf: &'a mut Vec<$acc>) -> &'a [$acc] {
                $acc_row(row, buf)
            }
            fn acc_row_view<'a>(row: &'a [Self], buf: &'a [$acc]) -> &'a [$acc] {
                $acc_row_view(row, buf)
            }
            $($item)*
        }
    };
}
fn same_row<'a, T>(row: &'a [T], _: &'a mut Vec<T>) -> &'a [T] {
    row
}
fn converted_row<'a, T: LayerNormDType>(row: &[T], buf: &'a mut Vec<T::Acc>) -> &'a [T::Acc] {
    buf.clear();
    buf.extend(row.iter().map(|v| v.to_acc()));
    buf
}
/// `converted_row` for f16, with `half`'s slice conversion (F16C, eight at a time, where the
/// CPU has it). One element at a time, each conversion checks for F16C and calls it, and the
/// loop is not vectorized.
fn converted_f16_row<'a>(row: &[half::f16], buf: &'a mut Vec<f32>) -> &'a [f32] {
    use half::slice::HalfFloatSliceExt;
    buf.resize(row.len(), 0.);
    row.convert_to_f32_slice(buf);
    buf
}
/// Runs `write` on a row of f32 slots in `buf` as long as `dst`, then converts that row into
/// `dst` with `half`'s slice conversion, a block at a time.
///
/// # Safety
///
/// `write` must initialize every slot it is given (the row functions do).
#[inline(always)]
unsafe fn f16_row_via_f32<R>(
    buf: &mut Vec<f32>,
    dst: &mut [std::mem::MaybeUninit<half::f16>],
    write: impl FnOnce(&mut [std::mem::MaybeUninit<f32>]) -> R,
) -> R {
    use half::slice::HalfFloatSliceExt;
    const BLOCK: usize = 64;
    let len = dst.len();
    buf.clear();
    buf.reserve(len);
    let r = write(&mut buf.spare_capacity_mut()[..len]);
    // Safety: `write` initialized the `len` slots (the caller's contract).
    unsafe { buf.set_len(len) };
    let mut block = [half::f16::ZERO; BLOCK];
    for (src, dst) in buf.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)) {
        let block = &mut block[..src.len()];
        block.convert_from_f32_slice(src);
        for (d, &h) in dst.iter_mut().zip(block.iter()) {
            d.write(h);
        }
    }
    r
}
fn same_row_view<'a, T>(row: &'a [T], _: &'a [T]) -> &'a [T] {
    row
}
fn converted_row_view<'a, T, A>(_: &'a [T], buf: &'a [A]) -> &'a [A] {
    buf
}
/// `LayerNormDType::fwd_rows_simd` for the types `layer_norm_x86` runs (f32, f16, bf16).
#[cfg(target_arch = "x86_64")]
fn fwd_rows_x86<T: crate::layer_norm_x86::Elem>(
    (xs, dst): FwdRows<'_, T>,
    affine: Affine<'_, f32>,
    eps: f32,
) -> bool {
    use crate::layer_norm_x86::{fwd, Isa};
    match Isa::detect(affine.0.len()) {
        Some(isa) => {
            fwd(isa, xs, affine, eps, dst);
            true
        }
        None => false,
    }
}
/// `LayerNormDType::bwd_rows_simd` for the types `layer_norm_x86` runs (f32, f16, bf16).
#[cfg(target_arch = "x86_64")]
fn bwd_rows_x86<T: crate::layer_norm_x86::Elem>(
    (xs, dys, dxs): BwdGroup<'_, T>,
    alpha: &[f32],
    eps: f32,
) -> Option<[Vec<f32>; 2]> {
    use crate::layer_norm_x86::{bwd, Isa};
    let isa = Isa::detect(alpha.len())?;
    let (mut dalpha, mut dbeta) = (vec![0.; alpha.len()], vec![0.; alpha.len()]);
    bwd(isa, (xs, dys), alpha, eps, dxs, (&mut dalpha, &mut dbeta));
    Some([dalpha, dbeta])
}
layer_norm_dtype!(
    f32,
    f32,
    |v| v,
    |v| v,
    same_row,
    same_row_view,
    #[cfg(target_arch = "x86_64")]
    fn fwd_rows_simd(rows: FwdRows<'_, Self>, affine: Affine<'_, f32>, eps: f32) -> bool {
        fwd_rows_x86(rows, affine, eps)
    },
    #[cfg(target_arch = "x86_64")]
    fn bwd_rows_simd(rows: BwdGroup<'_, Self>, alpha: &[f32], eps: f32) -> Option<[Vec<f32>; 2]> {
        bwd_rows_x86(rows, alpha, eps)
    }
);
layer_norm_dtype!(f64, f64, |v| v, |v| v, same_row, same_row_view);
// f16 rows run in f32 and are converted after the loop: `f16::from_f32` one element at a time
// keeps the loop from being vectorized, like the conversion of its input.
layer_norm_dtype!(
    half::f16,
    f32,
    half::f16::to_f32,
    half::f16::from_f32,
    converted_f16_row,
    converted_row_view,
    fn fwd_row<const L: usize>(
        row: (&[f32], Affine<'_, f32>),
        s: LayerNormRowStats<f32>,
        next: Option<&[f32]>,
        dst: &mut [std::mem::MaybeUninit<Self>],
        out: &mut Vec<f32>,
    ) -> [[f32; L]; 2] {
        // Safety: `row_fwd_y` writes every slot of its output.
        unsafe { f16_row_via_f32(out, dst, |y| row_fwd_y::<f32, L>(row, s, next, y)) }
    },
    fn bwd_row<const L: usize>(
        row: (BwdRow<'_, f32>, &[f32]),
        stats: (LayerNormRowStats<f32>, f32, f32),
        next: Option<BwdRow<'_, f32>>,
        (dx, dalpha, dbeta): BwdOut<'_, Self>,
        out: &mut Vec<f32>,
    ) -> [[f32; L]; 4] {
        // Safety: `row_bwd_dx` writes every slot of its `dx`.
        unsafe {
            f16_row_via_f32(out, dx, |dx| {
                row_bwd_dx::<f32, L>(row, stats, next, dx, dalpha, dbeta)
            })
        }
    },
    #[cfg(target_arch = "x86_64")]
    fn fwd_rows_simd(rows: FwdRows<'_, Self>, affine: Affine<'_, f32>, eps: f32) -> bool {
        fwd_rows_x86(rows, affine, eps)
    },
    #[cfg(target_arch = "x86_64")]
    fn bwd_rows_simd(rows: BwdGroup<'_, Self>, alpha: &[f32], eps: f32) -> Option<[Vec<f32>; 2]> {
        bwd_rows_x86(rows, alpha, eps)
    }
);
layer_norm_dtype!(
    half::bf16,
    f32,
    half::bf16::to_f32,
    half::bf16::from_f32,
    converted_row,
    converted_row_view,
    #[cfg(target_arch = "x86_64")]
    fn fwd_rows_simd(rows: FwdRows<'_, Self>, affine: Affine<'_, f32>, eps: f32) -> bool {
        fwd_rows_x86(rows, affine, eps)
    },
    #[cfg(target_arch = "x86_64")]
    fn bwd_rows_simd(rows: BwdGroup<'_, Self>, alpha: &[f32], eps: f32) -> Option<[Vec<f32>; 2]> {
        bwd_rows_x86(rows, alpha, eps)
    }
);

/// Lanes of the row sums: independent accumulator chains, four 4-wide vector registers per sum
/// for f32 (an add waits ~3 cycles for the previous one), one in the backward, whose loop keeps
/// four sums of the next row while it writes this row's gradients (more would not fit in the
/// registers; 16-bit rows take two, their loop is only vectorized with as many). The lanes are
/// combined in a fixed order, so a sum only depends on the row length.
const ROW_LANES: usize = 16;
const ROW_LANES_BWD: usize = 4;

/// A row's elements in blocks of `N`, and the elements past the last whole block.
fn row_blocks<A, const N: usize>(row: &[A]) -> (std::slice::ChunksExact<'_, A>, &[A]) {
    let blocks = row.chunks_exact(N);
    let tail = blocks.remainder();
    (blocks, tail)
}

/// The lanes of a sum, combined pairwise (a short dependency chain: short rows are dominated by
/// it), then the elements past the last whole block in order.
#[inline(always)]
fn fold_lanes<A: num_traits::Float, const N: usize>(
    mut lanes: [A; N],
    tail: impl Iterator<Item = A>,
) -> A {
    let mut width = N / 2;
    while width > 0 {
        for j in 0..width {
            lanes[j] = lanes[j] + lanes[j + width];
        }
        width /= 2;
    }
    tail.fold(lanes[0], |s, v| s + v)
}

/// Per-lane sums of `d = x - shift` and `d * d` over the whole blocks of a row. Not inlined,
/// like the other lane functions: inside the caller the vectorizer shapes the lanes after their
/// final reduction (2-wide and scalar code); on their own they fill vector registers.
#[inline(never)]
fn row_moment_lanes<A: num_traits::Float, const L: usize>(x: &[A], shift: A) -> [[A; L]; 2] {
    let mut sum = [[A::zero(); L]; 2];
    for x in row_blocks::<A, L>(x).0 {
        for j in 0..L {
            let d = x[j] - shift;
            sum[0][j] = sum[0][j] + d;
            sum[1][j] = sum[1][j] + d * d;
        }
    }
    sum
}

/// Per-lane sums of `d`, `d * d`, `g` and `g * d` with `d = x - shift`, `g = dy * alpha`, over
/// the whole blocks of a row: the backward's statistics and its two row sums in one pass.
#[inline(never)]
fn row_bwd_lanes<A: num_traits::Float, const L: usize>(
    (x, dy, alpha): (&[A], &[A], &[A]),
    shift: A,
) -> [[A; L]; 4] {
    let mut sum = [[A::zero(); L]; 4];
    let blocks = |v| row_blocks::<A, L>(v).0;
    for ((x, dy), a) in blocks(x).zip(blocks(dy)).zip(blocks(alpha)) {
        for j in 0..L {
            let (d, g) = (x[j] - shift, dy[j] * a[j]);
            sum[0][j] = sum[0][j] + d;
            sum[1][j] = sum[1][j] + d * d;
            sum[2][j] = sum[2][j] + g;
            sum[3][j] = sum[3][j] + g * d;
        }
    }
    sum
}

/// Rows a cpu task of the fused norms processes: about this many elements.
const ROW_TASK_ELEMS: usize = 1 << 14;

/// Rows processed a pass at a time, up to `ROW_GROUP_ELEMS` elements: a short row's statistics
/// are a chain of dependent sums, divisions and a square root; the rows of a group are
/// independent chains the core overlaps.
const ROW_GROUP: usize = 8;
const ROW_GROUP_ELEMS: usize = 1024;

fn row_group(n_cols: usize) -> usize {
    (ROW_GROUP_ELEMS / n_cols).clamp(1, ROW_GROUP)
}

/// Statistics of a row, over the row shifted by its first element so that rows with a large
/// mean compared to their spread keep their precision: the normalized value of `x` is
/// `(x - shift - mean) * rstd`, `shift + mean` is never rounded to a single value.
#[derive(Clone, Copy)]
struct LayerNormRowStats<A> {
    shift: A,
    mean: A,
    rstd: A,
}

/// The means and `rstd` of a group of rows, see `LayerNormRowStats::group_moments`.
struct GroupMoments<A> {
    mean: [A; ROW_GROUP],
    rstd: [A; ROW_GROUP],
    far: [bool; ROW_GROUP],
}

impl<A: num_traits::Float> LayerNormRowStats<A> {
    /// The mean and `rstd` of the first `rows` rows of a group from the sums of `d = x - shift`
    /// and `d * d` over their `n` elements, in one pass, written over arrays: the rows'
    /// divisions and square roots run side by side in vector registers (for a row of 64
    /// elements one dependent chain costs as much as the elements). `far[r]`: row `r`'s shift is
    /// more than two standard deviations from its mean, `E[d^2] - E[d]^2` then loses the low
    /// bits of the variance and the row is `reshifted`. Otherwise the error is within a few
    /// roundings of the two-pass variance.
    fn group_moments(
        sum_d: &[A; ROW_GROUP],
        sum_d2: &[A; ROW_GROUP],
        rows: usize,
        n: A,
        eps: A,
    ) -> GroupMoments<A> {
        let four = A::one() + A::one() + A::one() + A::one();
        let mut m = GroupMoments {
            mean: [A::zero(); ROW_GROUP],
            rstd: [A::zero(); ROW_GROUP],
            far: [false; ROW_GROUP],
        };
        for r in 0..rows.min(ROW_GROUP) {
            let mean = sum_d[r] / n;
            let var = sum_d2[r] / n - mean * mean;
            m.mean[r] = mean;
            m.far[r] = mean * mean > four * var;
            m.rstd[r] = (var.max(A::zero()) + eps).sqrt().recip();
        }
        m
    }

    /// A row whose shift is far from its `mean` (the mean of `x - shift`): its sums taken
    /// again, shifted by that mean, so that they are sums of values around 0. Redoing only the
    /// variance around the first mean is not enough: the sums of `x - shift` lose the low bits
    /// of the mean as well (at 65536 f32 elements with an outlier first element, dx was off by
    /// 1.9e-4 of its scale).
    fn reshifted(row: &[A], shift: A, mean: A, n: A, eps: A) -> Self {
        let shift = shift + mean;
        let [d, d2] = row_moment_lanes::<A, ROW_LANES>(row, shift);
        let tail = row_blocks::<A, ROW_LANES>(row).1.iter().map(|&x| x - shift);
        let mean = fold_lanes(d, tail.clone()) / n;
        let var = fold_lanes(d2, tail.map(|d| d * d)) / n - mean * mean;
        let rstd = (var.max(A::zero()) + eps).sqrt().recip();
        Self { shift, mean, rstd }
    }

    /// The statistics of each row of `rows` (at most `ROW_GROUP` rows of `n_cols` elements,
    /// already in the accumulation type) from their lane sums (`lanes`, see `row_moment_lanes`,
    /// shifted by each row's first element); entries past the last row are unused.
    fn group<const L: usize>(
        rows: &[A],
        lanes: &FwdGroupLanes<A, L>,
        n_cols: usize,
        eps: f32,
    ) -> [Self; ROW_GROUP] {
        use num_traits::NumCast;
        let zero = A::zero();
        let n: A = NumCast::from(n_cols).unwrap_or(zero);
        let eps: A = NumCast::from(eps).unwrap_or(zero);
        let (mut shift, mut sum_d, mut sum_d2) =
            ([zero; ROW_GROUP], [zero; ROW_GROUP], [zero; ROW_GROUP]);
        for (r, (row, &[d, d2])) in rows.chunks(n_cols).zip(lanes).enumerate() {
            shift[r] = row[0];
            let tail = row_blocks::<A, L>(row).1.iter().map(|&x| x - shift[r]);
            sum_d[r] = fold_lanes(d, tail.clone());
            sum_d2[r] = fold_lanes(d2, tail.map(|d| d * d));
        }
        let m = Self::group_moments(&sum_d, &sum_d2, rows.len() / n_cols, n, eps);
        let mut stats = std::array::from_fn(|r| Self {
            shift: shift[r],
            mean: m.mean[r],
            rstd: m.rstd[r],
        });
        for ((s, row), _) in stats
            .iter_mut()
            .zip(rows.chunks(n_cols))
            .zip(m.far)
            .filter(|f| f.1)
        {
            *s = Self::reshifted(row, s.shift, s.mean, n, eps);
        }
        stats
    }

    #[inline(always)]
    fn normalize(&self, v: A) -> A {
        (v - self.shift - self.mean) * self.rstd
    }
}

/// `v` converted to the accumulation type, once per call for the weights.
/// `v` in the accumulation type, converted as the rows are (`acc_row`: f16 a block at a time).
fn acc_vec<T: LayerNormDType>(v: &[T]) -> Vec<T::Acc> {
    T::acc_row(v, &mut Vec::new()).to_vec()
}

/// A buffer of `len` elements for an op's output, every element written by the op before the
/// buffer is used: `uninit` yields the slots, `assume_init` the buffer once they are written.
struct OutputBuffer<T>(Vec<T>);

impl<T> OutputBuffer<T> {
    fn new(len: usize) -> Self {
        Self(Vec::with_capacity(len))
    }

    fn uninit(&mut self) -> &mut [std::mem::MaybeUninit<T>] {
        self.0.spare_capacity_mut()
    }

    /// # Safety
    /// Every slot of `uninit()` has been written.
    unsafe fn assume_init(mut self) -> Vec<T> {
        self.0.set_len(self.0.capacity());
        self.0
    }
}

/// The lane sums of `row_moment_lanes` for each row of a group.
type FwdGroupLanes<A, const L: usize> = [[[A; L]; 2]; ROW_GROUP];

/// `alpha` and `beta` in the accumulation type.
type Affine<'a, A> = (&'a [A], &'a [A]);

/// Rows of the forward's input and the slots of their output.
type FwdRows<'a, T> = (&'a [T], &'a mut [std::mem::MaybeUninit<T>]);

/// Writes a row's `(x - mean) * rstd * alpha + beta`. With `next` (a row of the next group),
/// returns that row's lane sums (see `row_moment_lanes`) from the same loop: the loads of the
/// next row overlap the stores of this one.
#[inline(never)]
fn row_fwd_y<T: LayerNormDType, const L: usize>(
    (x, (alpha, beta)): (&[T::Acc], Affine<'_, T::Acc>),
    s: LayerNormRowStats<T::Acc>,
    next: Option<&[T::Acc]>,
    dst: &mut [std::mem::MaybeUninit<T>],
) -> [[T::Acc; L]; 2] {
    let mut sum = [[<T::Acc as num_traits::Zero>::zero(); L]; 2];
    let mut done = 0;
    if let Some(nx) = next {
        let shift = nx[0];
        let blocks = |v| row_blocks::<T::Acc, L>(v).0;
        let rows = blocks(x)
            .zip(blocks(nx))
            .zip(blocks(alpha))
            .zip(blocks(beta));
        for ((((x, nx), a), b), dst) in rows.zip(dst.chunks_exact_mut(L)) {
            for j in 0..L {
                let d = nx[j] - shift;
                sum[0][j] = sum[0][j] + d;
                sum[1][j] = sum[1][j] + d * d;
                dst[j].write(T::from_acc(s.normalize(x[j]) * a[j] + b[j]));
            }
        }
        done = x.len() / L * L;
    }
    // The rest of this row (the next row's rest is added by `LayerNormRowStats::group`).
    let elems = dst[done..].iter_mut().zip(&x[done..]);
    for ((dst, &x), (&a, &b)) in elems.zip(alpha[done..].iter().zip(&beta[done..])) {
        dst.write(T::from_acc(s.normalize(x) * a + b));
    }
    sum
}

/// The forward of a task's rows (`xs` and the slots of `dst`, whole rows of `alpha.len()`
/// elements). The rows are taken a group at a time, the loop that writes a group's output
/// also sums the next group's rows; `bufs` holds the rows of two groups when `T` is converted
/// to its accumulation type, and a row of output (see `LayerNormDType::fwd_row`).
fn layer_norm_fwd_task<T: LayerNormDType, const L: usize>(
    (xs, dst): FwdRows<T>,
    affine: Affine<'_, T::Acc>,
    eps: f32,
    bufs: &mut [Vec<T::Acc>; 3],
) {
    let n_cols = affine.0.len();
    let zero = <T::Acc as num_traits::Zero>::zero();
    let [buf, next_buf, out] = bufs;
    let (mut buf, mut next_buf) = (buf, next_buf);
    let group = row_group(n_cols) * n_cols;
    // The group whose output is written next, with its rows' statistics.
    let mut pending: Option<(FwdRows<T>, _)> = None;
    for next in xs
        .chunks(group)
        .zip(dst.chunks_mut(group))
        .map(Some)
        .chain([None])
    {
        let next = next.map(|(xs, dst)| {
            T::acc_row(xs, next_buf);
            (xs, dst)
        });
        let next_rows = next.as_ref().map(|(xs, _)| T::acc_row_view(xs, next_buf));
        let mut lanes = [[[zero; L]; 2]; ROW_GROUP];
        let mut next_lanes = next_rows
            .iter()
            .flat_map(|xs| xs.chunks(n_cols))
            .zip(&mut lanes);
        match pending.take() {
            Some(((xs, dst), stats)) => {
                let xs = T::acc_row_view(xs, buf);
                for ((x, dst), s) in xs.chunks(n_cols).zip(dst.chunks_mut(n_cols)).zip(stats) {
                    let next = next_lanes.next();
                    let next_row = next.as_ref().map(|n| n.0);
                    let sum = T::fwd_row((x, affine), s, next_row, dst, out);
                    if let Some((_, lanes)) = next {
                        *lanes = sum;
                    }
                }
            }
            None => {
                for (x, lanes) in next_lanes {
                    *lanes = row_moment_lanes(x, x[0]);
                }
            }
        }
        if let (Some(next), Some(xs)) = (next, next_rows) {
            pending = Some((next, LayerNormRowStats::group(xs, &lanes, n_cols, eps)));
            std::mem::swap(&mut buf, &mut next_buf);
        }
    }
}

fn layer_norm_cpu_fwd<T: LayerNormDType>(
    xs: &[T],
    alpha: Option<&[T]>,
    beta: Option<&[T]>,
    n_cols: usize,
    eps: f32,
) -> Vec<T> {
    if n_cols == 0 || xs.is_empty() {
        return vec![];
    }
    // Without alpha or beta, a row of ones or zeros keeps one loop for all cases.
    let (one, zero) = (
        <T::Acc as num_traits::One>::one(),
        <T::Acc as num_traits::Zero>::zero(),
    );
    let alpha = alpha.map_or_else(|| vec![one; n_cols], acc_vec);
    let beta = beta.map_or_else(|| vec![zero; n_cols], acc_vec);
    let mut dst = OutputBuffer::new(xs.len());
    let chunk = (ROW_TASK_ELEMS / n_cols).max(1) * n_cols;
    let task = |bufs: &mut _, (src, dst): (&[T], &mut [std::mem::MaybeUninit<T>])| {
        let affine = (alpha.as_slice(), beta.as_slice());
        if T::fwd_rows_simd((src, &mut *dst), affine, eps) {
            return;
        }
        // The loop keeps the next row's sums while it writes this row's output: for f64
        // (two per vector register) half the lanes, more would not fit in the registers.
        if std::mem::size_of::<T::Acc>() == 8 {
            layer_norm_fwd_task::<T, { ROW_LANES / 2 }>((src, dst), affine, eps, bufs)
        } else {
            layer_norm_fwd_task::<T, ROW_LANES>((src, dst), affine, eps, bufs)
        }
    };
    if rayon::current_num_threads() == 1 {
        // On the calling thread: a pool of one thread would take the tasks from it and hand
        // back the result, a wake-up each way.
        let mut bufs = Default::default();
        let chunks = xs.chunks(chunk).zip(dst.uninit().chunks_mut(chunk));
        chunks.for_each(|c| task(&mut bufs, c));
    } else {
        let chunks = xs.par_chunks(chunk).zip(dst.uninit().par_chunks_mut(chunk));
        chunks.for_each_init(Default::default, task);
    }
    // Safety: the rows cover `xs`, every element of every row was written.
    unsafe { dst.assume_init() }
}

/// The lane sums of `row_bwd_lanes` for each row of a group.
type BwdGroupLanes<A, const L: usize> = [[[A; L]; 4]; ROW_GROUP];

/// The statistics of each row of a group (at most `ROW_GROUP` rows of `alpha.len()` elements)
/// and `mean(g)`, `mean(g * xhat)` with `g = dy * alpha`, from the rows' lane sums (`lanes`, see
/// `row_bwd_lanes`, shifted by each row's first element): one pass over a row whose first
/// element is close enough to the mean, else (see `LayerNormRowStats::group_moments`) two more.
fn layer_norm_bwd_group<A: num_traits::Float, const L: usize>(
    (xs, dys, alpha): (&[A], &[A], &[A]),
    lanes: &BwdGroupLanes<A, L>,
    n: A,
    eps: A,
) -> [(LayerNormRowStats<A>, A, A); ROW_GROUP] {
    let n_cols = alpha.len();
    let zero = [A::zero(); ROW_GROUP];
    let (mut shift, mut sum_d, mut sum_d2, mut sum_g, mut sum_gd) = (zero, zero, zero, zero, zero);
    let rows = || xs.chunks(n_cols).zip(dys.chunks(n_cols));
    for (r, ((x, dy), &[d, d2, g, gd])) in rows().zip(lanes).enumerate() {
        shift[r] = x[0];
        let tail = |v| row_blocks::<A, L>(v).1;
        let (bx, bdy, ba) = (tail(x), tail(dy), tail(alpha));
        let tail = || {
            bx.iter()
                .zip(bdy)
                .zip(ba)
                .map(|((&x, &dy), &a)| (x - shift[r], dy * a))
        };
        sum_d[r] = fold_lanes(d, tail().map(|(d, _)| d));
        sum_d2[r] = fold_lanes(d2, tail().map(|(d, _)| d * d));
        sum_g[r] = fold_lanes(g, tail().map(|(_, g)| g));
        sum_gd[r] = fold_lanes(gd, tail().map(|(d, g)| g * d));
    }
    let n_rows = xs.len() / n_cols;
    let m = LayerNormRowStats::group_moments(&sum_d, &sum_d2, n_rows, n, eps);
    let (mut mean_g, mut mean_gx) = (zero, zero);
    for r in 0..n_rows.min(ROW_GROUP) {
        mean_g[r] = sum_g[r] / n;
        // sum(g * xhat) = rstd * (sum(g * d) - mean * sum(g)), within the same bound.
        mean_gx[r] = m.rstd[r] * (sum_gd[r] / n - m.mean[r] * mean_g[r]);
    }
    let mut out = std::array::from_fn(|r| {
        let (shift, mean, rstd) = (shift[r], m.mean[r], m.rstd[r]);
        (
            LayerNormRowStats { shift, mean, rstd },
            mean_g[r],
            mean_gx[r],
        )
    });
    for (((x, dy), out), _) in rows().zip(&mut out).zip(m.far).filter(|f| f.1) {
        let s = LayerNormRowStats::reshifted(x, out.0.shift, out.0.mean, n, eps);
        let elems = x.iter().zip(dy).zip(alpha);
        let sum_gx = elems.fold(A::zero(), |acc, ((&x, &dy), &a)| {
            acc + dy * a * s.normalize(x)
        });
        *out = (s, out.1, sum_gx / n);
    }
    out
}

/// A row of the backward in the accumulation type: `x` and `dy`.
type BwdRow<'a, A> = (&'a [A], &'a [A]);

/// Writes a row's `dx` and adds its terms to `dalpha` and `dbeta`. With `next` (a row of the
/// next group), returns that row's lane sums (see `row_bwd_lanes`) from the same loop: the
/// loads of the next row overlap the stores of this one. The written slices are arguments of
/// their own, so that the compiler knows they overlap nothing else and vectorizes the loop.
#[inline(never)]
fn row_bwd_dx<T: LayerNormDType, const L: usize>(
    ((x, dy), alpha): (BwdRow<'_, T::Acc>, &[T::Acc]),
    (s, mean_g, mean_gx): (LayerNormRowStats<T::Acc>, T::Acc, T::Acc),
    next: Option<BwdRow<'_, T::Acc>>,
    dx: &mut [std::mem::MaybeUninit<T>],
    dalpha: &mut [T::Acc],
    dbeta: &mut [T::Acc],
) -> [[T::Acc; L]; 4] {
    let grad = |dx: &mut std::mem::MaybeUninit<T>, x, dy, a, da: &mut T::Acc, db: &mut T::Acc| {
        let xhat = s.normalize(x);
        dx.write(T::from_acc((dy * a - mean_g - xhat * mean_gx) * s.rstd));
        *da = *da + dy * xhat;
        *db = *db + dy;
    };
    let mut sum = [[<T::Acc as num_traits::Zero>::zero(); L]; 4];
    let mut done = 0;
    if let Some((nx, ndy)) = next {
        let shift = nx[0];
        let blocks = |v| row_blocks::<T::Acc, L>(v).0;
        let rows = blocks(x).zip(blocks(dy)).zip(blocks(nx)).zip(blocks(ndy));
        let params = dalpha.chunks_exact_mut(L).zip(dbeta.chunks_exact_mut(L));
        let elems = rows
            .zip(blocks(alpha))
            .zip(dx.chunks_exact_mut(L))
            .zip(params);
        for ((((((x, dy), nx), ndy), a), dx), (da, db)) in elems {
            for j in 0..L {
                let (d, g) = (nx[j] - shift, ndy[j] * a[j]);
                sum[0][j] = sum[0][j] + d;
                sum[1][j] = sum[1][j] + d * d;
                sum[2][j] = sum[2][j] + g;
                sum[3][j] = sum[3][j] + g * d;
                // `grad`, written out: through the closure this loop is not vectorized.
                let xhat = s.normalize(x[j]);
                dx[j].write(T::from_acc(
                    (dy[j] * a[j] - mean_g - xhat * mean_gx) * s.rstd,
                ));
                da[j] = da[j] + dy[j] * xhat;
                db[j] = db[j] + dy[j];
            }
        }
        done = x.len() / L * L;
    }
    // The rest of this row (the next row's rest is added by `layer_norm_bwd_group`).
    let elems = dx[done..]
        .iter_mut()
        .zip(&x[done..])
        .zip(&dy[done..])
        .zip(&alpha[done..]);
    let params = dalpha[done..].iter_mut().zip(&mut dbeta[done..]);
    for ((((dx, &x), &dy), &a), (da, db)) in elems.zip(params) {
        grad(dx, x, dy, a, da, db);
    }
    sum
}

/// Rows of the backward's input: `x`, `dy` and the slots of `dx`.
type BwdGroup<'a, T> = (&'a [T], &'a [T], &'a mut [std::mem::MaybeUninit<T>]);

/// The backward of a task's rows (`xs`, `grad` and the slots of `dxs`: whole rows of
/// `alpha.len()` elements), returns their sums of `dalpha` and `dbeta`. The rows are taken a
/// group at a time, the loop that writes a group's `dx` also sums the next group's rows;
/// `bufs` holds the rows of two groups when `T` is converted to its accumulation type, and a
/// row of `dx` (see `LayerNormDType::bwd_row`).
fn layer_norm_bwd_task<T: LayerNormDType, const L: usize>(
    (xs, grad, dxs): BwdGroup<T>,
    alpha: &[T::Acc],
    (n, eps): (T::Acc, T::Acc),
    bufs: &mut [Vec<T::Acc>; 5],
) -> [Vec<T::Acc>; 2] {
    let n_cols = alpha.len();
    let zero = <T::Acc as num_traits::Zero>::zero();
    let (mut dalpha, mut dbeta) = (vec![zero; n_cols], vec![zero; n_cols]);
    let [b0, b1, b2, b3, out] = bufs;
    let (mut bufs, mut next_bufs) = ((b0, b1), (b2, b3));
    let group = row_group(n_cols) * n_cols;
    let groups = xs
        .chunks(group)
        .zip(grad.chunks(group))
        .zip(dxs.chunks_mut(group));
    // The group whose dx is written next, with its rows' statistics.
    let mut pending: Option<(BwdGroup<T>, _)> = None;
    for next in groups.map(Some).chain([None]) {
        let next = next.map(|((xs, dys), dxs)| {
            T::acc_row(xs, next_bufs.0);
            T::acc_row(dys, next_bufs.1);
            (xs, dys, dxs)
        });
        let next_rows = next.as_ref().map(|(xs, dys, _)| {
            let xs = T::acc_row_view(xs, next_bufs.0);
            (xs, T::acc_row_view(dys, next_bufs.1))
        });
        let mut lanes = [[[zero; L]; 4]; ROW_GROUP];
        let mut next_lanes = next_rows
            .iter()
            .flat_map(|(xs, dys)| xs.chunks(n_cols).zip(dys.chunks(n_cols)))
            .zip(&mut lanes);
        match pending.take() {
            Some(((xs, dys, dxs), stats)) => {
                let (xs, dys) = (T::acc_row_view(xs, bufs.0), T::acc_row_view(dys, bufs.1));
                let rows = xs.chunks(n_cols).zip(dys.chunks(n_cols));
                for ((row, dx), stats) in rows.zip(dxs.chunks_mut(n_cols)).zip(stats) {
                    let next = next_lanes.next();
                    let next_row = next.as_ref().map(|n| n.0);
                    let dst = (dx, dalpha.as_mut_slice(), dbeta.as_mut_slice());
                    let sum = T::bwd_row((row, alpha), stats, next_row, dst, out);
                    if let Some((_, lanes)) = next {
                        *lanes = sum;
                    }
                }
            }
            None => {
                for ((x, dy), lanes) in next_lanes {
                    *lanes = row_bwd_lanes((x, dy, alpha), x[0]);
                }
            }
        }
        if let (Some(next), Some(rows)) = (next, next_rows) {
            let stats = layer_norm_bwd_group((rows.0, rows.1, alpha), &lanes, n, eps);
            pending = Some((next, stats));
            std::mem::swap(&mut bufs, &mut next_bufs);
        }
    }
    [dalpha, dbeta]
}

/// `dst[i]`: the sum of `part[i]` over `parts`, added in order (the result does not depend on
/// the number of threads), a block of columns per task.
fn sum_partials<T: LayerNormDType>(dst: &mut [std::mem::MaybeUninit<T>], parts: &[&[T::Acc]]) {
    const BLOCK: usize = ROW_TASK_ELEMS / 4;
    let zero = <T::Acc as num_traits::Zero>::zero();
    let blocks = dst.par_chunks_mut(BLOCK).enumerate();
    blocks.for_each_init(Vec::new, |sum, (i, dst)| {
        let cols = i * BLOCK..i * BLOCK + dst.len();
        sum.clear();
        sum.resize(dst.len(), zero);
        for part in parts {
            for (s, &p) in sum.iter_mut().zip(&part[cols.clone()]) {
                *s = *s + p;
            }
        }
        for (d, &s) in dst.iter_mut().zip(sum.iter()) {
            d.write(T::from_acc(s));
        }
    });
}

/// Returns `dx` followed by `dalpha` (when `alpha_grad`) and `dbeta` (when `beta_grad`) in a
/// single buffer. The rows are split in a number of chunks that only depends on the shape and
/// the per chunk partial sums for `dalpha`/`dbeta` are combined in order, so the result does
/// not depend on the number of threads.
#[allow(clippy::too_many_arguments)]
fn layer_norm_cpu_bwd<T: LayerNormDType>(
    xs: &[T],
    grad: &[T],
    alpha: Option<&[T]>,
    n_cols: usize,
    eps: f32,
    alpha_grad: bool,
    beta_grad: bool,
) -> Vec<T> {
    use num_traits::NumCast;
    const MAX_CHUNKS: usize = 64;
    let zero = <T::Acc as num_traits::Zero>::zero();
    let el_count = xs.len();
    let n_params = alpha_grad as usize + beta_grad as usize;
    if el_count == 0 || n_cols == 0 {
        return vec![T::zero(); el_count + n_params * n_cols];
    }
    let n_rows = el_count / n_cols;
    let n: T::Acc = NumCast::from(n_cols).unwrap_or(zero);
    let eps_acc: T::Acc = NumCast::from(eps).unwrap_or(zero);
    // Without alpha, g = dy: a row of ones keeps one loop for both cases.
    let alpha = match alpha {
        Some(alpha) => acc_vec(alpha),
        None => vec![<T::Acc as num_traits::One>::one(); n_cols],
    };
    let mut dst = OutputBuffer::new(el_count + n_params * n_cols);
    // At least ~4 tasks' worth of rows and 8 rows per chunk: each chunk adds a row of partials
    // per parameter (zeroed, updated per row, reduced at the end).
    let rows_per_chunk = n_rows
        .div_ceil(MAX_CHUNKS)
        .max(4 * ROW_TASK_ELEMS / n_cols)
        .max(8);
    let (dxs, dparams) = dst.uninit().split_at_mut(el_count);
    let task = |bufs: &mut _, ((xs, grad), dxs): ((&[T], &[T]), &mut [_])| {
        if let Some(sums) = T::bwd_rows_simd((xs, grad, &mut *dxs), &alpha, eps) {
            return sums;
        }
        let (rows, stats) = ((xs, grad, dxs), (n, eps_acc));
        if std::mem::size_of::<T>() == 2 {
            layer_norm_bwd_task::<T, { 2 * ROW_LANES_BWD }>(rows, &alpha, stats, bufs)
        } else {
            layer_norm_bwd_task::<T, ROW_LANES_BWD>(rows, &alpha, stats, bufs)
        }
    };
    let chunk = rows_per_chunk * n_cols;
    let partials: Vec<_> = if rayon::current_num_threads() == 1 {
        // On the calling thread, as in `layer_norm_cpu_fwd`.
        let mut bufs = Default::default();
        let chunks = xs.chunks(chunk).zip(grad.chunks(chunk));
        let chunks = chunks.zip(dxs.chunks_mut(chunk));
        chunks.map(|c| task(&mut bufs, c)).collect()
    } else {
        let chunks = xs.par_chunks(chunk).zip(grad.par_chunks(chunk));
        let chunks = chunks.zip(dxs.par_chunks_mut(chunk));
        chunks.map_init(Default::default, task).collect()
    };
    let (dalpha, dbeta) = dparams.split_at_mut(if alpha_grad { n_cols } else { 0 });
    let parts = |i: usize| partials.iter().map(|p| p[i].as_slice()).collect::<Vec<_>>();
    sum_partials(dalpha, &parts(0));
    sum_partials(dbeta, &parts(1));
    // Safety: dx covers `xs` row by row, dalpha and dbeta (when requested) are written above.
    unsafe { dst.assume_init() }
}

fn layer_norm_cpu_slice<'a, T: candle::WithDType>(
    s: &'a CpuStorage,
    l: &Layout,
    name: &str,
) -> Result<&'a [T]> {
    match l.contiguous_offsets() {
        None => candle::bail!("layer-norm {name} has to be contiguous"),
        Some((o1, o2)) => Ok(&s.as_slice::<T>()?[o1..o2]),
    }
}

/// The fused layer norm over the last dimension. `alpha` and `beta` are the optional trailing
/// inputs of the custom op, in this order.
#[derive(Debug, Clone)]
struct LayerNorm {
    eps: f32,
    has_alpha: bool,
    has_beta: bool,
}

impl LayerNorm {
    fn split<'a, S>(&self, args: &[(&'a S, &'a Layout)]) -> LayerNormArgs<'a, S> {
        let mut args = args.iter().copied();
        let xs = args.next().expect("layer-norm without input");
        let alpha = if self.has_alpha { args.next() } else { None };
        let beta = if self.has_beta { args.next() } else { None };
        (xs, alpha, beta)
    }

    fn fwd_cpu(&self, args: &[(&CpuStorage, &Layout)]) -> Result<(CpuStorage, Shape)> {
        use candle::backend::BackendStorage;
        let ((xs, l), alpha, beta) = self.split(args);
        let n_cols = l.dims().last().copied().unwrap_or(1);
        fn inner<T: LayerNormDType>(
            op: &LayerNorm,
            (xs, l): (&CpuStorage, &Layout),
            alpha: Option<(&CpuStorage, &Layout)>,
            beta: Option<(&CpuStorage, &Layout)>,
            n_cols: usize,
        ) -> Result<CpuStorage> {
            let xs = layer_norm_cpu_slice::<T>(xs, l, "input")?;
            let alpha = match alpha {
                None => None,
                Some((s, l)) => Some(layer_norm_cpu_slice::<T>(s, l, "alpha")?),
            };
            let beta = match beta {
                None => None,
                Some((s, l)) => Some(layer_norm_cpu_slice::<T>(s, l, "beta")?),
            };
            let dst = layer_norm_cpu_fwd(xs, alpha, beta, n_cols, op.eps);
            Ok(candle::WithDType::to_cpu_storage_owned(dst))
        }
        let storage = match xs.dtype() {
            DType::BF16 => inner::<half::bf16>(self, (xs, l), alpha, beta, n_cols)?,
            DType::F16 => inner::<half::f16>(self, (xs, l), alpha, beta, n_cols)?,
            DType::F32 => inner::<f32>(self, (xs, l), alpha, beta, n_cols)?,
            DType::F64 => inner::<f64>(self, (xs, l), alpha, beta, n_cols)?,
            dt => candle::bail!("layer-norm is not implemented for {dt:?}"),
        };
        Ok((storage, l.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn fwd_cuda(
        &self,
        args: &[(&candle::CudaStorage, &Layout)],
    ) -> Result<(candle::CudaStorage, Shape)> {
        use candle::backend::BackendStorage;
        let ((xs, l), alpha, beta) = self.split(args);
        let dev = xs.device();
        let (x, eps) = ((xs, l), self.eps);
        let storage = match xs.dtype() {
            DType::BF16 => {
                layer_norm_cuda::fwd::<half::bf16>(dev, Norm::Layer, x, alpha, beta, eps)?
            }
            DType::F16 => layer_norm_cuda::fwd::<half::f16>(dev, Norm::Layer, x, alpha, beta, eps)?,
            DType::F32 => layer_norm_cuda::fwd::<f32>(dev, Norm::Layer, x, alpha, beta, eps)?,
            DType::F64 => layer_norm_cuda::fwd::<f64>(dev, Norm::Layer, x, alpha, beta, eps)?,
            dt => candle::bail!("layer-norm is not implemented for {dt:?}"),
        };
        Ok((storage, l.shape().clone()))
    }

    fn bwd(
        &self,
        xs: &Tensor,
        alpha: Option<&Tensor>,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (dxs, dalpha, dbeta) = layer_norm_bwd(xs, alpha, grad, self.eps, self.has_beta)?;
        Ok((Some(dxs), dalpha, dbeta))
    }
}

type LayerNormArgs<'a, S> = (
    (&'a S, &'a Layout),
    Option<(&'a S, &'a Layout)>,
    Option<(&'a S, &'a Layout)>,
);

/// Layer norm gradients with tensor ops, used on devices without a fused backward.
fn layer_norm_bwd_slow(
    xs: &Tensor,
    alpha: Option<&Tensor>,
    grad: &Tensor,
    eps: f32,
    beta_grad: bool,
) -> Result<(Tensor, Option<Tensor>, Option<Tensor>)> {
    let dtype = xs.dtype();
    let internal_dtype = match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    };
    let xs = xs.to_dtype(internal_dtype)?;
    let grad = grad.to_dtype(internal_dtype)?;
    let dims = xs.dims().to_vec();
    let n_cols = dims[dims.len() - 1];
    let xs = xs.reshape(((), n_cols))?;
    let grad = grad.reshape(((), n_cols))?;
    let mean = xs.mean_keepdim(1)?;
    let centered = xs.broadcast_sub(&mean)?;
    let var = centered.sqr()?.mean_keepdim(1)?;
    let rstd = (var + eps as f64)?.sqrt()?.recip()?;
    let xhat = centered.broadcast_mul(&rstd)?;
    let g = match alpha {
        None => grad.clone(),
        Some(alpha) => grad.broadcast_mul(&alpha.to_dtype(internal_dtype)?)?,
    };
    let mean_g = g.mean_keepdim(1)?;
    let mean_gx = (&g * &xhat)?.mean_keepdim(1)?;
    let dxs = g
        .broadcast_sub(&mean_g)?
        .sub(&xhat.broadcast_mul(&mean_gx)?)?
        .broadcast_mul(&rstd)?;
    let dalpha = match alpha {
        None => None,
        Some(_) => Some((&grad * &xhat)?.sum(0)?.to_dtype(dtype)?),
    };
    let dbeta = match beta_grad {
        false => None,
        true => Some(grad.sum(0)?.to_dtype(dtype)?),
    };
    Ok((dxs.to_dtype(dtype)?.reshape(dims)?, dalpha, dbeta))
}

/// Gradients of [`layer_norm_opt`] for the upstream gradient `grad`: returns the gradient of
/// `xs`, of `alpha` when it is given and of `beta` when `beta_grad` is set.
///
/// Uses the fused backward kernels on cpu and cuda (the mean and inverse standard deviation
/// are recomputed from `xs`), tensor ops on other devices. The result is not differentiable.
pub fn layer_norm_bwd(
    xs: &Tensor,
    alpha: Option<&Tensor>,
    grad: &Tensor,
    eps: f32,
    beta_grad: bool,
) -> Result<(Tensor, Option<Tensor>, Option<Tensor>)> {
    let n_cols = xs.dim(D::Minus1)?;
    if grad.shape() != xs.shape() || grad.dtype() != xs.dtype() {
        candle::bail!(
            "layer-norm grad {:?} {:?} does not match input {:?} {:?}",
            grad.shape(),
            grad.dtype(),
            xs.shape(),
            xs.dtype()
        )
    }
    if let Some(alpha) = alpha {
        if alpha.dims() != [n_cols] || alpha.dtype() != xs.dtype() {
            candle::bail!(
                "layer-norm alpha {:?} {:?} does not match input {:?} {:?}",
                alpha.shape(),
                alpha.dtype(),
                xs.shape(),
                xs.dtype()
            )
        }
    }
    if xs.device().is_metal() {
        return layer_norm_bwd_slow(xs, alpha, grad, eps, beta_grad);
    }
    let (xs, grad) = (xs.contiguous()?, grad.contiguous()?);
    let op = LayerNormBwd {
        eps,
        has_alpha: alpha.is_some(),
        has_beta: beta_grad,
        params: ParamGrads::default(),
    };
    let dxs = match alpha {
        None => xs.apply_op2_no_bwd(&grad, &op)?,
        Some(alpha) => xs.apply_op3_no_bwd(&grad, &alpha.contiguous()?, &op)?,
    };
    let param = |present: bool| present.then(|| op.params.take(&xs)).transpose();
    let dalpha = param(alpha.is_some())?;
    let dbeta = param(beta_grad)?;
    Ok((dxs, dalpha, dbeta))
}

impl candle::CustomOp1 for LayerNorm {
    fn name(&self) -> &'static str {
        "layer-norm"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout) -> Result<(CpuStorage, Shape)> {
        self.fwd_cpu(&[(s1, l1)])
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle::CudaStorage,
        l1: &Layout,
    ) -> Result<(candle::CudaStorage, Shape)> {
        self.fwd_cuda(&[(s1, l1)])
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        Ok(LayerNorm::bwd(self, arg, None, grad_res)?.0)
    }
}

impl candle::CustomOp2 for LayerNorm {
    fn name(&self) -> &'static str {
        "layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        self.fwd_cpu(&[(s1, l1), (s2, l2)])
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle::CudaStorage,
        l1: &Layout,
        s2: &candle::CudaStorage,
        l2: &Layout,
    ) -> Result<(candle::CudaStorage, Shape)> {
        self.fwd_cuda(&[(s1, l1), (s2, l2)])
    }

    fn bwd(
        &self,
        arg1: &Tensor,
        arg2: &Tensor,
        _res: &Tensor,
        grad_res: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let alpha = if self.has_alpha { Some(arg2) } else { None };
        let (dxs, dalpha, dbeta) = LayerNorm::bwd(self, arg1, alpha, grad_res)?;
        Ok((dxs, dalpha.or(dbeta)))
    }
}

impl candle::CustomOp3 for LayerNorm {
    fn name(&self) -> &'static str {
        "layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        self.fwd_cpu(&[(s1, l1), (s2, l2), (s3, l3)])
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle::CudaStorage,
        l1: &Layout,
        s2: &candle::CudaStorage,
        l2: &Layout,
        s3: &candle::CudaStorage,
        l3: &Layout,
    ) -> Result<(candle::CudaStorage, Shape)> {
        self.fwd_cuda(&[(s1, l1), (s2, l2), (s3, l3)])
    }

    fn bwd(
        &self,
        arg1: &Tensor,
        arg2: &Tensor,
        _arg3: &Tensor,
        _res: &Tensor,
        grad_res: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        LayerNorm::bwd(self, arg1, Some(arg2), grad_res)
    }

    #[cfg(feature = "metal")]
    fn metal_fwd(
        &self,
        s1: &candle::MetalStorage,
        l1: &Layout,
        s2: &candle::MetalStorage,
        l2: &Layout,
        s3: &candle::MetalStorage,
        l3: &Layout,
    ) -> Result<(candle::MetalStorage, Shape)> {
        use candle::backend::BackendStorage;
        let device = s1.device();
        let command_buffer = device.command_buffer()?;
        let kernels = device.kernels();
        let name = match (s1.dtype(), s2.dtype(), s3.dtype()) {
            (DType::F32, DType::F32, DType::F32) => "layernorm_f32",
            (DType::F16, DType::F16, DType::F16) => "layernorm_f16",
            (DType::BF16, DType::BF16, DType::BF16) => "layernorm_bf16",
            (dt1, dt2, dt3) => {
                candle::bail!("layernorm is not implemented for {dt1:?} {dt2:?} {dt3:?}")
            }
        };

        if !(l1.is_contiguous() && l2.is_contiguous() && l3.is_contiguous()) {
            candle::bail!("Non contiguous layernorm is not implemented");
        }

        let last_dim = l1.dims()[l1.shape().rank() - 1];
        let elem_count = l1.shape().elem_count();
        let output = device.new_buffer(elem_count, s1.dtype(), "layernorm")?;
        candle_metal_kernels::call_layer_norm(
            device.metal_device(),
            &command_buffer,
            kernels,
            name,
            elem_count,
            last_dim,
            self.eps,
            s1.buffer(),
            l1.start_offset() * s1.dtype().size_in_bytes(),
            s2.buffer(),
            l2.start_offset() * s2.dtype().size_in_bytes(),
            s3.buffer(),
            l3.start_offset() * s3.dtype().size_in_bytes(),
            &output,
        )
        .map_err(candle::Error::wrap)?;
        let newstorage = candle::MetalStorage::new(output, device.clone(), elem_count, s1.dtype());
        Ok((newstorage, l1.shape().clone()))
    }
}

/// The parameter gradients a fused backward computes beside `dx`, each in a buffer of its own:
/// a custom op returns one storage, so the op leaves these here, in order, and
/// [`ParamGrads::take`] hands each out as a tensor. As views of a buffer shared with `dx` they
/// would keep an activation-sized buffer alive in a `GradStore`; copied out, they would cost a
/// copy each.
#[derive(Debug, Default)]
struct ParamGrads(std::sync::Mutex<ParamGradQueue>);

/// Each gradient's storage and its number of elements.
type ParamGradQueue = std::collections::VecDeque<(candle::Storage, usize)>;

impl ParamGrads {
    fn queue(&self) -> Result<std::sync::MutexGuard<'_, ParamGradQueue>> {
        let msg = "a thread panicked while holding the fused backward's parameter gradients";
        self.0.lock().map_err(|_| candle::Error::msg(msg))
    }

    fn push(&self, storage: candle::Storage, len: usize) -> Result<()> {
        self.queue()?.push_back((storage, len));
        Ok(())
    }

    fn pop(&self) -> Result<(candle::Storage, usize)> {
        let next = self.queue()?.pop_front();
        next.ok_or_else(|| candle::Error::msg("the fused backward left no parameter gradient"))
    }

    /// The next parameter gradient, a tensor on the device of `like`.
    fn take(&self, like: &Tensor) -> Result<Tensor> {
        like.apply_op1_no_bwd(&TakeParamGrad(self))
    }
}

/// A custom op whose output is the next storage of a [`ParamGrads`] (its input is unused).
struct TakeParamGrad<'a>(&'a ParamGrads);

impl candle::CustomOp1 for TakeParamGrad<'_> {
    fn name(&self) -> &'static str {
        "param-grad"
    }

    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout) -> Result<(CpuStorage, Shape)> {
        match self.0.pop()? {
            (candle::Storage::Cpu(s), len) => Ok((s, Shape::from(len))),
            _ => candle::bail!("param-grad: a gradient of another device"),
        }
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        _: &candle::CudaStorage,
        _: &Layout,
    ) -> Result<(candle::CudaStorage, Shape)> {
        match self.0.pop()? {
            (candle::Storage::Cuda(s), len) => Ok((s, Shape::from(len))),
            _ => candle::bail!("param-grad: a gradient of another device"),
        }
    }
}

/// The fused layer norm backward: its output is `dx`, `dalpha` and `dbeta` (when requested) go
/// to `params`.
#[derive(Debug)]
struct LayerNormBwd {
    eps: f32,
    has_alpha: bool,
    has_beta: bool,
    params: ParamGrads,
}

impl LayerNormBwd {
    fn fwd_cpu(
        &self,
        (xs, l): (&CpuStorage, &Layout),
        (grad, grad_l): (&CpuStorage, &Layout),
        alpha: Option<(&CpuStorage, &Layout)>,
    ) -> Result<(CpuStorage, Shape)> {
        use candle::backend::BackendStorage;
        if l.shape() != grad_l.shape() {
            candle::bail!(
                "layer-norm grad shape {:?} does not match input {:?}",
                grad_l.shape(),
                l.shape()
            )
        }
        let n_cols = l.dims().last().copied().unwrap_or(1);
        fn inner<T: LayerNormDType>(
            op: &LayerNormBwd,
            (xs, l): (&CpuStorage, &Layout),
            (grad, grad_l): (&CpuStorage, &Layout),
            alpha: Option<(&CpuStorage, &Layout)>,
            n_cols: usize,
        ) -> Result<CpuStorage> {
            let xs = layer_norm_cpu_slice::<T>(xs, l, "input")?;
            let grad = layer_norm_cpu_slice::<T>(grad, grad_l, "grad")?;
            let alpha = match alpha {
                None => None,
                Some((s, l)) => Some(layer_norm_cpu_slice::<T>(s, l, "alpha")?),
            };
            let (eps, alpha_grad) = (op.eps, op.has_alpha);
            let mut dst = layer_norm_cpu_bwd(xs, grad, alpha, n_cols, eps, alpha_grad, op.has_beta);
            let mut dalpha = dst.split_off(xs.len());
            let dbeta = dalpha.split_off(if alpha_grad { n_cols } else { 0 });
            for (want, grad) in [(alpha_grad, dalpha), (op.has_beta, dbeta)] {
                if want {
                    let grad = candle::WithDType::to_cpu_storage_owned(grad);
                    op.params.push(candle::Storage::Cpu(grad), n_cols)?;
                }
            }
            Ok(candle::WithDType::to_cpu_storage_owned(dst))
        }
        let (x, g) = ((xs, l), (grad, grad_l));
        let storage = match xs.dtype() {
            DType::BF16 => inner::<half::bf16>(self, x, g, alpha, n_cols)?,
            DType::F16 => inner::<half::f16>(self, x, g, alpha, n_cols)?,
            DType::F32 => inner::<f32>(self, x, g, alpha, n_cols)?,
            DType::F64 => inner::<f64>(self, x, g, alpha, n_cols)?,
            dt => candle::bail!("layer-norm is not implemented for {dt:?}"),
        };
        Ok((storage, l.shape().clone()))
    }

    #[cfg(feature = "cuda")]
    fn fwd_cuda(
        &self,
        (xs, l): (&candle::CudaStorage, &Layout),
        (grad, grad_l): (&candle::CudaStorage, &Layout),
        alpha: Option<(&candle::CudaStorage, &Layout)>,
    ) -> Result<(candle::CudaStorage, Shape)> {
        use candle::backend::BackendStorage;
        if l.shape() != grad_l.shape() {
            candle::bail!(
                "layer-norm grad shape {:?} does not match input {:?}",
                grad_l.shape(),
                l.shape()
            )
        }
        let dev = xs.device();
        let (x, g, eps) = ((xs, l), (grad, grad_l), self.eps);
        let (da, db) = (self.has_alpha, self.has_beta);
        let (storage, params) = match xs.dtype() {
            DType::BF16 => {
                layer_norm_cuda::bwd::<half::bf16, f32>(dev, Norm::Layer, x, g, alpha, eps, da, db)?
            }
            DType::F16 => {
                layer_norm_cuda::bwd::<half::f16, f32>(dev, Norm::Layer, x, g, alpha, eps, da, db)?
            }
            DType::F32 => {
                layer_norm_cuda::bwd::<f32, f32>(dev, Norm::Layer, x, g, alpha, eps, da, db)?
            }
            DType::F64 => {
                layer_norm_cuda::bwd::<f64, f64>(dev, Norm::Layer, x, g, alpha, eps, da, db)?
            }
            dt => candle::bail!("layer-norm is not implemented for {dt:?}"),
        };
        let n_cols = l.dims().last().copied().unwrap_or(1);
        for grad in params {
            self.params.push(candle::Storage::Cuda(grad), n_cols)?;
        }
        Ok((storage, l.shape().clone()))
    }
}

impl candle::CustomOp2 for LayerNormBwd {
    fn name(&self) -> &'static str {
        "layer-norm-bwd"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        self.fwd_cpu((s1, l1), (s2, l2), None)
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle::CudaStorage,
        l1: &Layout,
        s2: &candle::CudaStorage,
        l2: &Layout,
    ) -> Result<(candle::CudaStorage, Shape)> {
        self.fwd_cuda((s1, l1), (s2, l2), None)
    }
}

impl candle::CustomOp3 for LayerNormBwd {
    fn name(&self) -> &'static str {
        "layer-norm-bwd"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        self.fwd_cpu((s1, l1), (s2, l2), Some((s3, l3)))
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle::CudaStorage,
        l1: &Layout,
        s2: &candle::CudaStorage,
        l2: &Layout,
        s3: &candle::CudaStorage,
        l3: &Layout,
    ) -> Result<(candle::CudaStorage, Shape)> {
        self.fwd_cuda((s1, l1), (s2, l2), Some((s3, l3)))
    }
}

pub fn layer_norm_slow(x: &Tensor, alpha: &Tensor, beta: &Tensor, eps: f32) -> Result<Tensor> {
    let x_dtype = x.dtype();
    let internal_dtype = match x_dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    };
    let hidden_size = x.dim(D::Minus1)?;
    let x = x.to_dtype(internal_dtype)?;
    let x = {
        let mean_x = (x.sum_keepdim(D::Minus1)? / hidden_size as f64)?;
        x.broadcast_sub(&mean_x)?
    };
    let norm_x = (x.sqr()?.sum_keepdim(D::Minus1)? / hidden_size as f64)?;
    let x_normed = x.broadcast_div(&(norm_x + eps as f64)?.sqrt()?)?;
    x_normed
        .to_dtype(x_dtype)?
        .broadcast_mul(alpha)?
        .broadcast_add(beta)
}

/// Layer normalization over the last dimension, `alpha` and `beta` must be contiguous with
/// the same dtype as `xs`. Uses the fused kernels, see [`layer_norm_opt`].
pub fn layer_norm(xs: &Tensor, alpha: &Tensor, beta: &Tensor, eps: f32) -> Result<Tensor> {
    layer_norm_opt(xs, Some(alpha), Some(beta), eps)
}

/// Layer normalization over the last dimension with an optional scale `alpha` and an optional
/// shift `beta`, both of size the last dimension of `xs`.
///
/// The statistics are computed in f32 (f64 for f64 inputs) in two passes. The op is
/// differentiable: on cpu and cuda the backward uses fused kernels and is deterministic, other
/// devices use tensor ops. Non-contiguous inputs are copied first.
pub fn layer_norm_opt(
    xs: &Tensor,
    alpha: Option<&Tensor>,
    beta: Option<&Tensor>,
    eps: f32,
) -> Result<Tensor> {
    let hidden_size = xs.dim(D::Minus1)?;
    for (name, param) in [("alpha", alpha), ("beta", beta)] {
        let Some(param) = param else { continue };
        if param.dims() != [hidden_size] {
            candle::bail!(
                "shape mismatch in layer-norm src: {:?} {name}: {:?}",
                xs.shape(),
                param.shape()
            )
        }
        if param.dtype() != xs.dtype() {
            candle::bail!(
                "dtype mismatch in layer-norm src: {:?} {name}: {:?}",
                xs.dtype(),
                param.dtype()
            )
        }
    }
    let xs = xs.contiguous()?;
    let alpha = alpha.map(|t| t.contiguous()).transpose()?;
    let beta = beta.map(|t| t.contiguous()).transpose()?;
    let op = LayerNorm {
        eps,
        has_alpha: alpha.is_some(),
        has_beta: beta.is_some(),
    };
    match (alpha, beta) {
        (Some(alpha), Some(beta)) => xs.apply_op3(&alpha, &beta, op),
        // The metal kernel requires both alpha and beta.
        (alpha, beta) if xs.device().is_metal() => {
            let op = LayerNorm {
                eps,
                has_alpha: true,
                has_beta: true,
            };
            let alpha = match alpha {
                Some(alpha) => alpha,
                None => Tensor::ones(hidden_size, xs.dtype(), xs.device())?,
            };
            let beta = match beta {
                Some(beta) => beta,
                None => Tensor::zeros(hidden_size, xs.dtype(), xs.device())?,
            };
            xs.apply_op3(&alpha, &beta, op)
        }
        (Some(alpha), None) => xs.apply_op2(&alpha, op),
        (None, Some(beta)) => xs.apply_op2(&beta, op),
        (None, None) => xs.apply_op1(op),
    }
}

// https://pytorch.org/docs/stable/generated/torch.nn.PixelShuffle.html
pub fn pixel_shuffle(xs: &Tensor, upscale_factor: usize) -> Result<Tensor> {
    let (b_size, c, h, w) = xs.dims4()?;
    let out_c = c / upscale_factor / upscale_factor;
    xs.reshape((b_size, out_c, upscale_factor, upscale_factor, h, w))?
        .permute((0, 1, 4, 2, 5, 3))?
        .reshape((b_size, out_c, h * upscale_factor, w * upscale_factor))
}

pub fn pixel_unshuffle(xs: &Tensor, downscale_factor: usize) -> Result<Tensor> {
    let (b_size, c, h, w) = xs.dims4()?;
    let out_c = c * downscale_factor * downscale_factor;
    xs.reshape((
        b_size,
        c,
        h / downscale_factor,
        downscale_factor,
        w / downscale_factor,
        downscale_factor,
    ))?
    .permute((0, 1, 3, 5, 2, 4))?
    .reshape((b_size, out_c, h / downscale_factor, w / downscale_factor))
}

// https://pytorch.org/docs/stable/generated/torch.nn.ReplicationPad2d.html
pub fn replication_pad2d(xs: &Tensor, pad: usize) -> Result<Tensor> {
    match pad {
        0 => Ok(xs.clone()),
        1 => {
            let (_b_size, _c, h, w) = xs.dims4()?;
            let (first, last) = (xs.narrow(3, 0, 1)?, xs.narrow(3, w - 1, 1)?);
            let xs = Tensor::cat(&[&first, xs, &last], 3)?;
            let (first, last) = (xs.narrow(2, 0, 1)?, xs.narrow(2, h - 1, 1)?);
            Tensor::cat(&[&first, &xs, &last], 2)
        }
        n => candle::bail!("replication-pad with a size of {n} is not supported"),
    }
}

#[derive(Clone, Debug)]
pub struct Identity;

impl Identity {
    pub fn new() -> Identity {
        Self
    }
}

impl Default for Identity {
    fn default() -> Self {
        Self
    }
}

impl Module for Identity {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        Ok(xs.clone())
    }
}

#[allow(dead_code)]
struct Sdpa {
    scale: f32,
    softcapping: f32,
}

impl candle::CustomOp3 for Sdpa {
    fn name(&self) -> &'static str {
        "metal-sdpa"
    }

    fn cpu_fwd(
        &self,
        _s1: &CpuStorage,
        _l1: &Layout,
        _s2: &CpuStorage,
        _l2: &Layout,
        _s3: &CpuStorage,
        _l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        candle::bail!("SDPA has no cpu impl")
    }

    #[cfg(feature = "metal")]
    fn metal_fwd(
        &self,
        q: &candle::MetalStorage,
        q_l: &Layout,
        k: &candle::MetalStorage,
        k_l: &Layout,
        v: &candle::MetalStorage,
        v_l: &Layout,
    ) -> Result<(candle::MetalStorage, Shape)> {
        use candle::backend::BackendStorage;
        use candle_metal_kernels::SdpaDType;

        let device = q.device();

        let out_dims = vec![q_l.dim(0)?, q_l.dim(1)?, q_l.dim(2)?, v_l.dim(3)?];
        let elem_count: usize = out_dims.iter().product();

        let output = device.new_buffer(elem_count, q.dtype(), "sdpa_o")?;

        // q,k must have matching emb dim
        if q_l.dim(D::Minus1)? != k_l.dim(D::Minus1)? {
            candle::bail!("`q` and `k` last dims must match");
        }

        // k,v must have matching n kv heads
        if v_l.dim(D::Minus(3))? != k_l.dim(D::Minus(3))? {
            candle::bail!("`k` and `v` head dims must match");
        }

        // n_heads % n_kv_heads == 0; n_heads >= 1, n_kv_heads >= 1.
        if q_l.dim(D::Minus(3))? % k_l.dim(D::Minus(3))? != 0 {
            candle::bail!("query `n_heads` must be a multiple of `n_kv_heads`");
        }

        let k_head = k_l.dim(D::Minus1)?;
        let q_head = q_l.dim(D::Minus1)?;
        let q_seq = q_l.dim(2)?;

        let mut implementation_supports_use_case = q_head == k_head;
        let supported_head_dim =
            q_head == 32 || q_head == 64 || q_head == 96 || q_head == 128 || q_head == 256;

        const SDPA_FULL_THRESHOLD: usize = 2;

        let supports_sdpa_full =
            q_seq >= SDPA_FULL_THRESHOLD && supported_head_dim && q_head == k_head;
        let supports_sdpa_vector = q_seq == 1 && supported_head_dim;

        implementation_supports_use_case &= supports_sdpa_full || supports_sdpa_vector;

        if !supported_head_dim {
            candle::bail!(
                "Meta SDPA does not support q head dim {q_head}: q dims {:?}, k dims {:?}, v dims {:?}.",
                q_l.dims(),
                k_l.dims(),
                v_l.dims()
            );
        }
        if !implementation_supports_use_case {
            candle::bail!(
                "Meta SDPA does not support q dims {:?}, k dims {:?}, v dims {:?}.",
                q_l.dims(),
                k_l.dims(),
                v_l.dims()
            );
        }

        for t in [k.dtype(), v.dtype()] {
            if q.dtype() != t {
                candle::bail!("all q, k, v dtypes must match.");
            }
        }

        let itype = match q.dtype() {
            DType::BF16 => SdpaDType::BF16,
            DType::F16 => SdpaDType::F16,
            DType::F32 => SdpaDType::F32,
            other => candle::bail!("unsupported sdpa type {other:?}"),
        };

        let command_buffer = q.device().command_buffer()?;
        if supports_sdpa_vector {
            // Route to the 2 pass fused attention if the k seqlen is large.
            // https://github.com/ml-explore/mlx/pull/1597
            const TWO_PASS_K_THRESHOLD: usize = 1024;
            if k_l.dim(2)? >= TWO_PASS_K_THRESHOLD {
                let mut intermediate_shape = [
                    &out_dims[0..out_dims.len() - 2],
                    &[candle_metal_kernels::SDPA_2PASS_BLOCKS],
                    &[out_dims[out_dims.len() - 1]],
                ]
                .concat();
                let intermediate = device.new_buffer(
                    intermediate_shape.iter().product::<usize>(),
                    DType::F32,
                    "sdpa_2pass_intermediate",
                )?;
                let _ = intermediate_shape.pop().unwrap();
                let sums = device.new_buffer(
                    intermediate_shape.iter().product::<usize>(),
                    DType::F32,
                    "sdpa_2pass_sums",
                )?;
                let maxs = device.new_buffer(
                    intermediate_shape.iter().product::<usize>(),
                    DType::F32,
                    "sdpa_2pass_maxs",
                )?;

                command_buffer.set_label("vector_attention");
                candle_metal_kernels::call_sdpa_vector_2pass(
                    q.device().device(),
                    &command_buffer,
                    q.device().kernels(),
                    q_l.start_offset(),
                    q_l.dims(),
                    q.buffer(),
                    k_l.start_offset(),
                    k_l.dims(),
                    k_l.stride(),
                    k.buffer(),
                    v_l.start_offset(),
                    v_l.stride(),
                    v.buffer(),
                    &output,
                    &intermediate,
                    &sums,
                    &maxs,
                    self.scale,
                    self.softcapping,
                    itype,
                )
                .map_err(candle::Error::wrap)?;
            } else {
                command_buffer.set_label("vector_attention");
                candle_metal_kernels::call_sdpa_vector(
                    q.device().device(),
                    &command_buffer,
                    q.device().kernels(),
                    q_l.start_offset(),
                    q_l.dims(),
                    q.buffer(),
                    k_l.start_offset(),
                    k_l.dims(),
                    k_l.stride(),
                    k.buffer(),
                    v_l.start_offset(),
                    v_l.stride(),
                    v.buffer(),
                    &output,
                    self.scale,
                    self.softcapping,
                    itype,
                )
                .map_err(candle::Error::wrap)?;
            }
        } else if supports_sdpa_full {
            if q_l.dim(2)? != k_l.dim(2)? {
                candle::bail!(
                    "query and key sequence length must be equal if using full metal sdpa"
                )
            }

            command_buffer.set_label("full_attention");
            candle_metal_kernels::call_sdpa_full(
                q.device().device(),
                &command_buffer,
                q.device().kernels(),
                q_l.start_offset(),
                q_l.dims(),
                q.buffer(),
                k_l.start_offset(),
                k.buffer(),
                v_l.start_offset(),
                v.buffer(),
                &output,
                self.scale,
                self.softcapping,
                itype,
            )
            .map_err(candle::Error::wrap)?;
        } else {
            candle::bail!("must be vector or full sdpa kernel");
        }

        let newstorage = candle::MetalStorage::new(output, device.clone(), elem_count, q.dtype());
        Ok((newstorage, Shape::from_dims(&out_dims)))
    }
}

/// Scaled dot product attention with a fused kernel.
///
/// Computes softmax(qk^T*scale)v.
///
/// **Inputs shapes:**
/// - `q`: (bs, qhead, seq, hidden)
/// - `k`: (bs, kv_head, kv_seq, hidden)
/// - `k`: (bs, kv_head, kv_seq, v_hidden)
/// - `scale` is applied before softmax.
/// - If `softcapping` != 1.0:
///      - Computation is: softmax(tanh(qk^T*scale/cap)*cap)v
///
/// **Output shape:** (bs, qhead, seq, v_hidden)
///
/// **Supported head dims:** 32, 64, 96, 128, 256.
///
/// ## On Metal:
/// - If `seq` == 1:
///     - Use a vectorized kernel
///     - Supports `seq` != `kv_seq` (cross attn. support)
///     - Supports GQA when `qhead` is a multiple of `kv_head`
/// - Otherwise:
///     - Use an alternate kernel
///     - Requires `seq` == `kv_seq`
///     - GQA is not supported (requires `qhead` == `kv_head`)
pub fn sdpa(q: &Tensor, k: &Tensor, v: &Tensor, scale: f32, softcapping: f32) -> Result<Tensor> {
    q.apply_op3_no_bwd(k, v, &Sdpa { scale, softcapping })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// `n_rows` rows of `n` values, each with its own mean in [-2, 2] and spread in [0.5, 2]
    /// (as the layer-norm tests of `tests/ops.rs`) and an outlier first element (1e3), as f32
    /// and f64.
    fn outlier_rows(rng: &mut StdRng, n_rows: usize, n: usize) -> (Vec<f32>, Vec<f64>) {
        let mut xs = vec![];
        for r in 0..n_rows {
            let (mean, std) = (rng.random_range(-2f32..2.), rng.random_range(0.5f32..2.));
            xs.extend((0..n).map(|_| mean + std * rng.random_range(-1.7f32..1.7)));
            xs[r * n] = 1e3;
        }
        let xs64 = xs.iter().map(|&v| v as f64).collect();
        (xs, xs64)
    }

    fn uniform(rng: &mut StdRng, len: usize, lim: f32) -> (Vec<f32>, Vec<f64>) {
        let v: Vec<f32> = (0..len).map(|_| rng.random_range(-lim..lim)).collect();
        let v64 = v.iter().map(|&v| v as f64).collect();
        (v, v64)
    }

    fn max_err(got: &[f32], want: &[f64]) -> f64 {
        let scale = want.iter().fold(1f64, |m, w| m.max(w.abs()));
        let errs = got.iter().zip(want).map(|(&g, w)| (g as f64 - w).abs());
        errs.fold(0., f64::max) / scale
    }

    /// The portable f32 rows (taken on cpus without the `layer_norm_x86` path) against the same
    /// code in f64, on wide rows whose first element is far from the mean: a far row's
    /// statistics have to be summed again around its mean (`LayerNormRowStats::reshifted`).
    #[test]
    fn portable_rows_with_outlier_first() {
        let (n_rows, n) = (8, 65536);
        let mut rng = StdRng::seed_from_u64(47);
        let (xs, xs64) = outlier_rows(&mut rng, n_rows, n);
        let (dys, dys64) = uniform(&mut rng, xs.len(), 1.);
        let (alpha, alpha64) = uniform(&mut rng, n, 1.5);
        let beta = vec![0.25f32; n];
        // The tests' f32 tolerance (tests/ops.rs `ln_tol`).
        let tol = 1e-5 + 2. * f32::EPSILON as f64 * (n as f64).sqrt();

        let mut y = OutputBuffer::<f32>::new(xs.len());
        let mut bufs = Default::default();
        layer_norm_fwd_task::<f32, ROW_LANES>((&xs, y.uninit()), (&alpha, &beta), 1e-5, &mut bufs);
        // Safety: the task writes every row of its output.
        let y = unsafe { y.assume_init() };
        let y64 = layer_norm_cpu_fwd(&xs64, Some(&alpha64), Some(&vec![0.25; n]), n, 1e-5);
        let err = max_err(&y, &y64);
        assert!(err <= tol, "y: error {err:e} > {tol:e}");

        let mut dx = OutputBuffer::<f32>::new(xs.len());
        let (mut bufs, eps) = (Default::default(), (n as f32, 1e-5));
        let rows = (xs.as_slice(), dys.as_slice(), dx.uninit());
        let [dalpha, dbeta] =
            layer_norm_bwd_task::<f32, ROW_LANES_BWD>(rows, &alpha, eps, &mut bufs);
        // Safety: the task writes every row of its dx.
        let dx = unsafe { dx.assume_init() };
        let want = layer_norm_cpu_bwd(&xs64, &dys64, Some(&alpha64), n, 1e-5, true, true);
        let (dx64, params) = want.split_at(xs.len());
        for (what, got, want, tol) in [
            ("dx", &dx, dx64, tol),
            ("dalpha", &dalpha, &params[..n], tol),
            ("dbeta", &dbeta, &params[n..], tol),
        ] {
            let err = max_err(got, want);
            assert!(err <= tol, "{what}: error {err:e} > {tol:e}");
        }
    }
}
