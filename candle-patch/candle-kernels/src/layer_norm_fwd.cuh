// Fused LayerNorm forward: resident tiers (the row in registers) and the big
// kernel (rows beyond the widest tier, streamed twice). See layer_norm.cu.
#pragma once
#include "layer_norm_common.cuh"

namespace layer_norm {

// ---------------------------------------------------------------------------
// Resident tiers: the row lives in registers (raw T, converted on the fly).
// ---------------------------------------------------------------------------

// PREFETCH: the loads of the group's next row are issued before the current
// row is reduced, so that with a grid of resident blocks the memory latency
// of one row overlaps the reductions of the previous one.
// RMS: RMS norm, y = x / sqrt(mean(x^2) + eps) * w: no shift, no mean.
// WORDS: the instance for 16-bit rows without vectors (odd widths), which loads
// and stores a full slot in aligned pieces (load_words / store_words) instead of
// element by element.
template <typename T, int LANES, int VECS, bool PREFETCH, bool RMS = false, bool WORDS = false>
__device__ __forceinline__ void fwd_resident(const T *__restrict__ x, T *__restrict__ y,
                                             const T *__restrict__ w, const T *__restrict__ b,
                                             int64_t nrows, int64_t ncols, float eps) {
  using G = RowGroup<T, LANES, VECS>;
  using ACC = typename G::ACC;
  constexpr int V = G::V;
  // The aligned pieces pay where a warp holds one row, so that the branch on the row's
  // alignment is the same for every lane (H200, 2026-12-02, bf16 rows of 201 to 65535 columns:
  // 12-45% faster; of 97 columns, two rows per warp: 10% slower), so the tiers of fewer than 32
  // lanes keep element accesses in their WORDS instances.
  constexpr bool PIECES = WORDS && LANES >= 32;
  __shared__ ACC sred[2][32];

  const G rg(ncols);
  const int lane = rg.lane;
  const int vec = use_vec<T>(ncols, x, y, w, b);
  const int64_t stride = rg.stride;

  Pack<T> xr[VECS];
  if constexpr (PREFETCH) {
    const int64_t row = rg.first_row0() + rg.grp;
#pragma unroll
    for (int k = 0; k < VECS; ++k)
      xr[k] = load_pack<T, PIECES>(x + row * ncols, lane + k * LANES, row < nrows ? rg.nv[k] : 0, vec);
  }

  // row0 is uniform over the block, so every lane runs the shuffles below
  // even when its own row is past the end.
  // row_allreduce has no barrier after its read: consecutive reductions use
  // different buffers. With the mean's reduction (sred[0]) in between, every
  // row's second one can use sred[1]; without it (RMS) rows alternate.
  int parity = 1;
  for (int64_t row0 = rg.first_row0(); row0 < nrows; row0 += stride) {
    const int64_t row = row0 + rg.grp;
    const bool active = row < nrows;
    const T *xrow = x + row * ncols;

    Pack<T> xn[PREFETCH ? VECS : 1];
    if constexpr (PREFETCH) {
      const int64_t nrow = row + stride;
#pragma unroll
      for (int k = 0; k < VECS; ++k)
        xn[k] = load_pack<T, PIECES>(x + nrow * ncols, lane + k * LANES, nrow < nrows ? rg.nv[k] : 0, vec);
    } else {
#pragma unroll
      for (int k = 0; k < VECS; ++k)
        xr[k] = load_pack<T, PIECES>(xrow, lane + k * LANES, active ? rg.nv[k] : 0, vec);
    }

    ACC shift = ACC(0), mean = ACC(0); // mean of x - shift
    if constexpr (!RMS) {
      shift = rg.shift(xr, xrow, active, ncols);
      mean = rg.mean(xr, shift, sred[0]);
    }

    // Second pass over the registers: sum of squared deviations.
    ACC q[1] = {ACC(0)};
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < rg.nv[k]) {
          const ACC d = (Elem<T>::get(xr[k], j) - shift) - mean;
          q[0] += d * d;
        }
    row_allreduce<LANES>(q, sred[parity]);
    if constexpr (RMS)
      parity ^= 1;
    const ACC rstd = ln_rstd(max(q[0] * rg.inv_n, ACC(0)), eps);

    if (active) {
      T *yrow = y + row * ncols;
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        if (rg.nv[k] == 0)
          continue;
        const int64_t slot = lane + k * LANES;
        Pack<T> wr, br, o;
        o.zero();
        if (w)
          wr = load_pack<T, PIECES>(w, slot, rg.nv[k], vec);
        if (b)
          br = load_pack<T, PIECES>(b, slot, rg.nv[k], vec);
#pragma unroll
        for (int j = 0; j < V; ++j) {
          ACC v = ((Elem<T>::get(xr[k], j) - shift) - mean) * rstd;
          if (w)
            v *= Elem<T>::get(wr, j);
          if (b)
            v += Elem<T>::get(br, j);
          Elem<T>::set(o, j, v);
        }
        store_pack<T, PIECES>(yrow, slot, rg.nv[k], vec, o);
      }
    }
    if constexpr (PREFETCH) {
#pragma unroll
      for (int k = 0; k < VECS; ++k)
        xr[k] = xn[k];
    }
  }
}

