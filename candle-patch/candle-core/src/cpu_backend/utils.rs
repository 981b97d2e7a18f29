/// Helper functions to write CPU kernels.
use crate::backend::BackendStorage;
use crate::{Error, Layout, Result, WithDType};

type C = super::CpuStorage;
pub trait Map1 {
    fn f<T: WithDType>(&self, vs: &[T], layout: &Layout) -> Result<Vec<T>>;

    fn map(&self, vs: &C, layout: &Layout) -> Result<C> {
        match vs {
            C::U8(vs) => Ok(C::U8(self.f(vs, layout)?)),
            C::U32(vs) => Ok(C::U32(self.f(vs, layout)?)),
            C::I64(vs) => Ok(C::I64(self.f(vs, layout)?)),
            C::BF16(vs) => Ok(C::BF16(self.f(vs, layout)?)),
            C::F16(vs) => Ok(C::F16(self.f(vs, layout)?)),
            C::F32(vs) => Ok(C::F32(self.f(vs, layout)?)),
            C::F64(vs) => Ok(C::F64(self.f(vs, layout)?)),
            C::F8E4M3(vs) => Ok(C::F8E4M3(self.f(vs, layout)?)),
        }
    }
}

pub trait Map1Any {
    fn f<T: WithDType, W: Fn(Vec<T>) -> C>(&self, vs: &[T], layout: &Layout, wrap: W) -> Result<C>;

    fn map(&self, vs: &C, layout: &Layout) -> Result<C> {
        match vs {
            C::U8(vs) => Ok(self.f(vs, layout, C::U8)?),
            C::U32(vs) => Ok(self.f(vs, layout, C::U32)?),
            C::I64(vs) => Ok(self.f(vs, layout, C::I64)?),
            C::BF16(vs) => Ok(self.f(vs, layout, C::BF16)?),
            C::F16(vs) => Ok(self.f(vs, layout, C::F16)?),
            C::F32(vs) => Ok(self.f(vs, layout, C::F32)?),
            C::F64(vs) => Ok(self.f(vs, layout, C::F64)?),
            C::F8E4M3(vs) => Ok(self.f(vs, layout, C::F8E4M3)?),
        }
    }
}

pub trait Map2 {
    const OP: &'static str;
    fn f<T: WithDType>(&self, v1: &[T], l1: &Layout, v2: &[T], l2: &Layout) -> Result<Vec<T>>;

    fn map(&self, v1: &C, l1: &Layout, v2: &C, l2: &Layout) -> Result<C> {
        match (v1, v2) {
            (C::U8(v1), C::U8(v2)) => Ok(C::U8(self.f(v1, l1, v2, l2)?)),
            (C::U32(v1), C::U32(v2)) => Ok(C::U32(self.f(v1, l1, v2, l2)?)),
            (C::I64(v1), C::I64(v2)) => Ok(C::I64(self.f(v1, l1, v2, l2)?)),
            (C::BF16(v1), C::BF16(v2)) => Ok(C::BF16(self.f(v1, l1, v2, l2)?)),
            (C::F16(v1), C::F16(v2)) => Ok(C::F16(self.f(v1, l1, v2, l2)?)),
            (C::F32(v1), C::F32(v2)) => Ok(C::F32(self.f(v1, l1, v2, l2)?)),
            (C::F64(v1), C::F64(v2)) => Ok(C::F64(self.f(v1, l1, v2, l2)?)),
            (C::F8E4M3(v1), C::F8E4M3(v2)) => Ok(C::F8E4M3(self.f(v1, l1, v2, l2)?)),
            _ => Err(Error::DTypeMismatchBinaryOp {
                lhs: v1.dtype(),
                rhs: v2.dtype(),
                op: Self::OP,
            }
            .bt()),
        }
    }
}

pub trait Map2InPlace {
    const OP: &'static str;
    fn f<T: WithDType>(&self, v1: &mut [T], l1: &Layout, v2: &[T], l2: &Layout) -> Result<()>;

