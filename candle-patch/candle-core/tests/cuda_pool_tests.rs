#![cfg(feature = "cuda")]
//! The release threshold of the default memory pool: set when a device is created unless opted
//! out or already set, user settable, and the pool can be trimmed.
use anyhow::Result;
use candle_core::cuda::{CudaDevice, POOL_RETAIN_ENV};
use candle_core::{backend::BackendDevice, DType, Device, Tensor};

// One test: the pool and the environment are shared by the whole process.
#[test]
fn pool_release_threshold_and_trim() -> Result<()> {
    let dev = CudaDevice::new(0)?;
    // What device creation sets by default.
    assert_eq!(dev.pool_release_threshold()?, u64::MAX);

    // Opt-out: a new device leaves the driver's default.
    dev.set_pool_release_threshold(0)?;
    std::env::set_var(POOL_RETAIN_ENV, "0");
    let _opted_out = CudaDevice::new(0)?;
    assert_eq!(dev.pool_release_threshold()?, 0);
    std::env::remove_var(POOL_RETAIN_ENV);
    let _default = CudaDevice::new(0)?;
    assert_eq!(dev.pool_release_threshold()?, u64::MAX);

    // A threshold set by someone else is not overwritten.
    dev.set_pool_release_threshold(1 << 20)?;
    let _other = CudaDevice::new(0)?;
    assert_eq!(dev.pool_release_threshold()?, 1 << 20);

    // Freed memory stays in the pool with the maximum threshold, trimming returns it.
    let size = 256 << 20;
    dev.set_pool_release_threshold(u64::MAX)?;
    let device = Device::Cuda(dev.clone());
    let before = dev.pool_stats()?;
    let t = Tensor::zeros(size / 4, DType::F32, &device)?;
    let held = dev.pool_stats()?;
    assert!(
        held.used >= before.used + size as u64,
        "{before:?} {held:?}"
    );
    assert!(held.used_peak >= held.used && held.reserved >= held.used);
    drop(t);
    device.synchronize()?;
    let freed = dev.pool_stats()?;
    assert_eq!(freed.used, before.used, "{freed:?}");
    assert!(freed.reserved >= before.used + size as u64, "{freed:?}");
    dev.trim_pool(0)?;
    let trimmed = dev.pool_stats()?;
    assert!(
        trimmed.reserved + size as u64 <= freed.reserved,
        "{trimmed:?}"
    );
    // The peak of the used memory is reset to the current value.
    dev.reset_pool_peaks()?;
    assert_eq!(dev.pool_stats()?.used_peak, trimmed.used);

    // With the driver's default threshold, a synchronization returns freed memory.
    dev.set_pool_release_threshold(0)?;
    let t = Tensor::zeros(size / 4, DType::F32, &device)?;
    drop(t);
    device.synchronize()?;
    let released = dev.pool_stats()?;
    assert!(
        released.reserved < before.used + size as u64,
        "{released:?}"
    );
    dev.set_pool_release_threshold(u64::MAX)?;
    Ok(())
}
