// Fused LayerNorm backward: dx and per block dw / db partial sums (resident
// tiers and the big kernel), then the ordered reduction of the partials.
// See layer_norm.cu.
#pragma once
#include "layer_norm_common.cuh"

namespace layer_norm {

// Backward, resident tiers. Per row: mean, then ONE reduction of
// (sum d^2, sum g, sum g*d) with d = x - mean and g = dy * w, then
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  mean(g*xhat) = rstd * mean(g*d).
// dw/db partials of the thread's (fixed) columns stay in registers across the
// rows it processes (SMEM_ACC, the `s` tiers, one row per block: in dynamic
// shared memory, where each thread only ever touches its own columns, so no
// barrier is needed until the final write; this frees 2 * VECS * V registers). DY_RES keeps dy resident too; otherwise dy is re-read
// in the dx pass (an L1/L2 hit) to leave registers for the accumulators. W_RES
// keeps the thread's w in registers for all rows (small tiers of >= 128 lanes).
extern __shared__ float4 ln_dyn_smem[];

// RMS: the RMS norm backward, dx = rstd * (g - xhat * mean(g * xhat)) with
// xhat = x * rstd (no shift, no mean, no mean(g) term).
template <typename T, int LANES, int VECS, bool SMEM_ACC, bool PREFETCH, bool RMS = false>
__device__ __forceinline__ void bwd_resident(const T *__restrict__ x, const T *__restrict__ dy,
                                             const T *__restrict__ w, T *__restrict__ dx,
                                             typename acc_type<T>::type *__restrict__ dw_part,
                                             typename acc_type<T>::type *__restrict__ db_part,
                                             int64_t nrows, int64_t ncols, float eps) {
  using G = RowGroup<T, LANES, VECS>;
  using ACC = typename G::ACC;
  constexpr int V = G::V;
  constexpr int THREADS = G::THREADS;
  constexpr int RPB = G::RPB;
  static_assert(!SMEM_ACC || RPB == 1, "shared memory partials need one row per block");
  // dy stays resident unless the thread's 2 * VECS * V accumulators already
  // take most of the register budget (checked with ptxas -v: no spills);
  // always with PREFETCH, which loads it one row ahead.
  constexpr bool DY_RES =
      PREFETCH || (SMEM_ACC ? VECS * V <= 8 : VECS * V < 32 && (LANES < 512 || VECS * V <= 8));
  constexpr bool W_RES = !SMEM_ACC && LANES >= 128 && VECS * V <= 8;
  // ACC lanes of one vector slot in shared memory, as 16-byte words.
  constexpr int NQ = V * (int)sizeof(ACC) / 16;
  union AccVec {
    float4 q[NQ];
    ACC a[V];
  };
  __shared__ ACC sred[2][3 * 32];

  const G rg(ncols);
  const int lane = rg.lane;
  const int grp = rg.grp;
  const int vec = use_vec<T>(ncols, x, dy, w, dx);
  const ACC inv_n = rg.inv_n;
  const int64_t stride = rg.stride;

  ACC dwa[SMEM_ACC ? 1 : VECS][V], dba[SMEM_ACC ? 1 : VECS][V];
  // SMEM_ACC: dw partials at sacc[0, npad), db partials at sacc[npad, 2 npad).
  const int64_t npad = (ncols + V - 1) / V * V;
  ACC *sacc = reinterpret_cast<ACC *>(ln_dyn_smem);
  if constexpr (SMEM_ACC) {
    for (int64_t e = threadIdx.x; e < 2 * npad; e += THREADS)
      sacc[e] = ACC(0);
    __syncthreads();
  } else {
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j) {
        dwa[k][j] = ACC(0);
        dba[k][j] = ACC(0);
      }
  }
  Pack<T> wres[W_RES ? VECS : 1];
  if constexpr (W_RES) {
#pragma unroll
    for (int k = 0; k < VECS; ++k)
      if (w)
        wres[k] = load_pack(w, lane + k * LANES, rg.nv[k], vec);
  }

