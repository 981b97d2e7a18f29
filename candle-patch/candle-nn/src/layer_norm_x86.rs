//! The cpu layer norm's f32, f16 and bf16 rows with AVX-512 or AVX2 + FMA vectors, picked at
//! run time.
//!
//! The portable rows in `ops.rs` are vectorized by the compiler for the build's target, which is
//! SSE2 for the default x86-64 target; written with the wider vectors the cpu has, a row is a
//! few vector loops: the row sums, the statistics, then the output. Each row only depends on
//! itself, so the results do not depend on the number of threads, as on the portable path.
//! 16-bit elements are converted to f32 lanes as they are loaded and rounded back as they are
//! stored, so that every type runs the same f32 loops.
use half::{bf16, f16};
use std::arch::x86_64::*;
use std::mem::MaybeUninit;

/// The vector instructions a row runs with. Only made by [`Isa::detect`] (its field is private to
/// this module), once the cpu is known to have them: the row functions rely on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Isa(Kind);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Avx512,
    Avx2,
}

impl Isa {
    /// The widest instructions this cpu has whose vector fits in a row of `n_cols` elements
    /// (shorter rows stay on the portable path).
    pub(crate) fn detect(n_cols: usize) -> Option<Self> {
        if n_cols >= 16 && is_x86_feature_detected!("avx512f") {
            Some(Self(Kind::Avx512))
        } else if n_cols >= 8 && Self::has_avx2() {
            Some(Self(Kind::Avx2))
        } else {
            None
        }
    }

    /// AVX2 with FMA, and F16C for the f16 conversions (every cpu with AVX2 has it so far).
    fn has_avx2() -> bool {
        is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("f16c")
    }

    /// Every instruction set of [`Isa`] this cpu has, for tests that compare them.
    #[cfg(test)]
    fn all() -> Vec<Self> {
        let mut all = vec![];
        if is_x86_feature_detected!("avx512f") {
            all.push(Self(Kind::Avx512))
        }
        if Self::has_avx2() {
            all.push(Self(Kind::Avx2))
        }
        all
    }
}

/// A vector of f32 lanes. The methods are inlined into functions compiled for the instructions
/// they use, and only called there.
trait Lanes: Copy {
    const N: usize;
    unsafe fn splat(v: f32) -> Self;
    unsafe fn load<E: Elem>(p: *const E) -> Self;
    unsafe fn store<E: Elem>(self, p: *mut E);
    unsafe fn add(self, o: Self) -> Self;
    unsafe fn sub(self, o: Self) -> Self;
    unsafe fn mul(self, o: Self) -> Self;
    /// `self * a + b`, rounded once.
    unsafe fn mul_add(self, a: Self, b: Self) -> Self;
    /// The sum of the lanes, in a fixed order.
    unsafe fn sum(self) -> f32;
}

impl Lanes for __m512 {
    const N: usize = 16;
    #[inline(always)]
    unsafe fn splat(v: f32) -> Self {
        _mm512_set1_ps(v)
    }
    #[inline(always)]
    unsafe fn load<E: Elem>(p: *const E) -> Self {
        E::load_512(p)
    }
    #[inline(always)]
    unsafe fn store<E: Elem>(self, p: *mut E) {
        E::store_512(self, p)
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        _mm512_add_ps(self, o)
    }
    #[inline(always)]
    unsafe fn sub(self, o: Self) -> Self {
        _mm512_sub_ps(self, o)
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        _mm512_mul_ps(self, o)
    }
    #[inline(always)]
    unsafe fn mul_add(self, a: Self, b: Self) -> Self {
        _mm512_fmadd_ps(self, a, b)
    }
    #[inline(always)]
    unsafe fn sum(self) -> f32 {
        let half = _mm256_add_ps(
            _mm512_castps512_ps256(self),
            _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(self))),
        );
        half.sum()
    }
}

impl Lanes for __m256 {
    const N: usize = 8;
    #[inline(always)]
    unsafe fn splat(v: f32) -> Self {
        _mm256_set1_ps(v)
    }
    #[inline(always)]
    unsafe fn load<E: Elem>(p: *const E) -> Self {
        E::load_256(p)
    }
    #[inline(always)]
    unsafe fn store<E: Elem>(self, p: *mut E) {
        E::store_256(self, p)
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        _mm256_add_ps(self, o)
    }
    #[inline(always)]
    unsafe fn sub(self, o: Self) -> Self {
        _mm256_sub_ps(self, o)
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        _mm256_mul_ps(self, o)
    }
    #[inline(always)]
    unsafe fn mul_add(self, a: Self, b: Self) -> Self {
        _mm256_fmadd_ps(self, a, b)
    }
    #[inline(always)]
    unsafe fn sum(self) -> f32 {
        let v = _mm_add_ps(
            _mm256_castps256_ps128(self),
            _mm256_extractf128_ps::<1>(self),
        );
        let v = _mm_add_ps(v, _mm_movehl_ps(v, v));
        let v = _mm_add_ss(v, _mm_shuffle_ps::<0b01>(v, v));
        _mm_cvtss_f32(v)
    }
}

