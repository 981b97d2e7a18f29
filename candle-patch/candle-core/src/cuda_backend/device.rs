use crate::backend::BackendDevice;
use crate::{CpuStorage, CpuStorageRef, DType, Layout, Result, Shape};
pub use candle_kernels as kernels;
pub use cudarc;
use cudarc::driver::CudaFunction;
use float8::F8E4M3;
use half::{bf16, f16};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{CudaError, CudaStorage, CudaStorageSlice, WrapErr};

/// Unique identifier for cuda devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceId(usize);

impl DeviceId {
    fn new() -> Self {
        // https://users.rust-lang.org/t/idiomatic-rust-way-to-generate-unique-id/33805
        use std::sync::atomic;
        static COUNTER: atomic::AtomicUsize = atomic::AtomicUsize::new(1);
        Self(COUNTER.fetch_add(1, atomic::Ordering::Relaxed))
    }
}

struct CudaRng(cudarc::curand::CudaRng);
unsafe impl Send for CudaRng {}

pub struct ModuleStore {
    mdls: [Option<Arc<cudarc::driver::CudaModule>>; kernels::ALL_IDS.len()],
    funcs: [HashMap<String, CudaFunction>; kernels::ALL_IDS.len()],
}

impl ModuleStore {
    fn new() -> Self {
        Self {
            mdls: [const { None }; kernels::ALL_IDS.len()],
            funcs: std::array::from_fn(|_| HashMap::new()),
        }
    }
}

#[derive(Clone)]
pub struct CudaDevice {
    id: DeviceId,
    context: Arc<cudarc::driver::CudaContext>,
    modules: Arc<std::sync::RwLock<ModuleStore>>,
    custom_modules: Arc<std::sync::RwLock<HashMap<String, Arc<cudarc::driver::CudaModule>>>>,
    stream: Arc<cudarc::driver::CudaStream>,
    pub(crate) blas: Arc<cudarc::cublas::CudaBlas>,
    curand: Arc<Mutex<CudaRng>>,
    layout_params: Arc<Mutex<LayoutParams>>,
}

/// Dims and strides uploaded for strided kernels, by value.
type LayoutParams = HashMap<Vec<usize>, Arc<cudarc::driver::CudaSlice<usize>>>;

/// Distinct layouts kept on the device before the cache starts over.
const LAYOUT_PARAMS_KEPT: usize = 4096;

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaDevice({:?})", self.id)
    }
}

impl CudaDevice {
    #[allow(clippy::missing_safety_doc)]
    pub unsafe fn alloc<T: cudarc::driver::DeviceRepr>(
        &self,
        len: usize,
    ) -> Result<cudarc::driver::CudaSlice<T>> {
        self.stream.alloc::<T>(len).w()
    }

    pub fn alloc_zeros<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<cudarc::driver::CudaSlice<T>> {
        self.stream.alloc_zeros::<T>(len).w()
    }

    pub fn memcpy_htod<
        T: cudarc::driver::DeviceRepr,
        Src: cudarc::driver::HostSlice<T> + ?Sized,
        Dst: cudarc::driver::DevicePtrMut<T>,
    >(
        &self,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<()> {
        self.stream.memcpy_htod(src, dst).w()
    }

    pub fn memcpy_dtov<T: cudarc::driver::DeviceRepr, Src: cudarc::driver::DevicePtr<T>>(
        &self,
        src: &Src,
    ) -> Result<Vec<T>> {
        self.stream.memcpy_dtov(src).w()
    }

    pub fn memcpy_dtod<
        T,
        Src: cudarc::driver::DevicePtr<T>,
        Dst: cudarc::driver::DevicePtrMut<T>,
    >(
        &self,
        src: &Src,
        dst: &mut Dst,
    ) -> Result<()> {
        self.stream.memcpy_dtod(src, dst).w()
    }

    pub fn memcpy_stod<
        T: cudarc::driver::DeviceRepr,
        Src: cudarc::driver::HostSlice<T> + ?Sized,
    >(
        &self,
        src: &Src,
    ) -> Result<cudarc::driver::CudaSlice<T>> {
        self.stream.memcpy_stod(src).w()
    }

    /// `params` (the dims and strides of a strided kernel) on the device. Each distinct value
    /// is uploaded once and kept: a training loop launches the same layouts at every step, and
    /// an upload costs an allocation, a host-to-device copy and a free.
    pub fn layout_params(&self, params: &[usize]) -> Result<Arc<cudarc::driver::CudaSlice<usize>>> {
        let mut kept = self.layout_params.lock().unwrap();
        if let Some(p) = kept.get(params) {
            return Ok(p.clone());
        }
        if kept.len() >= LAYOUT_PARAMS_KEPT {
            // Frees are ordered on the stream after the kernels that read these.
            kept.clear();
        }
        let p = Arc::new(self.memcpy_stod(params)?);
        kept.insert(params.to_vec(), p.clone());
        Ok(p)
    }
}

pub struct CudaFunc {
    func: CudaFunction,
    stream: Arc<cudarc::driver::CudaStream>,
}

impl std::ops::Deref for CudaFunc {
    type Target = CudaFunction;