  Pack<T> xr[VECS];
  Pack<T> gr[DY_RES ? VECS : 1];
  if constexpr (PREFETCH) {
    const int64_t row = rg.first_row0() + grp;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      xr[k] = load_pack(x + row * ncols, lane + k * LANES, row < nrows ? rg.nv[k] : 0, vec);
      gr[k] = load_pack(dy + row * ncols, lane + k * LANES, row < nrows ? rg.nv[k] : 0, vec);
    }
  }

  // row_allreduce has no barrier after its read: consecutive reductions use
  // different buffers. With the mean's reduction (sred[0]) in between, every
  // row's second one can use sred[1]; without it (RMS) rows alternate.
  int parity = 1;
  for (int64_t row0 = rg.first_row0(); row0 < nrows; row0 += stride) {
    const int64_t row = row0 + grp;
    const bool active = row < nrows;
    const T *xrow = x + row * ncols;
    const T *dyrow = dy + row * ncols;

    Pack<T> xn[PREFETCH ? VECS : 1], gn[PREFETCH ? VECS : 1];
    if constexpr (PREFETCH) {
      const int64_t nrow = row + stride;
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        xn[k] = load_pack(x + nrow * ncols, lane + k * LANES, nrow < nrows ? rg.nv[k] : 0, vec);
        gn[k] = load_pack(dy + nrow * ncols, lane + k * LANES, nrow < nrows ? rg.nv[k] : 0, vec);
      }
    } else {
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        xr[k] = load_pack(xrow, lane + k * LANES, active ? rg.nv[k] : 0, vec);
        if constexpr (DY_RES)
          gr[k] = load_pack(dyrow, lane + k * LANES, active ? rg.nv[k] : 0, vec);
      }
    }

    ACC shift = ACC(0), mean = ACC(0); // mean of x - shift
    if constexpr (!RMS) {
      shift = rg.shift(xr, xrow, active, ncols);
      mean = rg.mean(xr, shift, sred[0]);
    }

    ACC s3[3] = {ACC(0), ACC(0), ACC(0)};
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      const int64_t slot = lane + k * LANES;
      Pack<T> dyk, wk;
      if constexpr (DY_RES)
        dyk = gr[k];
      else
        dyk = load_pack(dyrow, slot, active ? rg.nv[k] : 0, vec);
      if constexpr (W_RES)
        wk = wres[k];
      else if (w)
        wk = load_pack(w, slot, rg.nv[k], vec);
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < rg.nv[k]) {
          const ACC d = (Elem<T>::get(xr[k], j) - shift) - mean;
          ACC g = Elem<T>::get(dyk, j);
          if (w)
            g *= Elem<T>::get(wk, j);
          s3[0] += d * d;
          s3[1] += g;
          s3[2] += g * d;
        }
      // Wide shared-memory tiers (64 registers at 1024 threads): at most two
      // slots of dy and w in flight, or the hoisted loads spill.
      if constexpr (SMEM_ACC && !DY_RES && VECS > 2)
        if (k % 2 == 1)
          asm volatile("" ::: "memory");
    }
    row_allreduce<LANES>(s3, sred[parity]);
    if constexpr (RMS)
      parity ^= 1;
    const ACC rstd = ln_rstd(max(s3[0] * inv_n, ACC(0)), eps);
    const ACC mg = RMS ? ACC(0) : s3[1] * inv_n;
    const ACC mgx = s3[2] * rstd * inv_n;

    if (active) {
      T *dxrow = dx + row * ncols;
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        if (rg.nv[k] == 0)
          continue;
        const int64_t slot = lane + k * LANES;
        Pack<T> dyk, wk, o;
        o.zero();
        if constexpr (DY_RES)
          dyk = gr[k];
        else
          dyk = load_pack(dyrow, slot, rg.nv[k], vec);
        if constexpr (W_RES)
          wk = wres[k];
        else if (w)
          wk = load_pack(w, slot, rg.nv[k], vec);
        if constexpr (SMEM_ACC) {
          // This thread's columns [slot * V, slot * V + V) of the partials.
          float4 *qw = reinterpret_cast<float4 *>(sacc + slot * V);
          float4 *qb = reinterpret_cast<float4 *>(sacc + npad + slot * V);
          AccVec aw, ab;
#pragma unroll
          for (int q = 0; q < NQ; ++q) {
            aw.q[q] = qw[q];
            ab.q[q] = qb[q];
          }
#pragma unroll
          for (int j = 0; j < V; ++j) {
            const ACC xhat = ((Elem<T>::get(xr[k], j) - shift) - mean) * rstd;
            const ACC dyv = Elem<T>::get(dyk, j);
            const ACC g = w ? dyv * Elem<T>::get(wk, j) : dyv;
            Elem<T>::set(o, j, rstd * (g - mg - xhat * mgx));
            if (j < rg.nv[k]) {
              aw.a[j] += dyv * xhat;
              ab.a[j] += dyv;
            }
          }
#pragma unroll
          for (int q = 0; q < NQ; ++q) {
            qw[q] = aw.q[q];
            qb[q] = ab.q[q];
          }
        } else {
#pragma unroll
          for (int j = 0; j < V; ++j) {
            const ACC xhat = ((Elem<T>::get(xr[k], j) - shift) - mean) * rstd;
            const ACC dyv = Elem<T>::get(dyk, j);
            const ACC g = w ? dyv * Elem<T>::get(wk, j) : dyv;
            Elem<T>::set(o, j, rstd * (g - mg - xhat * mgx));
            if (j < rg.nv[k]) {
              dwa[k][j] += dyv * xhat;
              dba[k][j] += dyv;
            }
          }
        }
        store_pack(dxrow, slot, rg.nv[k], vec, o);
        if constexpr (SMEM_ACC && !DY_RES && VECS > 2)
          if (k % 2 == 1)
            asm volatile("" ::: "memory");
      }
    }
    if constexpr (PREFETCH) {
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        xr[k] = xn[k];
        gr[k] = gn[k];
      }
    }
  }

  // Write this block's partial row. Every column is written (zeros when the
  // block processed no rows).
  const int64_t prow = (int64_t)blockIdx.x * ncols;
  if constexpr (SMEM_ACC) {
    __syncthreads();
    for (int64_t e = threadIdx.x; e < ncols; e += THREADS) {
      if (dw_part)
        dw_part[prow + e] = sacc[e];
      if (db_part)
        db_part[prow + e] = sacc[npad + e];
    }
  } else if constexpr (RPB == 1) {
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const int64_t col = (int64_t)(lane + k * LANES) * V + j;
        if (col < ncols) {
          if (dw_part)
            dw_part[prow + col] = dwa[k][j];
          if (db_part)
            db_part[prow + col] = dba[k][j];
        }
      }
  } else {
    // The RPB row groups of the block own the same columns: add their
    // partials through shared memory, always in group order 0, 1, ..., so the
    // result does not depend on scheduling.
    constexpr int E = LANES * V; // elements per slot index k across a group
    __shared__ ACC sdw[RPB][E];
    __shared__ ACC sdb[RPB][E];
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      __syncthreads();
#pragma unroll
      for (int j = 0; j < V; ++j) {
        sdw[grp][lane * V + j] = dwa[k][j];
        sdb[grp][lane * V + j] = dba[k][j];
      }
      __syncthreads();
      for (int e = threadIdx.x; e < E; e += THREADS) {
        // Element (lane, j) of slot lane + k * LANES is column k * E + lane * V + j.
        const int64_t col = (int64_t)k * E + e;
        if (col < ncols) {
          ACC aw = sdw[0][e], ab = sdb[0][e];
#pragma unroll 8
          for (int g = 1; g < RPB; ++g) {
            aw += sdw[g][e];
            ab += sdb[g][e];
          }
          if (dw_part)
            dw_part[prow + col] = aw;
          if (db_part)
            db_part[prow + col] = ab;
        }
      }
    }
  }
}