    fn map(&self, v1: &mut C, l1: &Layout, v2: &C, l2: &Layout) -> Result<()> {
        match (v1, v2) {
            (C::U8(v1), C::U8(v2)) => self.f(v1, l1, v2, l2)?,
            (C::U32(v1), C::U32(v2)) => self.f(v1, l1, v2, l2)?,
            (C::I64(v1), C::I64(v2)) => self.f(v1, l1, v2, l2)?,
            (C::BF16(v1), C::BF16(v2)) => self.f(v1, l1, v2, l2)?,
            (C::F16(v1), C::F16(v2)) => self.f(v1, l1, v2, l2)?,
            (C::F32(v1), C::F32(v2)) => self.f(v1, l1, v2, l2)?,
            (C::F64(v1), C::F64(v2)) => self.f(v1, l1, v2, l2)?,
            (v1, v2) => Err(Error::DTypeMismatchBinaryOp {
                lhs: v1.dtype(),
                rhs: v2.dtype(),
                op: Self::OP,
            }
            .bt())?,
        };
        Ok(())
    }
}

pub trait Map2U8 {
    const OP: &'static str;
    fn f<T: WithDType>(&self, v1: &[T], l1: &Layout, v2: &[T], l2: &Layout) -> Result<Vec<u8>>;

    fn map(&self, v1: &C, l1: &Layout, v2: &C, l2: &Layout) -> Result<C> {
        match (v1, v2) {
            (C::U8(v1), C::U8(v2)) => Ok(C::U8(self.f(v1, l1, v2, l2)?)),
            (C::U32(v1), C::U32(v2)) => Ok(C::U8(self.f(v1, l1, v2, l2)?)),
            (C::I64(v1), C::I64(v2)) => Ok(C::U8(self.f(v1, l1, v2, l2)?)),
            (C::BF16(v1), C::BF16(v2)) => Ok(C::U8(self.f(v1, l1, v2, l2)?)),
            (C::F16(v1), C::F16(v2)) => Ok(C::U8(self.f(v1, l1, v2, l2)?)),
            (C::F32(v1), C::F32(v2)) => Ok(C::U8(self.f(v1, l1, v2, l2)?)),
            (C::F64(v1), C::F64(v2)) => Ok(C::U8(self.f(v1, l1, v2, l2)?)),
            (C::F8E4M3(v1), C::F8E4M3(v2)) => Ok(C::U8(self.f(v1, l1, v2, l2)?)),
            _ => Err(Error::DTypeMismatchBinaryOp {
                lhs: v1.dtype(),
                rhs: v2.dtype(),
                op: Self::OP,
            }
            .bt()),
        }
    }
}

/// `f(x, y)` over the contiguous `xs`, `y` running over `block` with each of its elements
/// repeated `rep` times in a row and the block repeated to the end: chunk by chunk, so that the
/// loops have no index arithmetic or branches per element and can be vectorized.
fn broadcast_block_map<T: Copy, U: Copy, F: FnMut(T, T) -> U>(
    xs: &[T],
    block: &[T],
    rep: usize,
    mut f: F,
) -> Vec<U> {
    let mut ys = Vec::with_capacity(xs.len());
    if xs.is_empty() {
        return ys;
    }
    if rep == 1 {
        for xs in xs.chunks(block.len()) {
            ys.extend(xs.iter().zip(block).map(|(&x, &y)| f(x, y)));
        }
    } else {
        for (xs, &y) in xs.chunks(rep).zip(block.iter().cycle()) {
            ys.extend(xs.iter().map(|&x| f(x, y)));
        }
    }
    ys
}

/// Elements from which `binary_map_par` and `const_set` split contiguous data over rayon's
/// pool, and the elements of a task: below, waking a worker costs about what the op does.
pub(crate) const PAR_MIN_ELEMS: usize = 1 << 16;
pub(crate) const PAR_TASK_ELEMS: usize = 1 << 14;