/// An element type of the rows in memory: f32, or a 16-bit type converted to f32 lanes as it
/// is loaded and rounded to the nearest (ties to even) as it is stored, as `half`'s
/// conversions do one element at a time.
pub(crate) trait Elem: Copy + sealed::Sealed {
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;
    /// Loads 16 elements (AVX-512F).
    unsafe fn load_512(p: *const Self) -> __m512;
    /// Stores 16 elements (AVX-512F).
    unsafe fn store_512(v: __m512, p: *mut Self);
    /// Loads 8 elements (AVX2, F16C).
    unsafe fn load_256(p: *const Self) -> __m256;
    /// Stores 8 elements (AVX2, F16C).
    unsafe fn store_256(v: __m256, p: *mut Self);
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

impl Elem for f32 {
    fn to_f32(self) -> f32 {
        self
    }
    fn from_f32(v: f32) -> Self {
        v
    }
    #[inline(always)]
    unsafe fn load_512(p: *const Self) -> __m512 {
        _mm512_loadu_ps(p)
    }
    #[inline(always)]
    unsafe fn store_512(v: __m512, p: *mut Self) {
        _mm512_storeu_ps(p, v)
    }
    #[inline(always)]
    unsafe fn load_256(p: *const Self) -> __m256 {
        _mm256_loadu_ps(p)
    }
    #[inline(always)]
    unsafe fn store_256(v: __m256, p: *mut Self) {
        _mm256_storeu_ps(p, v)
    }
}

/// `vcvtps2ph`'s rounding: to the nearest, ties to even, as `f16::from_f32`.
const F16_ROUNDING: i32 = _MM_FROUND_TO_NEAREST_INT;

impl Elem for f16 {
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
    #[inline(always)]
    unsafe fn load_512(p: *const Self) -> __m512 {
        _mm512_cvtph_ps(_mm256_loadu_si256(p as *const __m256i))
    }
    #[inline(always)]
    unsafe fn store_512(v: __m512, p: *mut Self) {
        _mm256_storeu_si256(p as *mut __m256i, _mm512_cvtps_ph::<F16_ROUNDING>(v))
    }
    #[inline(always)]
    unsafe fn load_256(p: *const Self) -> __m256 {
        _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i))
    }
    #[inline(always)]
    unsafe fn store_256(v: __m256, p: *mut Self) {
        _mm_storeu_si128(p as *mut __m128i, _mm256_cvtps_ph::<F16_ROUNDING>(v))
    }
}

// bf16 is the upper half of an f32: loaded by shifting it there, stored by rounding the lower
// half away, `(bits + 0x7fff + lsb) >> 16` with `lsb` the lowest bit kept (ties to even), and a
// NaN kept a NaN as `bf16::from_f32` does: its upper half with the quiet bit set.
impl Elem for bf16 {
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    fn from_f32(v: f32) -> Self {
        bf16::from_f32(v)
    }
    #[inline(always)]
    unsafe fn load_512(p: *const Self) -> __m512 {
        let v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(p as *const __m256i));
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(v))
    }
    #[inline(always)]
    unsafe fn store_512(v: __m512, p: *mut Self) {
        let bits = _mm512_castps_si512(v);
        let lsb = _mm512_and_si512(_mm512_srli_epi32::<16>(bits), _mm512_set1_epi32(1));
        let rounded = _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
        let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        let quiet = _mm512_or_si512(bits, _mm512_set1_epi32(0x40 << 16));
        let out = _mm512_srli_epi32::<16>(_mm512_mask_blend_epi32(nan, rounded, quiet));
        _mm256_storeu_si256(p as *mut __m256i, _mm512_cvtepi32_epi16(out))
    }
    #[inline(always)]
    unsafe fn load_256(p: *const Self) -> __m256 {
        let v = _mm256_cvtepu16_epi32(_mm_loadu_si128(p as *const __m128i));
        _mm256_castsi256_ps(_mm256_slli_epi32::<16>(v))
    }
    #[inline(always)]
    unsafe fn store_256(v: __m256, p: *mut Self) {
        let bits = _mm256_castps_si256(v);
        let lsb = _mm256_and_si256(_mm256_srli_epi32::<16>(bits), _mm256_set1_epi32(1));
        let rounded = _mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
        let nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
        let quiet = _mm256_or_si256(bits, _mm256_set1_epi32(0x40 << 16));
        let out = _mm256_srli_epi32::<16>(_mm256_blendv_epi8(rounded, quiet, nan));
        // The eight 32-bit lanes hold values below 2^16: packed in order, without saturating.
        let (lo, hi) = (
            _mm256_castsi256_si128(out),
            _mm256_extracti128_si256::<1>(out),
        );
        _mm_storeu_si128(p as *mut __m128i, _mm_packus_epi32(lo, hi))
    }
}

/// The work of a row loop on one vector, given the offset of its first element: adds the
/// vector's terms to `S` sums. A trait rather than a closure: its `#[inline(always)]` method
/// ends up inside the functions compiled for the vector instructions (a closure that is not
/// inlined there calls every instruction as a function).
trait Step<V, const S: usize> {
    unsafe fn step(&self, s: &mut [V; S], o: usize);
}

/// Sums over the whole vectors of a row, two accumulators per sum (even and odd vectors, added
/// at the end) so that a long row is not one chain of dependent adds.
#[inline(always)]
unsafe fn vector_sums<V: Lanes, const S: usize>(n_vec: usize, f: &impl Step<V, S>) -> [f32; S] {
    let zero = V::splat(0.);
    let (mut even, mut odd) = ([zero; S], [zero; S]);
    let mut i = 0;
    while i + 1 < n_vec {
        f.step(&mut even, i * V::N);
        f.step(&mut odd, (i + 1) * V::N);
        i += 2;
    }
    if i < n_vec {
        f.step(&mut even, i * V::N);
    }
    let mut sums = [0f32; S];
    for (s, (e, o)) in sums.iter_mut().zip(even.iter().zip(odd.iter())) {
        *s = e.add(*o).sum();
    }
    sums
}

#[inline(always)]
unsafe fn load<V: Lanes, E: Elem>(v: &[E], o: usize) -> V {
    V::load(v.as_ptr().add(o))
}

/// A row's statistics from its sums shifted by `shift` (see `FwdTerms`),
/// `xhat = (x - shift - mean) * rstd`.
#[derive(Clone, Copy)]
struct RowStats {
    shift: f32,
    mean: f32,
    rstd: f32,
}

impl RowStats {
    /// The statistics from the sums of `d = x - shift` and `d * d` over the `n` elements of a
    /// row. `None` when the shift is more than two standard deviations from the mean:
    /// `E[d^2] - E[d]^2` then loses the low bits of the variance, and the sums of `d` the low
    /// bits of the mean. Such a row is summed again, shifted by this mean (`reshift`).
    fn new(shift: f32, sum_d: f32, sum_d2: f32, n: f32, eps: f32) -> Option<Self> {
        // One division, off the sums' path: the quotients are products by `1 / n`.
        let inv_n = n.recip();
        let mean = sum_d * inv_n;
        let var = sum_d2 * inv_n - mean * mean;
        let rstd = (var.max(0.) + eps).sqrt().recip();
        (mean * mean <= 4. * var).then_some(Self { shift, mean, rstd })
    }

