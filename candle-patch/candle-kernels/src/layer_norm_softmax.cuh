// Softmax over the last dimension, forward and backward, on the layer-norm
// machinery: the same row groups, tiers (the forward takes the forward's list,
// the backward the backward's, whose `s` flag it ignores: it has no parameter
// partials) and row reductions. See layer_norm.cu for the launch ABI.
//
//   softmax_fwd: y = exp(x - max(x)) / sum(exp(x - max(x)))
//   softmax_bwd: dx = y * (dy - sum(dy * y))
//
// Accumulation in ACC (f32, f64 for f64); exp(x - max) is recomputed for the
// output rather than kept, so 16-bit rows stay packed in registers.
#pragma once
#include "layer_norm_common.cuh"

namespace layer_norm {

__device__ __forceinline__ float sm_exp(float v) { return expf(v); }
__device__ __forceinline__ double sm_exp(double v) { return exp(v); }
template <typename ACC> __device__ __forceinline__ ACC neg_inf() { return ACC(-__int_as_float(0x7f800000)); }

template <typename T, int LANES, int VECS, bool PREFETCH>
__device__ __forceinline__ void softmax_fwd_resident(const T *__restrict__ x, T *__restrict__ y,
                                                     int64_t nrows, int64_t ncols) {
  using G = RowGroup<T, LANES, VECS>;
  using ACC = typename G::ACC;
  constexpr int V = G::V;
  // The max reduces into sred[0], the sum into sred[1]: each has the other's
  // barrier between its read and the next row's write.
  __shared__ ACC sred[2][32];

  const G rg(ncols);
  const int lane = rg.lane;
  const int vec = use_vec<T>(ncols, x, y, x, y);
  const int64_t stride = rg.stride;

  Pack<T> xr[VECS];
  if constexpr (PREFETCH) {
    const int64_t row = rg.first_row0() + rg.grp;
#pragma unroll
    for (int k = 0; k < VECS; ++k)
      xr[k] = load_pack(x + row * ncols, lane + k * LANES, row < nrows ? rg.nv[k] : 0, vec);
  }

  // row0 is uniform over the block: every lane runs the reductions.
  for (int64_t row0 = rg.first_row0(); row0 < nrows; row0 += stride) {
    const int64_t row = row0 + rg.grp;
    const bool active = row < nrows;

    Pack<T> xn[PREFETCH ? VECS : 1];
    if constexpr (PREFETCH) {
      const int64_t nrow = row + stride;
#pragma unroll
      for (int k = 0; k < VECS; ++k)
        xn[k] = load_pack(x + nrow * ncols, lane + k * LANES, nrow < nrows ? rg.nv[k] : 0, vec);
    } else {
#pragma unroll
      for (int k = 0; k < VECS; ++k)
        xr[k] = load_pack(x + row * ncols, lane + k * LANES, active ? rg.nv[k] : 0, vec);
    }

    ACC m[1] = {neg_inf<ACC>()};
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < rg.nv[k])
          m[0] = max(m[0], ACC(Elem<T>::get(xr[k], j)));
    row_allreduce<LANES>(m, sred[0], MaxOp());

    ACC s[1] = {ACC(0)};
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < rg.nv[k])
          s[0] += sm_exp(ACC(Elem<T>::get(xr[k], j)) - m[0]);
    row_allreduce<LANES>(s, sred[1]);
    const ACC inv = ACC(1) / s[0];

    if (active) {
      T *yrow = y + row * ncols;
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        if (rg.nv[k] == 0)
          continue;
        Pack<T> o;
        o.zero();
#pragma unroll
        for (int j = 0; j < V; ++j)
          Elem<T>::set(o, j, sm_exp(ACC(Elem<T>::get(xr[k], j)) - m[0]) * inv);
        store_pack(yrow, lane + k * LANES, rg.nv[k], vec, o);
      }
    }
    if constexpr (PREFETCH) {
#pragma unroll
      for (int k = 0; k < VECS; ++k)
        xr[k] = xn[k];
    }
  }
}