/// `binary_map`, with contiguous operands of at least `PAR_MIN_ELEMS` elements split in blocks
/// over rayon's pool. Each element only depends on its operands, so the result does not depend
/// on the number of threads.
pub fn binary_map_par<T, U, F>(lhs_l: &Layout, rhs_l: &Layout, lhs: &[T], rhs: &[T], f: F) -> Vec<U>
where
    T: Copy + Sync,
    U: Copy + Send,
    F: Fn(T, T) -> U + Sync,
{
    use rayon::prelude::*;
    match (lhs_l.contiguous_offsets(), rhs_l.contiguous_offsets()) {
        (Some((o_l1, o_l2)), Some((o_r1, o_r2))) if o_l2 - o_l1 >= PAR_MIN_ELEMS => {
            let (lhs, rhs) = (&lhs[o_l1..o_l2], &rhs[o_r1..o_r2]);
            let mut dst = Vec::with_capacity(lhs.len());
            let blocks = lhs
                .par_chunks(PAR_TASK_ELEMS)
                .zip(rhs.par_chunks(PAR_TASK_ELEMS));
            let blocks = blocks.zip(dst.spare_capacity_mut().par_chunks_mut(PAR_TASK_ELEMS));
            blocks.for_each(|((lhs, rhs), dst)| {
                for ((d, &l), &r) in dst.iter_mut().zip(lhs).zip(rhs) {
                    d.write(f(l, r));
                }
            });
            // Safety: the blocks cover `lhs.len()` elements of `dst`, each one written above.
            unsafe { dst.set_len(lhs.len()) };
            dst
        }
        _ => binary_map(lhs_l, rhs_l, lhs, rhs, f),
    }
}

/// `ys[i] = f(xs1[i], xs2[i])` for f16 slices of one length, computed in f32 eight elements at a
/// time with F16C where the cpu has it, else in blocks with `half`'s slice conversions: `f16`'s
/// operators convert each operand and the result through functions that check the cpu every
/// time. Each result is the f32 result rounded to f16, as those operators give. Long slices are
/// split in blocks over rayon's pool, as in `binary_map_par`.
pub(crate) fn binary_f16_via_f32<F>(
    xs1: &[half::f16],
    xs2: &[half::f16],
    ys: &mut [half::f16],
    f: F,
) where
    F: Fn(f32, f32) -> f32 + Sync,
{
    use rayon::prelude::*;
    assert!(xs1.len() == ys.len() && xs2.len() == ys.len());
    let blocks = |xs1: &[half::f16], xs2: &[half::f16], ys: &mut [half::f16]| {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("f16c") {
            // Safety: the cpu has F16C (and with it AVX), the slices have one length.
            return unsafe { f16_blocks_f16c(xs1, xs2, ys, &f) };
        }
        f16_blocks(xs1, xs2, ys, &f)
    };
    if ys.len() >= PAR_MIN_ELEMS {
        let tasks = xs1
            .par_chunks(PAR_TASK_ELEMS)
            .zip(xs2.par_chunks(PAR_TASK_ELEMS));
        let tasks = tasks.zip(ys.par_chunks_mut(PAR_TASK_ELEMS));
        tasks.for_each(|((xs1, xs2), ys)| blocks(xs1, xs2, ys));
    } else {
        blocks(xs1, xs2, ys)
    }
}

/// `binary_f16_via_f32`'s blocks with `half`'s slice conversions.
fn f16_blocks<F: Fn(f32, f32) -> f32>(
    xs1: &[half::f16],
    xs2: &[half::f16],
    ys: &mut [half::f16],
    f: &F,
) {
    use half::slice::HalfFloatSliceExt;
    const BLOCK: usize = 256;
    let (mut v1, mut v2) = ([0f32; BLOCK], [0f32; BLOCK]);
    let slices = xs1.chunks(BLOCK).zip(xs2.chunks(BLOCK));
    for ((xs1, xs2), ys) in slices.zip(ys.chunks_mut(BLOCK)) {
        let (v1, v2) = (&mut v1[..ys.len()], &mut v2[..ys.len()]);
        xs1.convert_to_f32_slice(v1);
        xs2.convert_to_f32_slice(v2);
        for (v1, &v2) in v1.iter_mut().zip(v2.iter()) {
            *v1 = f(*v1, v2);
        }
        ys.convert_from_f32_slice(v1);
    }
}