    /// The shift of a row's second sums when `new` gave `None`: its mean, within a few
    /// roundings, so that the second sums are of values around 0.
    fn reshift(shift: f32, sum_d: f32, n: f32) -> f32 {
        shift + sum_d / n
    }

    /// `new` after the second sums: the shift is then close to the mean.
    fn close(shift: f32, sum_d: f32, sum_d2: f32, n: f32, eps: f32) -> Self {
        // One division, off the sums' path: the quotients are products by `1 / n`.
        let inv_n = n.recip();
        let mean = sum_d * inv_n;
        let var = sum_d2 * inv_n - mean * mean;
        let rstd = (var.max(0.) + eps).sqrt().recip();
        Self { shift, mean, rstd }
    }

    #[inline(always)]
    unsafe fn xhat<V: Lanes>(&self, x: V) -> V {
        x.sub(V::splat(self.shift))
            .sub(V::splat(self.mean))
            .mul(V::splat(self.rstd))
    }

    fn xhat1(&self, x: f32) -> f32 {
        (x - self.shift - self.mean) * self.rstd
    }
}

/// Rows at least this wide take their next row's sums in the loop that writes their output
/// (see `fwd_rows`): the streams of a wider row no longer stay in the L1 cache between two
/// passes over it, a narrower row has nothing to gain.
const FUSE_COLS: usize = 2048;

/// The forward's sums of a row: `d = x - shift` and `d * d`, the shift being the row's first
/// element (or its mean, see `RowStats::new`).
#[derive(Clone, Copy)]
struct FwdTerms<'a, E> {
    x: &'a [E],
    shift: f32,
}

impl<V: Lanes, E: Elem> Step<V, 2> for FwdTerms<'_, E> {
    #[inline(always)]
    unsafe fn step(&self, s: &mut [V; 2], o: usize) {
        let d = load::<V, E>(self.x, o).sub(V::splat(self.shift));
        s[0] = s[0].add(d);
        s[1] = d.mul_add(d, s[1]);
    }
}

impl<'a, E: Elem> FwdTerms<'a, E> {
    fn new(x: &'a [E]) -> Self {
        Self {
            x,
            shift: x[0].to_f32(),
        }
    }

    /// The sums of the whole vectors from `vector_sums`, plus the elements past them.
    #[inline(always)]
    fn with_tail<V: Lanes>(&self, mut s: [f32; 2]) -> [f32; 2] {
        for &v in &self.x[self.x.len() / V::N * V::N..] {
            let d = v.to_f32() - self.shift;
            s[0] += d;
            s[1] += d * d;
        }
        s
    }

    /// The row's statistics from its sums `s`, summed again with a new shift if need be.
    #[inline(always)]
    unsafe fn stats<V: Lanes>(self, [sum_d, sum_d2]: [f32; 2], eps: f32) -> RowStats {
        let n = self.x.len() as f32;
        RowStats::new(self.shift, sum_d, sum_d2, n, eps).unwrap_or_else(|| {
            let t = Self {
                shift: RowStats::reshift(self.shift, sum_d, n),
                ..self
            };
            let [sum_d, sum_d2] = t.with_tail::<V>(vector_sums::<V, 2>(n as usize / V::N, &t));
            RowStats::close(t.shift, sum_d, sum_d2, n, eps)
        })
    }
}

/// The backward's sums of a row of `x` and `dy`: `d = x - shift`, `d * d`, `g = dy * alpha`
/// and `g * d`, the shift as in `FwdTerms`.
#[derive(Clone, Copy)]
struct BwdTerms<'a, E> {
    x: &'a [E],
    dy: &'a [E],
    alpha: &'a [f32],
    shift: f32,
}

impl<V: Lanes, E: Elem> Step<V, 4> for BwdTerms<'_, E> {
    #[inline(always)]
    unsafe fn step(&self, s: &mut [V; 4], o: usize) {
        let d = load::<V, E>(self.x, o).sub(V::splat(self.shift));
        let g = load::<V, E>(self.dy, o).mul(load(self.alpha, o));
        s[0] = s[0].add(d);
        s[1] = d.mul_add(d, s[1]);
        s[2] = s[2].add(g);
        s[3] = g.mul_add(d, s[3]);
    }
}

impl<E: Elem> BwdTerms<'_, E> {
    /// As `FwdTerms::with_tail`.
    #[inline(always)]
    fn with_tail<V: Lanes>(&self, mut s: [f32; 4]) -> [f32; 4] {
        let tail = self.x.len() / V::N * V::N;
        let elems = self.x[tail..].iter().zip(&self.dy[tail..]);
        for ((&x, &dy), &a) in elems.zip(&self.alpha[tail..]) {
            let (d, g) = (x.to_f32() - self.shift, dy.to_f32() * a);
            s[0] += d;
            s[1] += d * d;
            s[2] += g;
            s[3] += g * d;
        }
        s
    }

    /// The row's statistics, `mean(g)` and `mean(g * xhat)` from its sums `s`, summed again
    /// with a new shift if need be (as `FwdTerms::stats`).
    #[inline(always)]
    unsafe fn stats<V: Lanes>(self, s: [f32; 4], eps: f32) -> (RowStats, f32, f32) {
        let n = self.x.len() as f32;
        let (stats, [_, _, sum_g, sum_gd]) = match RowStats::new(self.shift, s[0], s[1], n, eps) {
            Some(stats) => (stats, s),
            None => {
                let t = Self {
                    shift: RowStats::reshift(self.shift, s[0], n),
                    ..self
                };
                let s = t.with_tail::<V>(vector_sums::<V, 4>(n as usize / V::N, &t));
                (RowStats::close(t.shift, s[0], s[1], n, eps), s)
            }
        };
        let inv_n = n.recip();
        let mean_g = sum_g * inv_n;
        // mean(g * xhat) = rstd * (mean(g * d) - mean * mean(g)).
        let mean_gx = stats.rstd * (sum_gd * inv_n - stats.mean * mean_g);
        (stats, mean_g, mean_gx)
    }
}