    fn deref(&self) -> &Self::Target {
        &self.func
    }
}

impl CudaFunc {
    pub fn into_cuda_function(self) -> CudaFunction {
        self.func
    }
}

#[macro_export]
macro_rules! builder_arg {
    ($b:ident, $($arg:expr),*) => {
        $(
            let __arg = $arg;
            $b.arg(&__arg);
        )*
    };
}

impl CudaFunc {
    pub fn builder(&self) -> cudarc::driver::LaunchArgs<'_> {
        self.stream.launch_builder(&self.func)
    }
}

impl CudaDevice {
    pub fn cuda_stream(&self) -> Arc<cudarc::driver::CudaStream> {
        self.stream.clone()
    }

    pub fn cublas_handle(&self) -> Arc<cudarc::cublas::CudaBlas> {
        self.blas.clone()
    }

    /// When turned on, all cuda tensors **created after calling this function** will
    /// not track uses via cuda events.
    ///
    /// # Safety
    ///
    /// It is up to the user to ensure proper synchronization between multiple streams:
    /// - Ensure that no tensor is freed before a use on another stream is finished.
    /// - Ensure that a tensor is not used on another stream before allocation on the
    ///   allocating stream finishes.
    /// - Ensure that a tensor is not written two concurrently by multiple streams.
    pub unsafe fn disable_event_tracking(&self) {
        self.context.disable_event_tracking()
    }

