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

/// Hidden sizes of the fine sweep (`gpu_bench --sweep`): the powers of two from 64 to 65536,
/// the sizes halfway between them (1.5x), and sizes of no special form, odd ones among them
/// (rows that start at every offset of a 16-byte word) across the tiers.
pub fn sweep_hidden() -> Vec<usize> {
    let mut v: Vec<usize> = (6..=16).map(|k| 1 << k).collect();
    v.extend((6..16).map(|k| 3 << (k - 1)));
    v.extend([
        97, 201, 333, 1000, 1001, 2500, 3000, 3001, 5000, 7777, 10000, 15001, 20000, 30001, 40000,
        50000, 65535,
    ]);
    v.sort_unstable();
    v
}

/// Rows of a sweep point: each of its row-major tensors holds at least 32 MiB.
pub fn sweep_rows(hidden: usize, elem_bytes: usize) -> usize {
    (32usize << 20).div_ceil(hidden * elem_bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn sweep_points() {
        let h = super::sweep_hidden();
        assert_eq!((h[0], *h.last().unwrap()), (64, 65536));
        assert!(
            h.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicates: {h:?}"
        );
        for &c in &h {
            for bytes in [2, 4] {
                let r = super::sweep_rows(c, bytes);
                assert!(r * c * bytes >= 32 << 20 && (r - 1) * c * bytes < 32 << 20);
            }
        }
    }
}