/// Writes a row's output for one vector, and takes the next row's terms (`T`) in the same
/// step when there is one.
struct WriteAndSum<'a, W, T>(&'a W, Option<&'a T>);

impl<V: Lanes, W: Step<V, 0>, T: Step<V, S>, const S: usize> Step<V, S> for WriteAndSum<'_, W, T> {
    #[inline(always)]
    unsafe fn step(&self, s: &mut [V; S], o: usize) {
        self.0.step(&mut [], o);
        if let Some(t) = self.1 {
            t.step(s, o)
        }
    }
}

/// The forward's output of a row: `y = xhat * alpha + beta`.
struct FwdWrite<'a, E> {
    x: &'a [E],
    affine: (&'a [f32], &'a [f32]),
    stats: RowStats,
    y: *mut E,
}

impl<V: Lanes, E: Elem> Step<V, 0> for FwdWrite<'_, E> {
    #[inline(always)]
    unsafe fn step(&self, _: &mut [V; 0], o: usize) {
        let xhat = self.stats.xhat(load::<V, E>(self.x, o));
        let (a, b) = (load(self.affine.0, o), load(self.affine.1, o));
        xhat.mul_add(a, b).store(self.y.add(o));
    }
}

/// Runs `write` over a row's whole vectors, then takes the next row's sums (`next`): in the same
/// loop when the rows are wide (`FUSE_COLS`), else in a pass of their own. The sums are the same
/// either way (the same terms, in the same order).
#[inline(always)]
unsafe fn write_then_sum<V: Lanes, W: Step<V, 0>, T: Step<V, S>, const S: usize>(
    n_cols: usize,
    write: &W,
    next: Option<&T>,
) -> [f32; S] {
    let n_vec = n_cols / V::N;
    if n_cols >= FUSE_COLS {
        return vector_sums::<V, S>(n_vec, &WriteAndSum(write, next));
    }
    for i in 0..n_vec {
        write.step(&mut [], i * V::N);
    }
    match next {
        Some(t) => vector_sums::<V, S>(n_vec, t),
        None => [0.; S],
    }
}

/// Rows of `alpha.len()` elements: `dst = (x - mean) * rstd * alpha + beta`.
#[inline(always)]
unsafe fn fwd_rows<V: Lanes, E: Elem>(
    xs: &[E],
    (alpha, beta): (&[f32], &[f32]),
    eps: f32,
    dst: &mut [MaybeUninit<E>],
) {
    let n_cols = alpha.len();
    let mut rows = xs.chunks_exact(n_cols).peekable();
    let mut sums = match rows.peek() {
        Some(&x) => {
            let t = FwdTerms::new(x);
            t.with_tail::<V>(vector_sums::<V, 2>(n_cols / V::N, &t))
        }
        None => return,
    };
    for dst in dst.chunks_exact_mut(n_cols) {
        let x = rows.next().expect("as many rows as outputs");
        let stats = FwdTerms::new(x).stats::<V>(sums, eps);
        let y = dst.as_mut_ptr() as *mut E;
        let write = FwdWrite {
            x,
            affine: (alpha, beta),
            stats,
            y,
        };
        let next = rows.peek().map(|&x| FwdTerms::new(x));
        sums = write_then_sum::<V, _, _, 2>(n_cols, &write, next.as_ref());
        if let Some(next) = next {
            sums = next.with_tail::<V>(sums);
        }
        for i in n_cols / V::N * V::N..n_cols {
            *y.add(i) = E::from_f32(stats.xhat1(x[i].to_f32()).mul_add(alpha[i], beta[i]));
        }
    }
}

/// The backward's `dx` of a row: `dx = (g - mean(g) - xhat * mean(g * xhat)) * rstd`.
struct BwdDx<'a, E> {
    row: &'a BwdTerms<'a, E>,
    stats: RowStats,
    mean_g: f32,
    mean_gx: f32,
    dx: *mut E,
}

impl<'a, E: Elem> BwdDx<'a, E> {
    /// `dx` of `row` into `dx`, from its statistics, `mean(g)` and `mean(g * xhat)`.
    #[inline(always)]
    fn new(row: &'a BwdTerms<'a, E>, stats: (RowStats, f32, f32), dx: *mut E) -> Self {
        let (stats, mean_g, mean_gx) = stats;
        Self {
            row,
            stats,
            mean_g,
            mean_gx,
            dx,
        }
    }

    /// Stores `dx` for the vector at `o`; gives its `dy` and `xhat`, the terms of `dalpha`
    /// and `dbeta`.
    #[inline(always)]
    unsafe fn store<V: Lanes>(&self, o: usize) -> (V, V) {
        let BwdTerms { x, dy, alpha, .. } = *self.row;
        let (dy, xhat): (V, V) = (load(dy, o), self.stats.xhat(load(x, o)));
        let g = dy.mul(load(alpha, o)).sub(V::splat(self.mean_g));
        let dx = g.sub(xhat.mul(V::splat(self.mean_gx)));
        dx.mul(V::splat(self.stats.rstd)).store(self.dx.add(o));
        (dy, xhat)
    }
}

/// The backward's outputs of a row: its `dx`, and its terms added to `dalpha` and `dbeta`.
struct BwdWrite<'a, E> {
    dx: BwdDx<'a, E>,
    dalpha: *mut f32,
    dbeta: *mut f32,
}

impl<V: Lanes, E: Elem> Step<V, 0> for BwdWrite<'_, E> {
    #[inline(always)]
    unsafe fn step(&self, _: &mut [V; 0], o: usize) {
        let (dy, xhat): (V, V) = self.dx.store(o);
        let (da, db) = (self.dalpha.add(o), self.dbeta.add(o));
        dy.mul_add(xhat, V::load(da)).store(da);
        dy.add(V::load(db)).store(db);
    }
}

