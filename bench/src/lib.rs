//! Shared pieces of the layer norm benchmarks: the shape grid, timing and the stock baseline.

pub mod stock;
pub mod timing;

/// rows x hidden shapes of the comparison (the kernel issue's grid).
pub const SHAPES: [(usize, usize); 7] = [
    (16384, 64),
    (16384, 256),
    (8192, 1024),
    (4096, 4096),
    (1024, 16384),
    (65536, 1024),
    (32768, 4096),
];

/// Device-to-device copy speed of the H200 measured with PyTorch (512 MB copies), GB/s.
pub const H200_COPY_GBPS: f64 = 4174.0;