    pub fn is_event_tracking(&self) -> bool {
        self.context.is_event_tracking()
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub fn compile(
        &self,
        func_name: &'static str,
        kernel: ug::lang::ssa::Kernel,
    ) -> Result<CudaFunc> {
        let mut buf = vec![];
        ug_cuda::code_gen::gen(&mut buf, func_name, &kernel)?;
        let cuda_code = String::from_utf8(buf)?;
        let opts = cudarc::nvrtc::CompileOptions {
            use_fast_math: Some(true),
            ..Default::default()
        };
        let ptx = cudarc::nvrtc::safe::compile_ptx_with_opts(cuda_code, opts).w()?;
        let module = self.context.load_module(ptx).w()?;
        let func = module.load_function(func_name).w()?;
        Ok(CudaFunc {
            func,
            stream: self.stream.clone(),
        })
    }

    pub fn id(&self) -> DeviceId {
        self.id
    }

    pub fn get_or_load_custom_func(
        &self,
        fn_name: &str,
        module_name: &str,
        ptx: &str,
    ) -> Result<CudaFunc> {
        let ms = self.custom_modules.read().unwrap();
        if let Some(mdl) = ms.get(module_name).as_ref() {
            let func = mdl.load_function(fn_name).w()?;
            return Ok(CudaFunc {
                func,
                stream: self.stream.clone(),
            });
        }
        drop(ms);
        let mut ms = self.custom_modules.write().unwrap();
        let cuda_module = self.context.load_module(ptx.into()).w()?;
        ms.insert(module_name.to_string(), cuda_module.clone());
        let func = cuda_module.load_function(fn_name).w()?;
        Ok(CudaFunc {
            func,
            stream: self.stream.clone(),
        })
    }

    pub fn get_or_load_func(&self, fn_name: &str, mdl: &kernels::Module) -> Result<CudaFunc> {
        // Functions are cached: looking one up in its module (cuModuleGetFunction) on every
        // launch costs more host time than the launch of a small kernel.
        let ms = self.modules.read().unwrap();
        if let Some(func) = ms.funcs[mdl.index()].get(fn_name) {
            return Ok(CudaFunc {
                func: func.clone(),
                stream: self.stream.clone(),
            });
        }
        drop(ms);
        let mut ms = self.modules.write().unwrap();
        let cuda_module = match &ms.mdls[mdl.index()] {
            Some(cuda_module) => cuda_module.clone(),
            None => {
                let cuda_module = self.load_module(mdl)?;
                ms.mdls[mdl.index()] = Some(cuda_module.clone());
                cuda_module
            }
        };
        let func = cuda_module.load_function(fn_name).w()?;
        ms.funcs[mdl.index()].insert(fn_name.to_string(), func.clone());
        Ok(CudaFunc {
            func,
            stream: self.stream.clone(),
        })
    }

    /// Loads one of candle's kernel modules from its fatbin when it has one (no JIT compilation
    /// of its PTX), from its PTX otherwise or when the fatbin does not load (e.g. no code for
    /// this GPU in it).
    fn load_module(&self, mdl: &kernels::Module) -> Result<Arc<cudarc::driver::CudaModule>> {
        if let Some(fatbin) = mdl.fatbin() {
            if let Ok(cuda_module) = self.load_fatbin(fatbin) {
                return Ok(cuda_module);
            }
        }
        self.context.load_module(mdl.ptx().into()).w()
    }

    /// cudarc 0.17 loads binary images from files only (`Ptx::from_src` takes text): the fatbin
    /// is written to a new file in the temporary directory, loaded, and the file removed.
    fn load_fatbin(&self, fatbin: &[u8]) -> Result<Arc<cudarc::driver::CudaModule>> {
        use std::io::Write;
        use std::sync::atomic;
        static COUNTER: atomic::AtomicUsize = atomic::AtomicUsize::new(0);
        let file_name = format!(
            "candle-kernels-{}-{}.fatbin",
            std::process::id(),
            COUNTER.fetch_add(1, atomic::Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(file_name);
        if path.to_str().is_none() {
            crate::bail!("non utf-8 temporary directory {path:?}")
        }
        // create_new: never an existing file (nor one a link points to).
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        let written = file.write_all(fatbin);
        drop(file);
        let cuda_module = match written {
            Ok(()) => {
                let ptx = cudarc::nvrtc::Ptx::from_file(&path);
                self.context.load_module(ptx).w()
            }
            Err(err) => Err(err.into()),
        };
        let _ = std::fs::remove_file(&path);
        cuda_module
    }
}

/// The default memory pool of `context`'s device, `None` when the device has no memory pools
/// (candle then allocates with `cuMemAlloc`).
fn default_mem_pool(
    context: &cudarc::driver::CudaContext,
) -> Result<Option<cudarc::driver::sys::CUmemoryPool>> {
    use cudarc::driver::sys;
    let mut supported = 0;
    let mut pool = std::mem::MaybeUninit::uninit();
    // SAFETY: ffi, plain queries with valid out pointers.
    unsafe {
        sys::cuDeviceGetAttribute(
            &mut supported,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
            context.cu_device(),
        )
        .result()
        .w()?;
        if supported == 0 {
            return Ok(None);
        }
        sys::cuDeviceGetDefaultMemPool(pool.as_mut_ptr(), context.cu_device())
            .result()
            .w()?;
        Ok(Some(pool.assume_init()))
    }
}

fn mem_pool_attribute(
    pool: cudarc::driver::sys::CUmemoryPool,
    attr: cudarc::driver::sys::CUmemPool_attribute,
) -> Result<u64> {
    let mut value = 0u64;
    // SAFETY: ffi, the attributes read here are all u64 (cuuint64_t).
    unsafe {
        cudarc::driver::sys::cuMemPoolGetAttribute(pool, attr, &mut value as *mut u64 as *mut _)
            .result()
            .w()?;
    }
    Ok(value)
}

fn set_mem_pool_attribute(
    pool: cudarc::driver::sys::CUmemoryPool,
    attr: cudarc::driver::sys::CUmemPool_attribute,
    mut value: u64,
) -> Result<()> {
    // SAFETY: ffi, the attributes written here are all u64 (cuuint64_t).
    unsafe {
        cudarc::driver::sys::cuMemPoolSetAttribute(pool, attr, &mut value as *mut u64 as *mut _)
            .result()
            .w()?;
    }
    Ok(())
}

/// With `CANDLE_CUDA_POOL_RETAIN=1`, keeps the memory freed by candle in the device's default
/// pool rather than returning it to the driver at each synchronization: otherwise the first
/// large allocation after a synchronization maps fresh pages, which costs as much as the kernel
/// using the buffer (e.g. 2x the time of a layer norm on 512MB). This is what caching
/// allocators do (PyTorch).
///
/// Only a pool whose release threshold is still the driver's default (0) is changed. This is a
/// performance setting: errors are ignored, device creation never fails because of it.
fn retain_pool_memory(context: &cudarc::driver::CudaContext) {
    use cudarc::driver::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD as THRESHOLD;
    if !matches!(
        std::env::var(CudaDevice::POOL_RETAIN_ENV).as_deref(),
        Ok("1" | "true")
    ) {
        return;
    }
    if let Ok(Some(pool)) = default_mem_pool(context) {
        if let Ok(0) = mem_pool_attribute(pool, THRESHOLD) {
            let _ = set_mem_pool_attribute(pool, THRESHOLD, u64::MAX);
        }
    }
}

impl CudaDevice {
    /// The environment variable that opts in to keeping freed memory in the pool when a device
    /// is created (`CANDLE_CUDA_POOL_RETAIN=1`), see [`Self::set_pool_release_threshold`].
    pub const POOL_RETAIN_ENV: &'static str = "CANDLE_CUDA_POOL_RETAIN";

    /// The environment variable that keeps cudarc's event tracking on for a device created
    /// with `new` (`CANDLE_CUDA_EVENT_TRACKING=1`); devices from `new_with_stream` keep it.
    pub const EVENT_TRACKING_ENV: &'static str = "CANDLE_CUDA_EVENT_TRACKING";

    fn mem_pool(&self) -> Result<cudarc::driver::sys::CUmemoryPool> {
        match default_mem_pool(&self.context)? {
            Some(pool) => Ok(pool),
            None => crate::bail!("cuda device {} has no memory pools", self.context.ordinal()),
        }
    }

    /// Sets how many bytes of freed memory the device's default pool keeps at a
    /// synchronization instead of returning them to the driver: `u64::MAX` keeps everything
    /// (what candle sets when a device is created with `CANDLE_CUDA_POOL_RETAIN=1`, unless the
    /// threshold was already set), `0` is the driver's default. The pool is shared by every
    /// user of the device in the process.
    pub fn set_pool_release_threshold(&self, bytes: u64) -> Result<()> {
        use cudarc::driver::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
        set_mem_pool_attribute(self.mem_pool()?, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, bytes)
    }

    /// The release threshold of the device's default pool, see
    /// [`Self::set_pool_release_threshold`].
    pub fn pool_release_threshold(&self) -> Result<u64> {
        use cudarc::driver::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
        mem_pool_attribute(self.mem_pool()?, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    }

    /// Returns the freed memory the device's default pool keeps to the driver, down to
    /// `bytes_to_keep` (like `torch.cuda.empty_cache()` with 0). Waits for the device's stream
    /// first, so that what candle has freed on it can be released.
    pub fn trim_pool(&self, bytes_to_keep: usize) -> Result<()> {
        let pool = self.mem_pool()?;
        self.stream.synchronize().w()?;
        // SAFETY: ffi on a valid pool.
        unsafe {
            cudarc::driver::sys::cuMemPoolTrimTo(pool, bytes_to_keep)
                .result()
                .w()?;
        }
        Ok(())
    }

    /// Bytes of the device's default pool in use by allocations (like PyTorch's
    /// `torch.cuda.memory_allocated()`).
    pub fn pool_used_memory(&self) -> Result<u64> {
        use cudarc::driver::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT;
        mem_pool_attribute(self.mem_pool()?, CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    }

    /// The peak of [`Self::pool_used_memory`] since the pool was created or the last
    /// [`Self::reset_pool_peaks`].
    pub fn pool_max_used_memory(&self) -> Result<u64> {
        use cudarc::driver::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH;
        mem_pool_attribute(self.mem_pool()?, CU_MEMPOOL_ATTR_USED_MEM_HIGH)
    }

    /// Bytes the device's default pool holds from the driver, used or cached (like PyTorch's
    /// `torch.cuda.memory_reserved()`).
    pub fn pool_reserved_memory(&self) -> Result<u64> {
        use cudarc::driver::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
        mem_pool_attribute(self.mem_pool()?, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
    }

    /// Resets the peaks of the pool's used and reserved memory to the current values.
    pub fn reset_pool_peaks(&self) -> Result<()> {
        use cudarc::driver::sys::CUmemPool_attribute as A;
        let pool = self.mem_pool()?;
        set_mem_pool_attribute(pool, A::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0)?;
        set_mem_pool_attribute(pool, A::CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0)
    }
}

impl CudaDevice {
    pub fn new_with_stream(ordinal: usize) -> Result<Self> {
        let context = cudarc::driver::CudaContext::new(ordinal).w()?;
        retain_pool_memory(&context);
        let stream = context.new_stream().w()?;
        let blas = cudarc::cublas::CudaBlas::new(stream.clone()).w()?;
        let curand = cudarc::curand::CudaRng::new(299792458, stream.clone()).w()?;
        let module_store = ModuleStore::new();
        Ok(Self {
            id: DeviceId::new(),
            context,
            stream,
            blas: Arc::new(blas),
            curand: Arc::new(Mutex::new(CudaRng(curand))),
            modules: Arc::new(std::sync::RwLock::new(module_store)),
            custom_modules: Arc::new(std::sync::RwLock::new(HashMap::new())),
            layout_params: Arc::new(Mutex::new(HashMap::new())),
        })
    }
}

impl BackendDevice for CudaDevice {
    type Storage = CudaStorage;

    fn new(ordinal: usize) -> Result<Self> {
        let context = cudarc::driver::CudaContext::new(ordinal).w()?;
        retain_pool_memory(&context);
        // Everything this device does runs on its one stream, in order: cudarc's per-buffer
        // events (two created per allocation, a wait per buffer used at each drop, a record
        // per cuBLAS operand) only order work across streams. Opt back in with
        // CANDLE_CUDA_EVENT_TRACKING=1, e.g. to share buffers with streams of your own.
        if !matches!(
            std::env::var(CudaDevice::EVENT_TRACKING_ENV).as_deref(),
            Ok("1" | "true")
        ) {
            // SAFETY: set before this device allocates anything; its buffers are only used on
            // its own stream (copies to other devices go through the host, synchronously).
            unsafe { context.disable_event_tracking() };
        }
        let stream = context.default_stream();
        let blas = cudarc::cublas::CudaBlas::new(stream.clone()).w()?;
        let curand = cudarc::curand::CudaRng::new(299792458, stream.clone()).w()?;
        let module_store = ModuleStore::new();
        Ok(Self {
            id: DeviceId::new(),
            context,
            stream,
            blas: Arc::new(blas),
            curand: Arc::new(Mutex::new(CudaRng(curand))),
            modules: Arc::new(std::sync::RwLock::new(module_store)),
            custom_modules: Arc::new(std::sync::RwLock::new(HashMap::new())),
            layout_params: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    fn set_seed(&self, seed: u64) -> Result<()> {
        // We do not call set_seed but instead create a new curand object. This ensures that the
        // state will be identical and the same random numbers will be generated.
        let mut curand = self.curand.lock().unwrap();
        curand.0 = cudarc::curand::CudaRng::new(seed, self.stream.clone()).w()?;
        Ok(())
    }

    fn location(&self) -> crate::DeviceLocation {
        crate::DeviceLocation::Cuda {
            gpu_id: self.context.ordinal(),
        }
    }

    fn same_device(&self, rhs: &Self) -> bool {
        self.id == rhs.id
    }

    fn zeros_impl(&self, shape: &Shape, dtype: DType) -> Result<CudaStorage> {
        let elem_count = shape.elem_count();
        let slice = match dtype {
            DType::U8 => {
                let data = self.alloc_zeros::<u8>(elem_count)?;
                CudaStorageSlice::U8(data)
            }
            DType::U32 => {
                let data = self.alloc_zeros::<u32>(elem_count)?;
                CudaStorageSlice::U32(data)
            }
            DType::I64 => {
                let data = self.alloc_zeros::<i64>(elem_count)?;
                CudaStorageSlice::I64(data)
            }
            DType::BF16 => {
                let data = self.alloc_zeros::<bf16>(elem_count)?;
                CudaStorageSlice::BF16(data)
            }
            DType::F16 => {
                let data = self.alloc_zeros::<f16>(elem_count)?;
                CudaStorageSlice::F16(data)
            }
            DType::F32 => {
                let data = self.alloc_zeros::<f32>(elem_count)?;
                CudaStorageSlice::F32(data)
            }
            DType::F64 => {
                let data = self.alloc_zeros::<f64>(elem_count)?;
                CudaStorageSlice::F64(data)
            }
            DType::F8E4M3 => {
                let data = self.alloc_zeros::<F8E4M3>(elem_count)?;
                CudaStorageSlice::F8E4M3(data)
            }
        };
        Ok(CudaStorage {
            slice,
            device: self.clone(),
        })
    }

    fn rand_uniform(&self, shape: &Shape, dtype: DType, lo: f64, up: f64) -> Result<CudaStorage> {
        let elem_count = shape.elem_count();
        let curand = self.curand.lock().unwrap();
        let slice = match dtype {
            // TODO: Add support for F16 and BF16 though this is likely to require some upstream
            // cudarc changes.
            DType::U8 | DType::U32 | DType::I64 | DType::F16 | DType::BF16 | DType::F8E4M3 => {
                Err(CudaError::UnsupportedDtype {
                    dtype,
                    op: "rand_uniform",
                })
                .w()?
            }
            DType::F32 => {
                let mut data = unsafe { self.alloc::<f32>(elem_count)? };
                curand.0.fill_with_uniform(&mut data).w()?;
                CudaStorageSlice::F32(data)
            }
            DType::F64 => {
                let mut data = unsafe { self.alloc::<f64>(elem_count)? };
                curand.0.fill_with_uniform(&mut data).w()?;
                CudaStorageSlice::F64(data)
            }
        };
        let slice = if lo == 0. && up == 1.0 {
            slice
        } else {
            use super::utils::Map1;
            let layout = Layout::contiguous(shape);
            super::Affine(up - lo, lo).map(&slice, self, &layout)?
        };
        Ok(CudaStorage {
            slice,
            device: self.clone(),
        })
    }

    fn rand_normal(&self, shape: &Shape, dtype: DType, mean: f64, std: f64) -> Result<CudaStorage> {
        // TODO: Add support for F16 and BF16 though this is likely to require some upstream
        // cudarc changes.
        let elem_count = shape.elem_count();
        let curand = self.curand.lock().unwrap();
        // curand can only generate an odd number of values.
        // https://github.com/huggingface/candle/issues/734
        let elem_count_round = if elem_count % 2 == 1 {
            elem_count + 1
        } else {
            elem_count
        };
        let slice = match dtype {
            DType::U8 | DType::U32 | DType::I64 | DType::F16 | DType::BF16 | DType::F8E4M3 => {
                Err(CudaError::UnsupportedDtype {
                    dtype,
                    op: "rand_normal",
                })
                .w()?
            }
            DType::F32 => {
                let mut data = unsafe { self.alloc::<f32>(elem_count_round)? };
                curand
                    .0
                    .fill_with_normal(&mut data, mean as f32, std as f32)
                    .w()?;
                CudaStorageSlice::F32(data)
            }
            DType::F64 => {
                let mut data = unsafe { self.alloc::<f64>(elem_count_round)? };
                curand.0.fill_with_normal(&mut data, mean, std).w()?;
                CudaStorageSlice::F64(data)
            }
        };
        Ok(CudaStorage {
            slice,
            device: self.clone(),
        })
    }

    unsafe fn alloc_uninit(&self, shape: &Shape, dtype: DType) -> Result<Self::Storage> {
        let elem_count = shape.elem_count();
        let slice = match dtype {
            DType::U8 => {
                let data = self.alloc::<u8>(elem_count)?;
                CudaStorageSlice::U8(data)
            }
            DType::U32 => {
                let data = self.alloc::<u32>(elem_count)?;
                CudaStorageSlice::U32(data)
            }
            DType::I64 => {
                let data = self.alloc::<i64>(elem_count)?;
                CudaStorageSlice::I64(data)
            }
            DType::BF16 => {
                let data = self.alloc::<bf16>(elem_count)?;
                CudaStorageSlice::BF16(data)
            }
            DType::F16 => {
                let data = self.alloc::<f16>(elem_count)?;
                CudaStorageSlice::F16(data)
            }
            DType::F32 => {
                let data = self.alloc::<f32>(elem_count)?;
                CudaStorageSlice::F32(data)
            }
            DType::F64 => {
                let data = self.alloc::<f64>(elem_count)?;
                CudaStorageSlice::F64(data)
            }
            DType::F8E4M3 => {
                let data = self.alloc::<F8E4M3>(elem_count)?;
                CudaStorageSlice::F8E4M3(data)
            }
        };
        Ok(CudaStorage {
            slice,
            device: self.clone(),
        })
    }

    fn storage_from_slice<T: crate::WithDType>(&self, s: &[T]) -> Result<Self::Storage> {
        let slice = match T::cpu_storage_ref(s) {
            CpuStorageRef::U8(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::U8(data)
            }
            CpuStorageRef::U32(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::U32(data)
            }
            CpuStorageRef::I64(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::I64(data)
            }
            CpuStorageRef::BF16(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::BF16(data)
            }
            CpuStorageRef::F16(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::F16(data)
            }
            CpuStorageRef::F32(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::F32(data)
            }
            CpuStorageRef::F64(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::F64(data)
            }
            CpuStorageRef::F8E4M3(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::F8E4M3(data)
            }
        };
        Ok(CudaStorage {
            slice,
            device: self.clone(),
        })
    }

    fn storage_from_cpu_storage(&self, storage: &CpuStorage) -> Result<CudaStorage> {
        let slice = match storage {
            CpuStorage::U8(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::U8(data)
            }
            CpuStorage::U32(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::U32(data)
            }
            CpuStorage::I64(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::I64(data)
            }
            CpuStorage::BF16(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::BF16(data)
            }
            CpuStorage::F16(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::F16(data)
            }
            CpuStorage::F32(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::F32(data)
            }
            CpuStorage::F64(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::F64(data)
            }
            CpuStorage::F8E4M3(storage) => {
                let data = self.memcpy_stod(storage)?;
                CudaStorageSlice::F8E4M3(data)
            }
        };
        Ok(CudaStorage {
            slice,
            device: self.clone(),
        })
    }

    fn storage_from_cpu_storage_owned(&self, storage: CpuStorage) -> Result<CudaStorage> {
        let slice = match storage {
            CpuStorage::U8(storage) => {
                let data = self.memcpy_stod(&storage)?;
                CudaStorageSlice::U8(data)
            }
            CpuStorage::U32(storage) => {
                let data = self.memcpy_stod(&storage)?;
                CudaStorageSlice::U32(data)
            }
            CpuStorage::I64(storage) => {
                let data = self.memcpy_stod(&storage)?;
                CudaStorageSlice::I64(data)
            }
            CpuStorage::BF16(storage) => {
                let data = self.memcpy_stod(&storage)?;
                CudaStorageSlice::BF16(data)
            }
            CpuStorage::F16(storage) => {
                let data = self.memcpy_stod(&storage)?;
                CudaStorageSlice::F16(data)
            }
            CpuStorage::F32(storage) => {
                let data = self.memcpy_stod(&storage)?;
                CudaStorageSlice::F32(data)
            }
            CpuStorage::F64(storage) => {
                let data = self.memcpy_stod(&storage)?;
                CudaStorageSlice::F64(data)
            }
            CpuStorage::F8E4M3(storage) => {
                let data = self.memcpy_stod(&storage)?;
                CudaStorageSlice::F8E4M3(data)
            }
        };
        Ok(CudaStorage {
            slice,
            device: self.clone(),
        })
    }

    fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(crate::Error::wrap)?;
        Ok(())
    }
}