/// Rows of `alpha.len()` elements: writes `dx` and adds the rows' terms to `dalpha`, `dbeta`.
#[inline(always)]
unsafe fn bwd_rows<V: Lanes, E: Elem>(
    (xs, dys): (&[E], &[E]),
    alpha: &[f32],
    eps: f32,
    dxs: &mut [MaybeUninit<E>],
    (dalpha, dbeta): (&mut [f32], &mut [f32]),
) {
    let n_cols = alpha.len();
    let rows = xs.chunks_exact(n_cols).zip(dys.chunks_exact(n_cols));
    let rows = rows.map(|(x, dy)| BwdTerms {
        x,
        dy,
        alpha,
        shift: x[0].to_f32(),
    });
    let mut rows = rows.peekable();
    let mut sums = match rows.peek() {
        Some(row) => row.with_tail::<V>(vector_sums::<V, 4>(n_cols / V::N, row)),
        None => return,
    };
    let (da, db) = (dalpha.as_mut_ptr(), dbeta.as_mut_ptr());
    for dx in dxs.chunks_exact_mut(n_cols) {
        let row = rows.next().expect("as many rows as outputs");
        let (stats, mean_g, mean_gx) = row.stats::<V>(sums, eps);
        let dx = dx.as_mut_ptr() as *mut E;
        let write = BwdWrite {
            dx: BwdDx {
                row: &row,
                stats,
                mean_g,
                mean_gx,
                dx,
            },
            dalpha: da,
            dbeta: db,
        };
        let next = rows.peek();
        sums = write_then_sum::<V, _, _, 4>(n_cols, &write, next);
        if let Some(next) = next {
            sums = next.with_tail::<V>(sums);
        }
        let BwdTerms { x, dy, .. } = row;
        for i in n_cols / V::N * V::N..n_cols {
            let (xhat, dy) = (stats.xhat1(x[i].to_f32()), dy[i].to_f32());
            *dx.add(i) = E::from_f32((dy * alpha[i] - mean_g - xhat * mean_gx) * stats.rstd);
            *da.add(i) = dy.mul_add(xhat, *da.add(i));
            *db.add(i) += dy;
        }
    }
}

/// A row's `dx` terms added to `dalpha` and `dbeta` held in registers (`bwd_narrow_rows`).
#[inline(always)]
unsafe fn add_narrow<V: Lanes, E: Elem, const K: usize>(
    dx: &BwdDx<'_, E>,
    (da, db): (&mut [V; K], &mut [V; K]),
) {
    for k in 0..K {
        let (dy, xhat): (V, V) = dx.store(k * V::N);
        da[k] = dy.mul_add(xhat, da[k]);
        db[k] = dy.add(db[k]);
    }
}

/// Rows of `K` whole vectors, as `bwd_rows`: `dalpha` and `dbeta` stay in registers over all
/// the rows instead of being loaded and stored with each row's vectors. The same sums in the
/// same order as `bwd_rows`, so the same bits.
#[inline(always)]
unsafe fn bwd_narrow_rows<V: Lanes, E: Elem, const K: usize>(
    (xs, dys): (&[E], &[E]),
    alpha: &[f32],
    eps: f32,
    dxs: &mut [MaybeUninit<E>],
    (dalpha, dbeta): (&mut [f32], &mut [f32]),
) {
    let n_cols = K * V::N;
    debug_assert_eq!(alpha.len(), n_cols);
    let (mut da, mut db) = ([V::splat(0.); K], [V::splat(0.); K]);
    for k in 0..K {
        da[k] = load(dalpha, k * V::N);
        db[k] = load(dbeta, k * V::N);
    }
    let rows = xs.chunks_exact(n_cols).zip(dys.chunks_exact(n_cols));
    for ((x, dy), dx) in rows.zip(dxs.chunks_exact_mut(n_cols)) {
        let row = BwdTerms {
            x,
            dy,
            alpha,
            shift: x[0].to_f32(),
        };
        let stats = row.stats::<V>(vector_sums::<V, 4>(K, &row), eps);
        let dx = BwdDx::new(&row, stats, dx.as_mut_ptr() as *mut E);
        add_narrow::<V, E, K>(&dx, (&mut da, &mut db));
    }
    for k in 0..K {
        da[k].store(dalpha.as_mut_ptr().add(k * V::N));
        db[k].store(dbeta.as_mut_ptr().add(k * V::N));
    }
}

/// `bwd_rows`, or `bwd_narrow_rows` for rows of one to four whole vectors.
#[inline(always)]
unsafe fn bwd_any_rows<V: Lanes, E: Elem>(
    rows: (&[E], &[E]),
    alpha: &[f32],
    eps: f32,
    dxs: &mut [MaybeUninit<E>],
    dparams: (&mut [f32], &mut [f32]),
) {
    let n_cols = alpha.len();
    if !n_cols.is_multiple_of(V::N) {
        return bwd_rows::<V, E>(rows, alpha, eps, dxs, dparams);
    }
    match n_cols / V::N {
        1 => bwd_narrow_rows::<V, E, 1>(rows, alpha, eps, dxs, dparams),
        2 => bwd_narrow_rows::<V, E, 2>(rows, alpha, eps, dxs, dparams),
        3 => bwd_narrow_rows::<V, E, 3>(rows, alpha, eps, dxs, dparams),
        4 => bwd_narrow_rows::<V, E, 4>(rows, alpha, eps, dxs, dparams),
        _ => bwd_rows::<V, E>(rows, alpha, eps, dxs, dparams),
    }
}