/// `binary_f16_via_f32`'s blocks with F16C's conversions in the loop, eight elements at a time:
/// `half`'s slice conversions make a call per eight elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f16_blocks_f16c<F: Fn(f32, f32) -> f32>(
    xs1: &[half::f16],
    xs2: &[half::f16],
    ys: &mut [half::f16],
    f: &F,
) {
    use std::arch::x86_64::*;
    let n = ys.len() / 8 * 8;
    for i in (0..n).step_by(8) {
        let load = |xs: &[half::f16]| _mm256_cvtph_ps(_mm_loadu_si128(xs.as_ptr().add(i).cast()));
        let (mut v1, mut v2) = ([0f32; 8], [0f32; 8]);
        _mm256_storeu_ps(v1.as_mut_ptr(), load(xs1));
        _mm256_storeu_ps(v2.as_mut_ptr(), load(xs2));
        for (v1, v2) in v1.iter_mut().zip(v2) {
            *v1 = f(*v1, v2);
        }
        let y = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(v1.as_ptr()));
        _mm_storeu_si128(ys.as_mut_ptr().add(i).cast(), y);
    }
    for i in n..ys.len() {
        ys[i] = half::f16::from_f32(f(xs1[i].to_f32(), xs2[i].to_f32()));
    }
}

pub fn binary_map<T: Copy, U: Copy, F: FnMut(T, T) -> U>(
    lhs_l: &Layout,
    rhs_l: &Layout,
    lhs: &[T],
    rhs: &[T],
    mut f: F,
) -> Vec<U> {
    match (lhs_l.contiguous_offsets(), rhs_l.contiguous_offsets()) {
        (Some((o_l1, o_l2)), Some((o_r1, o_r2))) => lhs[o_l1..o_l2]
            .iter()
            .zip(rhs[o_r1..o_r2].iter())
            .map(|(&l, &r)| f(l, r))
            .collect(),
        (Some((o_l1, o_l2)), None) => {
            // TODO: Maybe we want to avoid going through the layout twice.
            match rhs_l.offsets_b() {
                Some(ob) => broadcast_block_map(
                    &lhs[o_l1..o_l2],
                    &rhs[ob.start..ob.start + ob.len],
                    ob.right_broadcast,
                    f,
                ),
                None => lhs_l
                    .strided_index()
                    .zip(rhs_l.strided_index())
                    .map(|(lhs_i, rhs_i)| f(lhs[lhs_i], rhs[rhs_i]))
                    .collect(),
            }
        }
        (None, Some((o_r1, o_r2))) => {
            // TODO: Maybe we want to avoid going through the layout twice.
            match lhs_l.offsets_b() {
                Some(ob) => {
                    let lhs = &lhs[ob.start..ob.start + ob.len];
                    broadcast_block_map(&rhs[o_r1..o_r2], lhs, ob.right_broadcast, |r, l| f(l, r))
                }
                None => lhs_l
                    .strided_index()
                    .zip(rhs_l.strided_index())
                    .map(|(lhs_i, rhs_i)| f(lhs[lhs_i], rhs[rhs_i]))
                    .collect(),
            }
        }
        _ => lhs_l
            .strided_index()
            .zip(rhs_l.strided_index())
            .map(|(lhs_i, rhs_i)| f(lhs[lhs_i], rhs[rhs_i]))
            .collect(),
    }
}

