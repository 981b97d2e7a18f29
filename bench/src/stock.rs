//! The stock candle 0.9.1 CUDA layer norm forward, kept as the baseline: the `layernorm_*`
//! kernel of the pin's `candle-kernels/src/reduce.cu` (our series removes it; `build.rs`
//! compiles it from the pristine archive) launched the way the pin's
//! `candle_nn::ops::layer_norm` launched it (one block per row, 32 threads below 1024 columns,
//! 1024 above). Forward only: the pin has no backward.

use candle_core::{CpuStorage, Layout, Result, Shape, Tensor};

/// The pin's `reduce.cu` as PTX (see `build.rs`).
#[cfg(feature = "cuda")]
const STOCK_REDUCE_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/stock_reduce.ptx"));

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
struct StockLayerNorm {
    eps: f32,
}

/// The pin's fused forward on `x` (contiguous, last dim normalized); CUDA only.
pub fn stock_layer_norm(x: &Tensor, w: &Tensor, b: &Tensor, eps: f32) -> Result<Tensor> {
    x.apply_op3_no_bwd(w, b, &StockLayerNorm { eps })
}

impl candle_core::CustomOp3 for StockLayerNorm {
    fn name(&self) -> &'static str {
        "stock-layer-norm"
    }

    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        candle_core::bail!("the stock baseline is only measured on cuda")
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        x: &candle_core::CudaStorage,
        lx: &Layout,
        w: &candle_core::CudaStorage,
        lw: &Layout,
        b: &candle_core::CudaStorage,
        lb: &Layout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        use candle_core::backend::BackendStorage;
        use candle_core::cuda_backend::cudarc::driver::{DeviceRepr, LaunchConfig, PushKernelArg};
        use candle_core::cuda_backend::{kernel_name, CudaDType, WrapErr};
        use candle_core::{CudaStorage, DType, WithDType};

        fn launch<T: CudaDType + WithDType + DeviceRepr>(
            eps: f32,
            (x, lx): (&CudaStorage, &Layout),
            (w, lw): (&CudaStorage, &Layout),
            (b, lb): (&CudaStorage, &Layout),
        ) -> Result<CudaStorage> {
            let dev = x.device().clone();
            let contiguous = |l: &Layout| match l.contiguous_offsets() {
                Some(o) => Ok(o),
                None => Err(candle_core::Error::Msg(
                    "stock layer norm needs contiguous".into(),
                )),
            };
            let (xo, wo, bo) = (contiguous(lx)?, contiguous(lw)?, contiguous(lb)?);
            let xs = x.as_cuda_slice::<T>()?.slice(xo.0..xo.1);
            let ws = w.as_cuda_slice::<T>()?.slice(wo.0..wo.1);
            let bs = b.as_cuda_slice::<T>()?.slice(bo.0..bo.1);
            let el = lx.shape().elem_count();
            let n_cols = lx.dims()[lx.dims().len() - 1];
            let block_size: u32 = if n_cols < 1024 { 32 } else { 1024 };
            let cfg = LaunchConfig {
                grid_dim: ((el / n_cols) as u32, 1, 1),
                block_dim: (block_size, 1, 1),
                shared_mem_bytes: 0,
            };
            let func = dev.get_or_load_custom_func(
                &kernel_name::<T>("layernorm"),
                "stock_reduce",
                STOCK_REDUCE_PTX,
            )?;
            // SAFETY: written by the kernel below.
            let dst = unsafe { dev.alloc::<T>(el)? };
            let mut builder = func.builder();
            builder.arg(&xs);
            builder.arg(&dst);
            builder.arg(&ws);
            builder.arg(&bs);
            let (n_cols, block_size) = (n_cols as i32, block_size as i32);
            builder.arg(&n_cols);
            builder.arg(&block_size);
            builder.arg(&eps);
            // SAFETY: ffi, arguments match the kernel signature in reduce.cu.
            unsafe { builder.launch(cfg) }.w()?;
            Ok(CudaStorage::wrap_cuda_slice(dst, dev))
        }

        let args = ((x, lx), (w, lw), (b, lb));
        let out = match x.dtype() {
            DType::F32 => launch::<f32>(self.eps, args.0, args.1, args.2)?,
            DType::BF16 => launch::<half::bf16>(self.eps, args.0, args.1, args.2)?,
            dt => candle_core::bail!("stock baseline not measured for {dt:?}"),
        };
        Ok((out, lx.shape().clone()))
    }
}