#[target_feature(enable = "avx512f")]
unsafe fn fwd_rows_avx512<E: Elem>(
    xs: &[E],
    affine: (&[f32], &[f32]),
    eps: f32,
    dst: &mut [MaybeUninit<E>],
) {
    fwd_rows::<__m512, E>(xs, affine, eps, dst)
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn fwd_rows_avx2<E: Elem>(
    xs: &[E],
    affine: (&[f32], &[f32]),
    eps: f32,
    dst: &mut [MaybeUninit<E>],
) {
    fwd_rows::<__m256, E>(xs, affine, eps, dst)
}

#[target_feature(enable = "avx512f")]
unsafe fn bwd_rows_avx512<E: Elem>(
    rows: (&[E], &[E]),
    alpha: &[f32],
    eps: f32,
    dxs: &mut [MaybeUninit<E>],
    dparams: (&mut [f32], &mut [f32]),
) {
    bwd_any_rows::<__m512, E>(rows, alpha, eps, dxs, dparams)
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn bwd_rows_avx2<E: Elem>(
    rows: (&[E], &[E]),
    alpha: &[f32],
    eps: f32,
    dxs: &mut [MaybeUninit<E>],
    dparams: (&mut [f32], &mut [f32]),
) {
    bwd_any_rows::<__m256, E>(rows, alpha, eps, dxs, dparams)
}

/// The forward of the rows of `xs` (whole rows of `alpha.len()` elements) into `dst`, the
/// same length: every slot of `dst` is written.
pub(crate) fn fwd<E: Elem>(
    isa: Isa,
    xs: &[E],
    affine: (&[f32], &[f32]),
    eps: f32,
    dst: &mut [MaybeUninit<E>],
) {
    let n_cols = affine.0.len();
    assert!(n_cols > 0 && affine.1.len() == n_cols && xs.len().is_multiple_of(n_cols));
    assert_eq!(xs.len(), dst.len());
    // Safety: the slices' lengths are checked above, and `isa` was detected on this cpu.
    unsafe {
        match isa.0 {
            Kind::Avx512 => fwd_rows_avx512(xs, affine, eps, dst),
            Kind::Avx2 => fwd_rows_avx2(xs, affine, eps, dst),
        }
    }
}

/// The backward of the rows of `xs` and `dys` (whole rows of `alpha.len()` elements): writes
/// every slot of `dxs` and adds the rows' terms to `dalpha` and `dbeta`, in row order.
pub(crate) fn bwd<E: Elem>(
    isa: Isa,
    rows: (&[E], &[E]),
    alpha: &[f32],
    eps: f32,
    dxs: &mut [MaybeUninit<E>],
    dparams: (&mut [f32], &mut [f32]),
) {
    let n_cols = alpha.len();
    assert!(n_cols > 0 && rows.0.len().is_multiple_of(n_cols));
    assert!(rows.0.len() == rows.1.len() && rows.0.len() == dxs.len());
    assert!(dparams.0.len() == n_cols && dparams.1.len() == n_cols);
    // Safety: the slices' lengths are checked above, and `isa` was detected on this cpu.
    unsafe {
        match isa.0 {
            Kind::Avx512 => bwd_rows_avx512(rows, alpha, eps, dxs, dparams),
            Kind::Avx2 => bwd_rows_avx2(rows, alpha, eps, dxs, dparams),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// Rows as the widths of the tests need them: a row of `n` values around its own mean, and
    /// with `far` its first element far from the others (the row is summed again around its
    /// mean).
    fn rows(rng: &mut StdRng, n_rows: usize, n: usize, far: bool) -> Vec<f32> {
        let mut xs = vec![];
        for r in 0..n_rows {
            let (mean, std) = (rng.random_range(-2f32..2.), rng.random_range(0.5f32..2.));
            let start = xs.len();
            xs.extend((0..n).map(|_| mean + std * rng.random_range(-1.7f32..1.7)));
            if far && r % 2 == 0 {
                xs[start] = 1e3;
            }
        }
        xs
    }

    /// The statistics of a row in f64, two passes.
    fn stats(x: &[f32], eps: f64) -> (Vec<f64>, f64) {
        let n = x.len() as f64;
        let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
        let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
        let rstd = 1. / (var + eps).sqrt();
        (x.iter().map(|&v| (v as f64 - mean) * rstd).collect(), rstd)
    }

    /// `|got - want|` relative to `max(1, max |want|)`, at most `tol`.
    fn check(what: &str, got: &[f32], want: &[f64], tol: f64) {
        assert_eq!(got.len(), want.len(), "{what}");
        let scale = want.iter().fold(1f64, |m, w| m.max(w.abs()));
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            let err = (g as f64 - w).abs() / scale;
            assert!(
                err <= tol,
                "{what}[{i}]: {g} against {w} (error {err:e} > {tol:e})"
            );
        }
    }

    // Widths around the vectors of both instruction sets (whole vectors, a tail, one lane
    // short of a vector), short rows of one odd vector and a wide row.
    const WIDTHS: [usize; 11] = [8, 15, 16, 17, 31, 33, 64, 333, 1024, 4097, 65536];
    const EPS: f32 = 1e-5;

    fn tol(n: usize) -> f64 {
        // As the vendored tests' f32 tolerance: ~80 ulps plus a random walk over the row sums.
        1e-5 + 2. * f32::EPSILON as f64 * (n as f64).sqrt()
    }

    fn uninit(len: usize) -> Vec<MaybeUninit<f32>> {
        // NaN in every slot, so that a slot the kernels leave unwritten fails the checks.
        vec![MaybeUninit::new(f32::NAN); len]
    }

    fn init(v: Vec<MaybeUninit<f32>>) -> Vec<f32> {
        // Safety: every slot was initialized by `uninit`.
        v.into_iter().map(|v| unsafe { v.assume_init() }).collect()
    }

    #[test]
    fn fwd_matches_f64() {
        let mut rng = StdRng::seed_from_u64(0);
        for isa in Isa::all() {
            for n in WIDTHS.into_iter().filter(|&n| Isa::detect(n).is_some()) {
                for far in [false, true] {
                    let n_rows = 5;
                    let xs = rows(&mut rng, n_rows, n, far);
                    let alpha: Vec<f32> = (0..n).map(|_| rng.random_range(-1.5..1.5)).collect();
                    let beta: Vec<f32> = (0..n).map(|_| rng.random_range(-1f32..1.)).collect();
                    let mut dst = uninit(xs.len());
                    fwd(isa, &xs, (&alpha, &beta), EPS, &mut dst);
                    let mut want = vec![];
                    for x in xs.chunks(n) {
                        let (xhat, _) = stats(x, EPS as f64);
                        let y = xhat.iter().zip(alpha.iter().zip(&beta));
                        want.extend(y.map(|(xh, (&a, &b))| xh * a as f64 + b as f64));
                    }
                    check(
                        &format!("{isa:?} y {n} far {far}"),
                        &init(dst),
                        &want,
                        tol(n),
                    );
                }
            }
        }
    }

    #[test]
    fn bwd_matches_f64() {
        let mut rng = StdRng::seed_from_u64(1);
        for isa in Isa::all() {
            for n in WIDTHS.into_iter().filter(|&n| Isa::detect(n).is_some()) {
                for far in [false, true] {
                    let n_rows = 5;
                    let xs = rows(&mut rng, n_rows, n, far);
                    // dy and alpha with means away from 0: with `mean(g)` large, a far row's
                    // `mean(g * xhat)` from the one-pass sums is off by more than the tolerance.
                    let dys: Vec<f32> = (0..xs.len()).map(|_| rng.random_range(0.0..2.)).collect();
                    let alpha: Vec<f32> = (0..n).map(|_| rng.random_range(-0.5..1.5)).collect();
                    let mut dxs = uninit(xs.len());
                    // Sums already in the outputs are added to.
                    let (mut dalpha, mut dbeta) = (vec![0.5f32; n], vec![-0.25f32; n]);
                    let dparams = (dalpha.as_mut_slice(), dbeta.as_mut_slice());
                    bwd(isa, (&xs, &dys), &alpha, EPS, &mut dxs, dparams);
                    let (mut want_dx, mut want_da, mut want_db) =
                        (vec![], vec![0.5f64; n], vec![-0.25f64; n]);
                    for (x, dy) in xs.chunks(n).zip(dys.chunks(n)) {
                        let (xhat, rstd) = stats(x, EPS as f64);
                        let g: Vec<f64> = dy
                            .iter()
                            .zip(&alpha)
                            .map(|(&d, &a)| (d * a) as f64)
                            .collect();
                        let mean_g = g.iter().sum::<f64>() / n as f64;
                        let mean_gx =
                            g.iter().zip(&xhat).map(|(g, x)| g * x).sum::<f64>() / n as f64;
                        let dx = g
                            .iter()
                            .zip(&xhat)
                            .map(|(g, x)| (g - mean_g - x * mean_gx) * rstd);
                        want_dx.extend(dx);
                        for i in 0..n {
                            want_da[i] += dy[i] as f64 * xhat[i];
                            want_db[i] += dy[i] as f64;
                        }
                    }
                    let what = format!("{isa:?} {n} far {far}");
                    // dx's scale is rstd times the row's: relative to rows with a std of ~1.
                    check(&format!("dx {what}"), &init(dxs), &want_dx, tol(n));
                    check(
                        &format!("dalpha {what}"),
                        &dalpha,
                        &want_da,
                        tol(n * n_rows),
                    );
                    check(&format!("dbeta {what}"), &dbeta, &want_db, tol(n * n_rows));
                }
            }
        }
    }

    /// Loads and stores of `E` through each instruction set's vectors against `half`'s scalar
    /// conversions, bit for bit.
    fn check_conversions<E: Elem + std::fmt::Debug>(bits: fn(u16) -> E) {
        fn both<V: Lanes, E: Elem>(src: &[E], vals: &[f32], load: &mut [f32], store: &mut [E]) {
            // Safety: the callers run this with the instruction set of `V` detected, and the
            // lengths are whole vectors.
            for o in (0..src.len()).step_by(V::N) {
                unsafe { V::load(src.as_ptr().add(o)).store(load.as_mut_ptr().add(o)) }
            }
            for o in (0..vals.len()).step_by(V::N) {
                unsafe { V::load(vals.as_ptr().add(o)).store(store.as_mut_ptr().add(o)) }
            }
        }
        #[target_feature(enable = "avx512f")]
        unsafe fn both_avx512<E: Elem>(s: &[E], v: &[f32], l: &mut [f32], st: &mut [E]) {
            both::<__m512, E>(s, v, l, st)
        }
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn both_avx2<E: Elem>(s: &[E], v: &[f32], l: &mut [f32], st: &mut [E]) {
            both::<__m256, E>(s, v, l, st)
        }
        // Every 16-bit pattern to load; to store, f32 values around every rounding case: each
        // 16-bit pattern as the upper half with lower halves at, around and past a tie, and
        // random ones (NaNs with payloads, infinities, subnormals, overflows among them).
        let src: Vec<E> = (0..=u16::MAX).map(bits).collect();
        let mut rng = StdRng::seed_from_u64(2);
        let mut vals = vec![];
        for hi in 0..=u16::MAX as u32 {
            for lo in [0, 1, 0x7fff, 0x8000, 0x8001, 0xffff] {
                vals.push(f32::from_bits(hi << 16 | lo));
            }
            vals.push(f32::from_bits(rng.random()));
            vals.push(rng.random_range(-7e4f32..7e4) * rng.random_range(0f32..1.).powi(8));
        }
        for isa in Isa::all() {
            let (mut load, mut store) = (vec![0f32; src.len()], vec![bits(0); vals.len()]);
            // Safety: `isa` was detected on this cpu.
            unsafe {
                match isa.0 {
                    Kind::Avx512 => both_avx512(&src, &vals, &mut load, &mut store),
                    Kind::Avx2 => both_avx2(&src, &vals, &mut load, &mut store),
                }
            }
            // A signaling NaN is loaded as it is (`half` sets its quiet bit): a NaN all the same.
            for (&e, &l) in src.iter().zip(&load) {
                let want = e.to_f32();
                assert!(
                    want.to_bits() == l.to_bits() || want.is_nan() && l.is_nan(),
                    "{isa:?} load {e:?}: {l:e}"
                );
            }
            for (&v, &s) in vals.iter().zip(&store) {
                let want = E::from_f32(v);
                assert_eq!(
                    want.to_f32().to_bits(),
                    s.to_f32().to_bits(),
                    "{isa:?} store {:#x}",
                    v.to_bits()
                );
            }
        }
    }

    #[test]
    fn f16_conversions_match_half() {
        check_conversions(f16::from_bits)
    }

    #[test]
    fn bf16_conversions_match_half() {
        check_conversions(bf16::from_bits)
    }

    /// The 16-bit rows give what their f32 rows give, rounded once: they run the same f32 loops
    /// on the converted elements.
    fn check_16bit_rows<E: Elem + std::fmt::Debug>() {
        let mut rng = StdRng::seed_from_u64(3);
        let bits = |v: &[E]| v.iter().map(|e| e.to_f32().to_bits()).collect::<Vec<_>>();
        let rounded = |v| init(v).into_iter().map(E::from_f32).collect::<Vec<_>>();
        for isa in Isa::all() {
            for n in WIDTHS.into_iter().filter(|&n| Isa::detect(n).is_some()) {
                let (n_rows, far) = (4, n % 2 == 1);
                let xs = rows(&mut rng, n_rows, n, far);
                let xs: Vec<E> = xs.into_iter().map(E::from_f32).collect();
                let dys: Vec<E> = (0..xs.len())
                    .map(|_| E::from_f32(rng.random_range(-1f32..2.)))
                    .collect();
                let alpha: Vec<f32> = (0..n).map(|_| rng.random_range(-1.5..1.5)).collect();
                let beta: Vec<f32> = (0..n).map(|_| rng.random_range(-1f32..1.)).collect();
                let (xs32, dys32): (Vec<f32>, Vec<f32>) = (
                    xs.iter().map(|e| e.to_f32()).collect(),
                    dys.iter().map(|e| e.to_f32()).collect(),
                );
                let what = format!("{isa:?} {n}");

                let mut y = vec![MaybeUninit::new(E::from_f32(f32::NAN)); xs.len()];
                fwd(isa, &xs, (&alpha, &beta), EPS, &mut y);
                let mut y32 = uninit(xs.len());
                fwd(isa, &xs32, (&alpha, &beta), EPS, &mut y32);
                let y: Vec<E> = y.into_iter().map(|v| unsafe { v.assume_init() }).collect();
                assert_eq!(bits(&y), bits(&rounded(y32)), "y {what}");

                let mut dx = vec![MaybeUninit::new(E::from_f32(f32::NAN)); xs.len()];
                let (mut da, mut db) = (vec![0.5f32; n], vec![-0.25f32; n]);
                bwd(isa, (&xs, &dys), &alpha, EPS, &mut dx, (&mut da, &mut db));
                let mut dx32 = uninit(xs.len());
                let (mut da32, mut db32) = (vec![0.5f32; n], vec![-0.25f32; n]);
                let dparams = (da32.as_mut_slice(), db32.as_mut_slice());
                bwd(isa, (&xs32, &dys32), &alpha, EPS, &mut dx32, dparams);
                let dx: Vec<E> = dx.into_iter().map(|v| unsafe { v.assume_init() }).collect();
                assert_eq!(bits(&dx), bits(&rounded(dx32)), "dx {what}");
                assert_eq!(da, da32, "dalpha {what}");
                assert_eq!(db, db32, "dbeta {what}");
            }
        }
    }

    #[test]
    fn f16_rows_are_f32_rows_rounded() {
        check_16bit_rows::<f16>()
    }

    #[test]
    fn bf16_rows_are_f32_rows_rounded() {
        check_16bit_rows::<bf16>()
    }

    /// The narrow rows (`dalpha`, `dbeta` in registers) give what `bwd_rows` gives, bit for bit.
    #[test]
    fn narrow_rows_are_rows() {
        #[target_feature(enable = "avx512f")]
        unsafe fn rows_avx512(
            r: (&[f32], &[f32]),
            a: &[f32],
            dx: &mut [MaybeUninit<f32>],
            p: (&mut [f32], &mut [f32]),
        ) {
            bwd_rows::<__m512, f32>(r, a, EPS, dx, p)
        }
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn rows_avx2(
            r: (&[f32], &[f32]),
            a: &[f32],
            dx: &mut [MaybeUninit<f32>],
            p: (&mut [f32], &mut [f32]),
        ) {
            bwd_rows::<__m256, f32>(r, a, EPS, dx, p)
        }
        let mut rng = StdRng::seed_from_u64(4);
        for isa in Isa::all() {
            let lanes = match isa.0 {
                Kind::Avx512 => 16,
                Kind::Avx2 => 8,
            };
            for n in (1..=5).map(|k| k * lanes) {
                let n_rows = 7;
                let xs = rows(&mut rng, n_rows, n, true);
                let dys: Vec<f32> = (0..xs.len()).map(|_| rng.random_range(-1.0..2.)).collect();
                let alpha: Vec<f32> = (0..n).map(|_| rng.random_range(-0.5..1.5)).collect();
                let start: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.)).collect();
                let (mut dx, mut da, mut db) = (uninit(xs.len()), start.clone(), start.clone());
                bwd(isa, (&xs, &dys), &alpha, EPS, &mut dx, (&mut da, &mut db));
                let (mut want_dx, mut want_da, mut want_db) =
                    (uninit(xs.len()), start.clone(), start);
                let want_p = (want_da.as_mut_slice(), want_db.as_mut_slice());
                // Safety: `isa` was detected on this cpu, the lengths are whole rows.
                unsafe {
                    match isa.0 {
                        Kind::Avx512 => rows_avx512((&xs, &dys), &alpha, &mut want_dx, want_p),
                        Kind::Avx2 => rows_avx2((&xs, &dys), &alpha, &mut want_dx, want_p),
                    }
                }
                let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
                let what = format!("{isa:?} {n}");
                assert_eq!(bits(init(dx)), bits(init(want_dx)), "dx {what}");
                assert_eq!(bits(da), bits(want_da), "dalpha {what}");
                assert_eq!(bits(db), bits(want_db), "dbeta {what}");
            }
        }
    }

    #[test]
    fn short_rows_stay_portable() {
        assert_eq!(Isa::detect(7), None);
        assert!(Isa::all().into_iter().all(|isa| match isa {
            Isa(Kind::Avx512) => Isa::detect(16).is_some(),
            Isa(Kind::Avx2) => Isa::detect(8).is_some(),
        }));
    }
}