// The rows of fwd_big. WORDS: rows without vectors, loaded in aligned pieces (an
// instance of its own, so that the vector path's code stays as it is).
template <typename T, bool RMS, bool WORDS>
__device__ __forceinline__ void fwd_big_rows(const T *__restrict__ x, T *__restrict__ y,
                                             const T *__restrict__ w, const T *__restrict__ b,
                                             int64_t nrows, int64_t ncols, float eps, int vec,
                                             typename acc_type<T>::type *sh) {
  using ACC = typename acc_type<T>::type;
  constexpr int V = Pack<T>::N;
  const int64_t nvec = (ncols + V - 1) / V;
  for (int64_t row = blockIdx.x; row < nrows; row += gridDim.x) {
    const T *xrow = x + row * ncols;
    ACC shift = ACC(0);
    if (!RMS && ncols > 0) {
      const Pack<T> first = load_pack(xrow, 0, 1, false);
      shift = Elem<T>::get(first, 0);
    }
    Welford<ACC> a = {ACC(0), ACC(0), ACC(0)};
    for (int64_t slot = threadIdx.x; slot < nvec; slot += BIG_THREADS) {
      const int nv = slot_valid<V>(slot, ncols);
      welford_chunk<T>(a, load_pack<T, WORDS>(xrow, slot, nv, vec), nv, shift);
    }
    big_allreduce<0>(a, (ACC *)nullptr, sh);
    // RMS: mean(x^2) = M2 / n + mean^2 (no cancellation), and no mean removed.
    const ACC mean = RMS ? ACC(0) : a.mean;
    const ACC var = RMS ? a.m2 / ACC(ncols) + a.mean * a.mean : a.m2 / ACC(ncols);
    const ACC rstd = ln_rstd(max(var, ACC(0)), eps);
    T *yrow = y + row * ncols;
    for (int64_t slot = threadIdx.x; slot < nvec; slot += BIG_THREADS) {
      const int nv = slot_valid<V>(slot, ncols);
      const Pack<T> xr = load_pack<T, WORDS>(xrow, slot, nv, vec);
      Pack<T> wr, br, o;
      o.zero();
      if (w)
        wr = load_pack<T, WORDS>(w, slot, nv, vec);
      if (b)
        br = load_pack<T, WORDS>(b, slot, nv, vec);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        ACC v = ((Elem<T>::get(xr, j) - shift) - mean) * rstd;
        if (w)
          v *= Elem<T>::get(wr, j);
        if (b)
          v += Elem<T>::get(br, j);
        Elem<T>::set(o, j, v);
      }
      store_pack<T, WORDS>(yrow, slot, nv, vec, o);
    }
  }
}

template <typename T, bool RMS = false>
__device__ __forceinline__ void fwd_big(const T *__restrict__ x, T *__restrict__ y,
                                        const T *__restrict__ w, const T *__restrict__ b,
                                        int64_t nrows, int64_t ncols, float eps) {
  __shared__ typename acc_type<T>::type sh[3 * 32];
  const int vec = use_vec<T>(ncols, x, y, w, b);
  if (sizeof(T) == 2 && vec == VEC_NONE)
    fwd_big_rows<T, RMS, true>(x, y, w, b, nrows, ncols, eps, vec, sh);
  else
    fwd_big_rows<T, RMS, false>(x, y, w, b, nrows, ncols, eps, vec, sh);
}

} // namespace layer_norm
