#![cfg(feature = "cuda")]
//! The release threshold of the default memory pool: set when a device is created if opted in
//! and not already set, user settable, and the pool can be trimmed.
use anyhow::Result;
use candle_core::cuda::CudaDevice;
use candle_core::{backend::BackendDevice, DType, Device, Tensor};

// One test: the pool and the environment are shared by the whole process.
#[test]
fn pool_release_threshold_and_trim() -> Result<()> {
    // By default a new device leaves the driver's default threshold.
    std::env::remove_var(CudaDevice::POOL_RETAIN_ENV);
    let dev = CudaDevice::new(0)?;
    dev.set_pool_release_threshold(0)?;
    let _default = CudaDevice::new(0)?;
    assert_eq!(dev.pool_release_threshold()?, 0);

    // Opt-in: a new device keeps freed memory.
    std::env::set_var(CudaDevice::POOL_RETAIN_ENV, "1");
    let _opted_in = CudaDevice::new(0)?;
    assert_eq!(dev.pool_release_threshold()?, u64::MAX);

    // A threshold set by someone else is not overwritten.
    dev.set_pool_release_threshold(1 << 20)?;
    let _other = CudaDevice::new(0)?;
    assert_eq!(dev.pool_release_threshold()?, 1 << 20);
    std::env::remove_var(CudaDevice::POOL_RETAIN_ENV);

    // Freed memory stays in the pool with the maximum threshold, trimming returns it.
    let size = 256u64 << 20;
    dev.set_pool_release_threshold(u64::MAX)?;
    let device = Device::Cuda(dev.clone());
    let used = dev.pool_used_memory()?;
    let t = Tensor::zeros(size as usize / 4, DType::F32, &device)?;
    assert!(dev.pool_used_memory()? >= used + size);
    assert!(dev.pool_max_used_memory()? >= used + size);
    drop(t);
    device.synchronize()?;
    assert_eq!(dev.pool_used_memory()?, used);
    let reserved = dev.pool_reserved_memory()?;
    assert!(reserved >= used + size, "{reserved} bytes reserved");
    dev.trim_pool(0)?;
    let trimmed = dev.pool_reserved_memory()?;
    assert!(
        trimmed + size <= reserved,
        "{trimmed} bytes reserved after trim"
    );
    // The peak of the used memory is reset to the current value.
    dev.reset_pool_peaks()?;
    assert_eq!(dev.pool_max_used_memory()?, used);

    // With the driver's default threshold, a synchronization returns freed memory.
    dev.set_pool_release_threshold(0)?;
    let t = Tensor::zeros(size as usize / 4, DType::F32, &device)?;
    drop(t);
    device.synchronize()?;
    let released = dev.pool_reserved_memory()?;
    assert!(
        released < used + size,
        "{released} bytes reserved after sync"
    );
    dev.set_pool_release_threshold(u64::MAX)?;
    Ok(())
}