// Backward, big kernel. Pass 1 streams x, dy, w once for the statistics and
// the two gradient sums; everything is shifted by K, the row's first element,
// and sum g*(x - mean) is accumulated as sum g*(x - K), corrected once the
// (shifted) mean is known. Pass 2 re-reads the row (L2), writes dx and
// adds dy*xhat, dy into the block's own partial row: each column belongs to
// one thread, so there are no races.
template <typename T, bool RMS = false>
__device__ __forceinline__ void bwd_big(const T *__restrict__ x, const T *__restrict__ dy,
                                        const T *__restrict__ w, T *__restrict__ dx,
                                        typename acc_type<T>::type *__restrict__ dw_part,
                                        typename acc_type<T>::type *__restrict__ db_part,
                                        int64_t nrows, int64_t ncols, float eps) {
  using ACC = typename acc_type<T>::type;
  constexpr int V = Pack<T>::N;
  __shared__ ACC sh[5 * 32];
  const int vec = use_vec<T>(ncols, x, dy, w, dx);
  const int64_t nvec = (ncols + V - 1) / V;
  const ACC inv_n = ACC(1) / ACC(ncols);
  const int64_t prow = (int64_t)blockIdx.x * ncols;

  for (int64_t slot = threadIdx.x; slot < nvec; slot += BIG_THREADS) {
    const int nv = slot_valid<V>(slot, ncols);
    for (int j = 0; j < nv; ++j) {
      if (dw_part)
        dw_part[prow + slot * V + j] = ACC(0);
      if (db_part)
        db_part[prow + slot * V + j] = ACC(0);
    }
  }

  for (int64_t row = blockIdx.x; row < nrows; row += gridDim.x) {
    const T *xrow = x + row * ncols;
    const T *dyrow = dy + row * ncols;
    ACC shift = ACC(0);
    if (!RMS && ncols > 0) {
      const Pack<T> first = load_pack(xrow, 0, 1, false);
      shift = Elem<T>::get(first, 0);
    }
    Welford<ACC> a = {ACC(0), ACC(0), ACC(0)};
    ACC s[2] = {ACC(0), ACC(0)};
    for (int64_t slot = threadIdx.x; slot < nvec; slot += BIG_THREADS) {
      const int nv = slot_valid<V>(slot, ncols);
      const Pack<T> xr = load_pack(xrow, slot, nv, vec);
      const Pack<T> dyk = load_pack(dyrow, slot, nv, vec);
      Pack<T> wk;
      if (w)
        wk = load_pack(w, slot, nv, vec);
      welford_chunk<T>(a, xr, nv, shift);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        // Masked elements have dy == 0, hence g == 0.
        ACC g = Elem<T>::get(dyk, j);
        if (w)
          g *= Elem<T>::get(wk, j);
        s[0] += g;
        s[1] += g * (Elem<T>::get(xr, j) - shift);
      }
    }
    big_allreduce<2>(a, s, sh);
    // RMS: mean(x^2) = M2 / n + mean^2, and no mean removed.
    const ACC mean = RMS ? ACC(0) : a.mean;
    const ACC var = RMS ? a.m2 * inv_n + a.mean * a.mean : a.m2 * inv_n;
    const ACC rstd = ln_rstd(max(var, ACC(0)), eps);
    const ACC mg = RMS ? ACC(0) : s[0] * inv_n;
    const ACC mgx = (s[1] - mean * s[0]) * rstd * inv_n;

    T *dxrow = dx + row * ncols;
    for (int64_t slot = threadIdx.x; slot < nvec; slot += BIG_THREADS) {
      const int nv = slot_valid<V>(slot, ncols);
      const Pack<T> xr = load_pack(xrow, slot, nv, vec);
      const Pack<T> dyk = load_pack(dyrow, slot, nv, vec);
      Pack<T> wk, o;
      o.zero();
      if (w)
        wk = load_pack(w, slot, nv, vec);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const ACC xhat = ((Elem<T>::get(xr, j) - shift) - mean) * rstd;
        const ACC dyv = Elem<T>::get(dyk, j);
        const ACC g = w ? dyv * Elem<T>::get(wk, j) : dyv;
        Elem<T>::set(o, j, rstd * (g - mg - xhat * mgx));
        if (j < nv) {
          if (dw_part)
            dw_part[prow + slot * V + j] += dyv * xhat;
          if (db_part)
            db_part[prow + slot * V + j] += dyv;
        }
      }
      store_pack(dxrow, slot, nv, vec, o);
    }
  }
}

