#![cfg(feature = "cuda")]
//! A device created with `new` runs everything on its one stream without cudarc's event
//! tracking unless asked, and gives the same results as with it.
use anyhow::Result;
use candle_core::cuda::CudaDevice;
use candle_core::{backend::BackendDevice, Device, Tensor};

/// A kernel launch, a cuBLAS call and a reduction, read back to the host.
fn compute(dev: &Device) -> Result<Vec<f32>> {
    let a = Tensor::arange(0f32, 12., dev)?.reshape((3, 4))?;
    let b = (a.matmul(&a.t()?)? + 1.)?.sqrt()?;
    Ok(b.sum(1)?.to_vec1::<f32>()?)
}

// One test: the environment is shared by the whole process.
#[test]
fn event_tracking_only_when_asked() -> Result<()> {
    let untracked = CudaDevice::new(0)?;
    assert!(!untracked.is_event_tracking());
    std::env::set_var(CudaDevice::EVENT_TRACKING_ENV, "1");
    let tracked = CudaDevice::new(0)?;
    std::env::remove_var(CudaDevice::EVENT_TRACKING_ENV);
    assert!(tracked.is_event_tracking());
    assert!(CudaDevice::new_with_stream(0)?.is_event_tracking());

    let want = compute(&Device::Cpu)?;
    for dev in [untracked, tracked] {
        // Twice: the second run takes the kernels from the device's function cache.
        for _ in 0..2 {
            let got = compute(&Device::Cuda(dev.clone()))?;
            for (g, w) in got.iter().zip(&want) {
                // CUDA's sqrt may differ from the host's in the last bit.
                assert!((g - w).abs() <= 1e-5 * w.abs(), "{got:?} vs {want:?}");
            }
        }
    }
    Ok(())
}