template <typename T, int LANES, int VECS, bool PREFETCH>
__device__ __forceinline__ void softmax_bwd_resident(const T *__restrict__ y, const T *__restrict__ dy,
                                                     T *__restrict__ dx, int64_t nrows, int64_t ncols) {
  using G = RowGroup<T, LANES, VECS>;
  using ACC = typename G::ACC;
  constexpr int V = G::V;
  // One reduction per row: consecutive rows alternate the buffers.
  __shared__ ACC sred[2][32];

  const G rg(ncols);
  const int lane = rg.lane;
  const int vec = use_vec<T>(ncols, y, dy, dx, dx);
  const int64_t stride = rg.stride;

  Pack<T> yr[VECS], gr[VECS];
  if constexpr (PREFETCH) {
    const int64_t row = rg.first_row0() + rg.grp;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      yr[k] = load_pack(y + row * ncols, lane + k * LANES, row < nrows ? rg.nv[k] : 0, vec);
      gr[k] = load_pack(dy + row * ncols, lane + k * LANES, row < nrows ? rg.nv[k] : 0, vec);
    }
  }

  int parity = 0;
  for (int64_t row0 = rg.first_row0(); row0 < nrows; row0 += stride) {
    const int64_t row = row0 + rg.grp;
    const bool active = row < nrows;

    Pack<T> yn[PREFETCH ? VECS : 1], gn[PREFETCH ? VECS : 1];
    if constexpr (PREFETCH) {
      const int64_t nrow = row + stride;
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        yn[k] = load_pack(y + nrow * ncols, lane + k * LANES, nrow < nrows ? rg.nv[k] : 0, vec);
        gn[k] = load_pack(dy + nrow * ncols, lane + k * LANES, nrow < nrows ? rg.nv[k] : 0, vec);
      }
    } else {
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        yr[k] = load_pack(y + row * ncols, lane + k * LANES, active ? rg.nv[k] : 0, vec);
        gr[k] = load_pack(dy + row * ncols, lane + k * LANES, active ? rg.nv[k] : 0, vec);
      }
    }

    // Elements past the end of the row are zero in both packs.
    ACC d[1] = {ACC(0)};
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j)
        d[0] += ACC(Elem<T>::get(yr[k], j)) * ACC(Elem<T>::get(gr[k], j));
    row_allreduce<LANES>(d, sred[parity]);
    parity ^= 1;

    if (active) {
      T *dxrow = dx + row * ncols;
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        if (rg.nv[k] == 0)
          continue;
        Pack<T> o;
        o.zero();
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const ACC yv = Elem<T>::get(yr[k], j);
          Elem<T>::set(o, j, yv * (ACC(Elem<T>::get(gr[k], j)) - d[0]));
        }
        store_pack(dxrow, lane + k * LANES, rg.nv[k], vec, o);
      }
    }
    if constexpr (PREFETCH) {
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        yr[k] = yn[k];
        gr[k] = gn[k];
      }
    }
  }
}

// Rows beyond the widest tier: one row per BIG_THREADS block, streamed twice
// (the second read mostly hits L2). The forward keeps a running (max, sum) per
// thread, then rescales each thread's sum to the row's max before adding.
// WORDS: rows without vectors, loaded in aligned pieces (an instance of its
// own, so that the vector path's code stays as it is).
template <typename T, bool WORDS>
__device__ __forceinline__ void softmax_fwd_big_rows(const T *__restrict__ x, T *__restrict__ y,
                                                     int64_t nrows, int64_t ncols, int vec,
                                                     typename acc_type<T>::type (*sred)[32]) {
  using ACC = typename acc_type<T>::type;
  constexpr int V = Pack<T>::N;
  const int64_t nvec = (ncols + V - 1) / V;
  for (int64_t row = blockIdx.x; row < nrows; row += gridDim.x) {
    const T *xrow = x + row * ncols;
    ACC m[1] = {neg_inf<ACC>()}, s[1] = {ACC(0)};
    for (int64_t slot = threadIdx.x; slot < nvec; slot += BIG_THREADS) {
      const int nv = slot_valid<V>(slot, ncols);
      const Pack<T> xr = load_pack<T, WORDS>(xrow, slot, nv, vec);
      ACC cm = m[0];
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < nv)
          cm = max(cm, ACC(Elem<T>::get(xr, j)));
      // Nothing to add while every element so far is -inf (a masked prefix):
      // exp(-inf - -inf) would be NaN.
      if (cm == neg_inf<ACC>())
        continue;
      ACC cs = ACC(0);
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < nv)
          cs += sm_exp(ACC(Elem<T>::get(xr, j)) - cm);
      s[0] = s[0] * sm_exp(m[0] - cm) + cs;
      m[0] = cm;
    }
    const ACC own = m[0];
    row_allreduce<BIG_THREADS>(m, sred[0], MaxOp());
    if (s[0] != ACC(0))
      s[0] *= sm_exp(own - m[0]);
    row_allreduce<BIG_THREADS>(s, sred[1]);
    const ACC inv = ACC(1) / s[0];
    T *yrow = y + row * ncols;
    for (int64_t slot = threadIdx.x; slot < nvec; slot += BIG_THREADS) {
      const int nv = slot_valid<V>(slot, ncols);
      const Pack<T> xr = load_pack<T, WORDS>(xrow, slot, nv, vec);
      Pack<T> o;
      o.zero();
#pragma unroll
      for (int j = 0; j < V; ++j)
        Elem<T>::set(o, j, sm_exp(ACC(Elem<T>::get(xr, j)) - m[0]) * inv);
      store_pack<T, WORDS>(yrow, slot, nv, vec, o);
    }
  }
}