// Similar to binary_map but with vectorized variants.
pub fn binary_map_vec<T: Copy, F: FnMut(T, T) -> T, FV: FnMut(&[T], &[T], &mut [T])>(
    lhs_l: &Layout,
    rhs_l: &Layout,
    lhs: &[T],
    rhs: &[T],
    mut f: F,
    mut f_vec: FV,
) -> Vec<T> {
    let el_count = lhs_l.shape().elem_count();
    match (lhs_l.contiguous_offsets(), rhs_l.contiguous_offsets()) {
        (Some((o_l1, o_l2)), Some((o_r1, o_r2))) => {
            let mut ys: Vec<T> = Vec::with_capacity(el_count);
            let ys_to_set = ys.spare_capacity_mut();
            let ys_to_set = unsafe {
                std::mem::transmute::<&mut [std::mem::MaybeUninit<T>], &mut [T]>(ys_to_set)
            };
            f_vec(&lhs[o_l1..o_l2], &rhs[o_r1..o_r2], ys_to_set);
            // SAFETY: values are all set by f_vec.
            unsafe { ys.set_len(el_count) };
            ys
        }
        (Some((o_l1, o_l2)), None) => match rhs_l.offsets_b() {
            Some(ob) if ob.right_broadcast == 1 => {
                let rhs = &rhs[ob.start..ob.start + ob.len];
                let mut ys: Vec<T> = Vec::with_capacity(el_count);
                let ys_to_set = ys.spare_capacity_mut();
                let ys_to_set = unsafe {
                    std::mem::transmute::<&mut [std::mem::MaybeUninit<T>], &mut [T]>(ys_to_set)
                };
                let mut dst_i = 0;
                for src_i in (o_l1..o_l2).step_by(ob.len) {
                    f_vec(
                        &lhs[src_i..src_i + ob.len],
                        rhs,
                        &mut ys_to_set[dst_i..dst_i + ob.len],
                    );
                    dst_i += ob.len;
                }
                // SAFETY: values are all set by f_vec.
                unsafe { ys.set_len(el_count) };
                ys
            }
            Some(ob) => {
                let rhs = &rhs[ob.start..ob.start + ob.len];
                let mut ys = lhs[o_l1..o_l2].to_vec();
                for idx_l in 0..ob.left_broadcast {
                    let start = idx_l * ob.len * ob.right_broadcast;
                    for (i, &r) in rhs.iter().enumerate() {
                        let start = start + i * ob.right_broadcast;
                        for v in ys[start..start + ob.right_broadcast].iter_mut() {
                            *v = f(*v, r)
                        }
                    }
                }
                ys
            }
            None => lhs_l
                .strided_index()
                .zip(rhs_l.strided_index())
                .map(|(lhs_i, rhs_i)| f(lhs[lhs_i], rhs[rhs_i]))
                .collect(),
        },
        (None, Some((o_r1, o_r2))) => match lhs_l.offsets_b() {
            Some(ob) if ob.right_broadcast == 1 => {
                let lhs = &lhs[ob.start..ob.start + ob.len];
                let mut ys: Vec<T> = Vec::with_capacity(el_count);
                let ys_to_set = ys.spare_capacity_mut();
                let ys_to_set = unsafe {
                    std::mem::transmute::<&mut [std::mem::MaybeUninit<T>], &mut [T]>(ys_to_set)
                };
                let mut dst_i = 0;
                for src_i in (o_r1..o_r2).step_by(ob.len) {
                    f_vec(
                        lhs,
                        &rhs[src_i..src_i + ob.len],
                        &mut ys_to_set[dst_i..dst_i + ob.len],
                    );
                    dst_i += ob.len;
                }
                // SAFETY: values are all set by f_vec.
                unsafe { ys.set_len(el_count) };
                ys
            }
            Some(ob) => {
                let lhs = &lhs[ob.start..ob.start + ob.len];
                let mut ys = rhs[o_r1..o_r2].to_vec();
                for idx_l in 0..ob.left_broadcast {
                    let start = idx_l * ob.len * ob.right_broadcast;
                    for (i, &l) in lhs.iter().enumerate() {
                        let start = start + i * ob.right_broadcast;
                        for v in ys[start..start + ob.right_broadcast].iter_mut() {
                            *v = f(l, *v)
                        }
                    }
                }
                ys
            }
            None => lhs_l
                .strided_index()
                .zip(rhs_l.strided_index())
                .map(|(lhs_i, rhs_i)| f(lhs[lhs_i], rhs[rhs_i]))
                .collect(),
        },
        _ => lhs_l
            .strided_index()
            .zip(rhs_l.strided_index())
            .map(|(lhs_i, rhs_i)| f(lhs[lhs_i], rhs[rhs_i]))
            .collect(),
    }
}

pub fn unary_map<T: Copy, U: Copy, F: FnMut(T) -> U>(
    vs: &[T],
    layout: &Layout,
    mut f: F,
) -> Vec<U> {
    match layout.strided_blocks() {
        crate::StridedBlocks::SingleBlock { start_offset, len } => vs
            [start_offset..start_offset + len]
            .iter()
            .map(|&v| f(v))
            .collect(),
        crate::StridedBlocks::MultipleBlocks {
            block_start_index,
            block_len,
        } => {
            let mut result = Vec::with_capacity(layout.shape().elem_count());
            // Specialize the case where block_len is one to avoid the second loop.
            if block_len == 1 {
                for index in block_start_index {
                    let v = unsafe { vs.get_unchecked(index) };
                    result.push(f(*v))
                }
            } else {
                for index in block_start_index {
                    for offset in 0..block_len {
                        let v = unsafe { vs.get_unchecked(index + offset) };
                        result.push(f(*v))
                    }
                }
            }
            result
        }
    }
}