// dw[c] = sum_p dw_part[p * ncols + c] (same for db), always in the same order.
// Launch: blockDim.x = 1024 = 32 columns x 32 slices, gridDim.x = ceil(ncols / 32)
// (any grid works: column blocks are grid-strided). Slice t sums the parts
// p = t, t + 32, t + 64, ... in increasing order, then thread (c, 0) adds the 32
// slice sums in slice order. 32 slices keep narrow rows (2 column blocks for
// 64 columns) from summing a thousand partials per thread.
constexpr int RED_COLS = 32;
constexpr int RED_SLICES = 32;

template <typename T>
__device__ __forceinline__ void bwd_reduce(const typename acc_type<T>::type *__restrict__ dw_part,
                                           const typename acc_type<T>::type *__restrict__ db_part,
                                           T *__restrict__ dw, T *__restrict__ db, int64_t nparts,
                                           int64_t ncols) {
  using ACC = typename acc_type<T>::type;
  __shared__ ACC sw[RED_SLICES][RED_COLS + 1];
  __shared__ ACC sb[RED_SLICES][RED_COLS + 1];
  const int tx = threadIdx.x % RED_COLS;
  const int ty = threadIdx.x / RED_COLS;
  for (int64_t c0 = (int64_t)blockIdx.x * RED_COLS; c0 < ncols; c0 += (int64_t)gridDim.x * RED_COLS) {
    const int64_t col = c0 + tx;
    ACC aw = ACC(0), ab = ACC(0);
    if (col < ncols) {
      if (dw_part)
#pragma unroll 4
        for (int64_t p = ty; p < nparts; p += RED_SLICES)
          aw += dw_part[p * ncols + col];
      if (db_part)
#pragma unroll 4
        for (int64_t p = ty; p < nparts; p += RED_SLICES)
          ab += db_part[p * ncols + col];
    }
    __syncthreads(); // the previous column block's readers are done
    sw[ty][tx] = aw;
    sb[ty][tx] = ab;
    __syncthreads();
    if (ty == 0 && col < ncols) {
      ACC tw = sw[0][tx], tb = sb[0][tx];
#pragma unroll
      for (int i = 1; i < RED_SLICES; ++i) {
        tw += sw[i][tx];
        tb += sb[i][tx];
      }
      if (dw) {
        Pack<T> t;
        t.zero();
        Elem<T>::set(t, 0, tw);
        reinterpret_cast<typename Elem<T>::bits *>(dw)[col] = Elem<T>::get_bits(t, 0);
      }
      if (db) {
        Pack<T> t;
        t.zero();
        Elem<T>::set(t, 0, tb);
        reinterpret_cast<typename Elem<T>::bits *>(db)[col] = Elem<T>::get_bits(t, 0);
      }
    }
  }
}

} // namespace layer_norm