template <typename T>
__device__ __forceinline__ void softmax_fwd_big(const T *__restrict__ x, T *__restrict__ y,
                                                int64_t nrows, int64_t ncols) {
  __shared__ typename acc_type<T>::type sred[2][32];
  const int vec = use_vec<T>(ncols, x, y, x, y);
  if (sizeof(T) == 2 && vec == VEC_NONE)
    softmax_fwd_big_rows<T, true>(x, y, nrows, ncols, vec, sred);
  else
    softmax_fwd_big_rows<T, false>(x, y, nrows, ncols, vec, sred);
}

template <typename T, bool WORDS>
__device__ __forceinline__ void softmax_bwd_big_rows(const T *__restrict__ y, const T *__restrict__ dy,
                                                     T *__restrict__ dx, int64_t nrows, int64_t ncols,
                                                     int vec, typename acc_type<T>::type (*sred)[32]) {
  using ACC = typename acc_type<T>::type;
  constexpr int V = Pack<T>::N;
  const int64_t nvec = (ncols + V - 1) / V;
  int parity = 0;
  for (int64_t row = blockIdx.x; row < nrows; row += gridDim.x) {
    const T *yrow = y + row * ncols;
    const T *dyrow = dy + row * ncols;
    ACC d[1] = {ACC(0)};
    for (int64_t slot = threadIdx.x; slot < nvec; slot += BIG_THREADS) {
      const int nv = slot_valid<V>(slot, ncols);
      const Pack<T> yr = load_pack<T, WORDS>(yrow, slot, nv, vec);
      const Pack<T> gr = load_pack<T, WORDS>(dyrow, slot, nv, vec);
#pragma unroll
      for (int j = 0; j < V; ++j)
        d[0] += ACC(Elem<T>::get(yr, j)) * ACC(Elem<T>::get(gr, j));
    }
    row_allreduce<BIG_THREADS>(d, sred[parity]);
    parity ^= 1;
    T *dxrow = dx + row * ncols;
    for (int64_t slot = threadIdx.x; slot < nvec; slot += BIG_THREADS) {
      const int nv = slot_valid<V>(slot, ncols);
      const Pack<T> yr = load_pack<T, WORDS>(yrow, slot, nv, vec);
      const Pack<T> gr = load_pack<T, WORDS>(dyrow, slot, nv, vec);
      Pack<T> o;
      o.zero();
#pragma unroll
      for (int j = 0; j < V; ++j)
        Elem<T>::set(o, j, ACC(Elem<T>::get(yr, j)) * (ACC(Elem<T>::get(gr, j)) - d[0]));
      store_pack<T, WORDS>(dxrow, slot, nv, vec, o);
    }
  }
}

template <typename T>
__device__ __forceinline__ void softmax_bwd_big(const T *__restrict__ y, const T *__restrict__ dy,
                                                T *__restrict__ dx, int64_t nrows, int64_t ncols) {
  __shared__ typename acc_type<T>::type sred[2][32];
  const int vec = use_vec<T>(ncols, y, dy, dx, dx);
  if (sizeof(T) == 2 && vec == VEC_NONE)
    softmax_bwd_big_rows<T, true>(y, dy, dx, nrows, ncols, vec, sred);
  else
    softmax_bwd_big_rows<T, false>(y, dy, dx, nrows, ncols, vec, sred);
}

} // namespace layer_norm