pub fn unary_map_vec<T: Copy, U: Copy, F: FnMut(T) -> U, FV: FnMut(&[T], &mut [U])>(
    vs: &[T],
    layout: &Layout,
    mut f: F,
    mut f_vec: FV,
) -> Vec<U> {
    match layout.strided_blocks() {
        crate::StridedBlocks::SingleBlock { start_offset, len } => {
            let mut ys: Vec<U> = Vec::with_capacity(len);
            let ys_to_set = ys.spare_capacity_mut();
            let ys_to_set = unsafe {
                std::mem::transmute::<&mut [std::mem::MaybeUninit<U>], &mut [U]>(ys_to_set)
            };
            f_vec(&vs[start_offset..start_offset + len], ys_to_set);
            // SAFETY: values are all set by f_vec.
            unsafe { ys.set_len(len) };
            ys
        }
        crate::StridedBlocks::MultipleBlocks {
            block_start_index,
            block_len,
        } => {
            let el_count = layout.shape().elem_count();
            // Specialize the case where block_len is one to avoid the second loop.
            if block_len == 1 {
                let mut result = Vec::with_capacity(el_count);
                for index in block_start_index {
                    let v = unsafe { vs.get_unchecked(index) };
                    result.push(f(*v))
                }
                result
            } else {
                let mut ys: Vec<U> = Vec::with_capacity(el_count);
                let ys_to_set = ys.spare_capacity_mut();
                let ys_to_set = unsafe {
                    std::mem::transmute::<&mut [std::mem::MaybeUninit<U>], &mut [U]>(ys_to_set)
                };
                let mut dst_index = 0;
                for src_index in block_start_index {
                    let vs = &vs[src_index..src_index + block_len];
                    let ys = &mut ys_to_set[dst_index..dst_index + block_len];
                    f_vec(vs, ys);
                    dst_index += block_len;
                }
                // SAFETY: values are all set by f_vec.
                unsafe { ys.set_len(el_count) };
                ys
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use half::f16;

    /// Both block loops against `f16`'s operators, bit for bit, on most f16 bit patterns
    /// (NaNs, infinities, subnormals among them) and a length with a tail past the vectors.
    #[test]
    fn f16_blocks_match_f16_ops() {
        let values = |seed: usize| -> Vec<f16> {
            (0..70001)
                .map(|i| f16::from_bits(((i * 7919 + seed * 104729) % 65536) as u16))
                .collect()
        };
        let (xs1, xs2) = (values(1), values(2));
        type Ops = (fn(f32, f32) -> f32, fn(f16, f16) -> f16);
        let ops: [Ops; 3] = [
            (|a, b| a + b, |a, b| a + b),
            (|a, b| a * b, |a, b| a * b),
            (|a, b| a / b, |a, b| a / b),
        ];
        for (i, (f, want)) in ops.into_iter().enumerate() {
            let mut ys = vec![f16::ZERO; xs1.len()];
            let check = |what: &str, ys: &[f16]| {
                for ((&a, &b), &y) in xs1.iter().zip(&xs2).zip(ys) {
                    let w = want(a, b);
                    assert!(
                        y.to_bits() == w.to_bits() || y.is_nan() && w.is_nan(),
                        "{what} op {i}: {a:?}, {b:?} gave {y:?}, not {w:?}"
                    );
                }
            };
            super::f16_blocks(&xs1, &xs2, &mut ys, &f);
            check("half's slice conversions", &ys);
            #[cfg(target_arch = "x86_64")]
            if is_x86_feature_detected!("f16c") {
                ys.fill(f16::ZERO);
                // Safety: the cpu has F16C, the slices have one length.
                unsafe { super::f16_blocks_f16c(&xs1, &xs2, &mut ys, &f) };
                check("F16C", &ys);
            }
        }
    }
}
