// Experiment (bench only, tile_exp.cu): the layer-norm backward of narrow rows staged through
// shared memory by tiles of consecutive rows.
//
// The resident tiers load a narrow row of 16-bit elements in 16-byte vectors only when the
// row has a whole number of them; at odd widths (97, 201, 333, 1001 columns) they go element
// by element, and at widths that fill a tier's slots by three quarters (96, 192, 384) a
// quarter of the lanes idle (2026-12-06 sweep: 35-55% of a copy of the same bytes, against
// 72-76% at the powers of two). Here a block copies a tile of consecutive rows, which is one
// contiguous range of bytes whatever the width, with 16-byte cp.async into shared memory (the
// range's two partial words element by element), the next tile's copy in flight while this
// one is computed; a group of LPR lanes takes a row out of shared memory element by element
// (column lane + LPR * k), and the block writes the tile's dx back in 16-byte words. dw / db
// partials of a lane's columns stay in registers across the block's tiles; at the end the
// groups' partials are added in group order in shared memory: one partial row per block, for
// bwd_reduce. Deterministic: a block's tiles, a group's rows and every sum's order depend only
// on the shape and the grid.
#pragma once
#include "layer_norm_bwd.cuh"

namespace layer_norm_tile {

using layer_norm::acc_type;

template <typename T> __device__ __forceinline__ float to_f(T v);
template <> __device__ __forceinline__ float to_f(float v) { return v; }
template <> __device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f(float v) { return v; }
template <> __device__ __forceinline__ __half from_f(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f(float v) { return __float2bfloat16_rn(v); }

template <int N> __device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

// 16-byte words of shared memory for a tile of `elems` elements that may start anywhere in a
// word.
template <typename T> __host__ __device__ inline int64_t tile_words(int64_t elems) {
  return (elems * (int64_t)sizeof(T) + 15) / 16 + 1;
}

// Copies elements [e0, e1) of p (a tensor of n elements) to the words of s: word i of s is the
// 16-byte word at (p + e0) rounded down, plus i. Words wholly inside the tensor with cp.async,
// the others element by element (only the tile's elements).
template <typename T, int THREADS>
__device__ __forceinline__ void issue_tile(uint4 *s, const T *p, int64_t n, int64_t e0, int64_t e1) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p + e0), b = reinterpret_cast<uintptr_t>(p + e1);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = reinterpret_cast<uintptr_t>(p + n);
  const uintptr_t a0 = a & ~uintptr_t(15);
  const int64_t nw = (int64_t)((b - a0 + 15) / 16);
  for (int64_t i = threadIdx.x; i < nw; i += THREADS) {
    const uintptr_t g = a0 + 16 * (uintptr_t)i;
    if (g >= lo && g + 16 <= hi) {
      layer_norm::cp_async16(s + i, reinterpret_cast<const void *>(g));
    } else {
      for (int j = 0; j < 16 / (int)sizeof(T); ++j) {
        const uintptr_t e = g + j * sizeof(T);
        if (e >= a && e < b)
          reinterpret_cast<T *>(s + i)[j] = *reinterpret_cast<const T *>(e);
      }
    }
  }
}

// Writes elements [e0, e1) of p from the words of s laid out as issue_tile lays them.
template <typename T, int THREADS>
__device__ __forceinline__ void store_tile(T *p, const uint4 *s, int64_t e0, int64_t e1) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p + e0), b = reinterpret_cast<uintptr_t>(p + e1);
  const uintptr_t a0 = a & ~uintptr_t(15);
  const int64_t nw = (int64_t)((b - a0 + 15) / 16);
  for (int64_t i = threadIdx.x; i < nw; i += THREADS) {
    const uintptr_t g = a0 + 16 * (uintptr_t)i;
    if (g >= a && g + 16 <= b) {
      *reinterpret_cast<uint4 *>(g) = s[i];
    } else {
      for (int j = 0; j < 16 / (int)sizeof(T); ++j) {
        const uintptr_t e = g + j * sizeof(T);
        if (e >= a && e < b)
          *reinterpret_cast<T *>(e) = reinterpret_cast<const T *>(s + i)[j];
      }
    }
  }
}

// Element offset of p + e0 in its 16-byte word.
template <typename T> __device__ __forceinline__ int head(const T *p, int64_t e0) {
  return (int)((reinterpret_cast<uintptr_t>(p + e0) & 15) / sizeof(T));
}

// THREADS threads, groups of LPR lanes (LPR <= 32) a row, K columns a lane (ncols <= LPR * K),
// tile_rows (a multiple of THREADS / LPR) rows a tile, STAGES (1 or 2) tiles in shared memory.
// Dynamic shared memory: STAGES * 2 + 1 buffers of tile_words<T>(tile_rows * ncols) words (then
// ncols ACCs of weights with WSM), and at least 2 * (THREADS / LPR) * ncols ACCs for the final
// sum of the partials.
// WSM: the weights in shared memory (one ACC a column) instead of K registers a lane; RR: x
// and dy read from shared memory in each of the three passes over a row (the mean, the sums,
// dx) instead of held in 2 K registers.
template <typename T, int LPR, int K, int THREADS, int STAGES, bool WSM = false, bool RR = false>
__device__ __forceinline__ void bwd_tile(const T *__restrict__ x, const T *__restrict__ dy,
                                         const T *__restrict__ w, T *__restrict__ dx,
                                         typename acc_type<T>::type *__restrict__ dw_part,
                                         typename acc_type<T>::type *__restrict__ db_part, int64_t nrows,
                                         int64_t ncols, int tile_rows, float eps) {
  using ACC = typename acc_type<T>::type;
  static_assert(LPR <= 32 && 32 % LPR == 0 && THREADS % 32 == 0, "groups inside a warp");
  static_assert(STAGES == 1 || STAGES == 2, "one or two stages");
  constexpr int NG = THREADS / LPR;
  extern __shared__ uint4 tile_smem[];
  const int64_t tw = tile_words<T>((int64_t)tile_rows * ncols);
  uint4 *sx[2] = {tile_smem, tile_smem + (STAGES == 2 ? 2 * tw : 0)};
  uint4 *sdy[2] = {tile_smem + tw, tile_smem + (STAGES == 2 ? 3 * tw : tw)};
  uint4 *sdx = tile_smem + 2 * STAGES * tw;
  const int lane = threadIdx.x % LPR, grp = threadIdx.x / LPR;
  const int64_t n = nrows * ncols;
  const int64_t ntiles = (nrows + tile_rows - 1) / tile_rows;
  const ACC inv_n = ACC(1) / ACC(ncols);

  ACC wv[WSM ? 1 : K], dwa[K], dba[K];
  ACC *sw = reinterpret_cast<ACC *>(sdx + tw);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t c = lane + (int64_t)LPR * k;
    if constexpr (!WSM)
      wv[k] = w && c < ncols ? to_f(w[c]) : ACC(1);
    dwa[k] = ACC(0);
    dba[k] = ACC(0);
  }
  if constexpr (WSM) {
    for (int64_t c = threadIdx.x; c < ncols; c += THREADS)
      sw[c] = w ? to_f(w[c]) : ACC(1);
    // (the first tile's barrier orders these writes before their reads)
  }
  auto wcol = [&](int k, int c) -> ACC {
    if constexpr (WSM)
      return sw[c];
    else
      return wv[k];
  };

  auto issue = [&](int64_t t, int s) {
    const int64_t e0 = t * tile_rows * ncols, e1 = min(nrows, (t + 1) * tile_rows) * ncols;
    issue_tile<T, THREADS>(sx[s], x, n, e0, e1);
    issue_tile<T, THREADS>(sdy[s], dy, n, e0, e1);
    layer_norm::cp_async_commit();
  };
  int64_t t = blockIdx.x;
  if (t < ntiles)
    issue(t, 0);
  for (int it = 0; t < ntiles; ++it, t += gridDim.x) {
    const int s = STAGES == 2 ? (it & 1) : 0;
    if constexpr (STAGES == 2) {
      if (t + gridDim.x < ntiles)
        issue(t + gridDim.x, s ^ 1);
      else
        layer_norm::cp_async_commit(); // an empty group keeps the count
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const int64_t r0 = t * tile_rows, e0 = r0 * ncols;
    const int rows = (int)(min(nrows, r0 + tile_rows) - r0);
    const T *tx = reinterpret_cast<const T *>(sx[s]) + head(x, e0);
    const T *tdy = reinterpret_cast<const T *>(sdy[s]) + head(dy, e0);
    T *tdx = reinterpret_cast<T *>(sdx) + head(dx, e0);
    // Every group of a warp runs the same number of rows (the shuffles take the whole warp).
    for (int lr = grp; lr < tile_rows; lr += NG) {
      const bool active = lr < rows;
      const T *xr = tx + (int64_t)lr * ncols;
      const T *gr = tdy + (int64_t)lr * ncols;
      ACC xv[RR ? 1 : K], gv[RR ? 1 : K];
      const ACC shift = active ? to_f(xr[0]) : ACC(0);
      ACC s1[1] = {ACC(0)};
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int c = lane + LPR * k;
        const bool in = active && c < ncols;
        if constexpr (RR) {
          if (in)
            s1[0] += to_f(xr[c]) - shift;
        } else {
          xv[k] = in ? to_f(xr[c]) - shift : ACC(0);
          gv[k] = in ? to_f(gr[c]) : ACC(0);
          s1[0] += xv[k];
        }
      }
      layer_norm::row_allreduce<LPR>(s1, static_cast<ACC *>(nullptr));
      if constexpr (RR)
        __syncwarp(); // a memory fence for the compiler: x and dy are read again, not kept
      const ACC mean = s1[0] * inv_n;
      // d = x - shift - mean and dy of column k of the lane.
      auto dk = [&](int k, int c) -> ACC {
        if constexpr (RR)
          return to_f(xr[c]) - shift - mean;
        else
          return xv[k];
      };
      auto gk = [&](int k, int c) -> ACC {
        if constexpr (RR)
          return to_f(gr[c]);
        else
          return gv[k];
      };
      ACC s3[3] = {ACC(0), ACC(0), ACC(0)};
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int c = lane + LPR * k;
        if (RR ? active && c < ncols : c < ncols) {
          if constexpr (!RR)
            xv[k] -= mean;
          const ACC d = dk(k, c);
          const ACC g = gk(k, c) * wcol(k, c);
          s3[0] += d * d;
          s3[1] += g;
          s3[2] += g * d;
        }
      }
      layer_norm::row_allreduce<LPR>(s3, static_cast<ACC *>(nullptr));
      if constexpr (RR)
        __syncwarp();
      const ACC rstd = layer_norm::ln_rstd(max(s3[0] * inv_n, ACC(0)), eps);
      const ACC mg = s3[1] * inv_n;
      const ACC mgx = s3[2] * rstd * inv_n;
      if (active) {
        T *dr = tdx + (int64_t)lr * ncols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int c = lane + LPR * k;
          if (c < ncols) {
            const ACC xhat = dk(k, c) * rstd;
            const ACC gy = gk(k, c);
            dr[c] = from_f<T>(rstd * (gy * wcol(k, c) - mg - xhat * mgx));
            dwa[k] += gy * xhat;
            dba[k] += gy;
          }
        }
      }
    }
    __syncthreads();
    store_tile<T, THREADS>(dx, sdx, e0, e0 + (int64_t)rows * ncols);
    __syncthreads();
  }
  cp_async_wait<0>();
  __syncthreads();
  // The groups' partials, added in group order.
  ACC *pw = reinterpret_cast<ACC *>(tile_smem);
  ACC *pb = pw + (int64_t)NG * ncols;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int c = lane + LPR * k;
    if (c < ncols) {
      pw[(int64_t)grp * ncols + c] = dwa[k];
      pb[(int64_t)grp * ncols + c] = dba[k];
    }
  }
  __syncthreads();
  for (int64_t c = threadIdx.x; c < ncols; c += THREADS) {
    ACC aw = ACC(0), ab = ACC(0);
    for (int g = 0; g < NG; ++g) {
      aw += pw[(int64_t)g * ncols + c];
      ab += pb[(int64_t)g * ncols + c];
    }
    if (dw_part)
      dw_part[(int64_t)blockIdx.x * ncols + c] = aw;
    if (db_part)
      db_part[(int64_t)blockIdx.x * ncols + c] = ab;
  }
}

} // namespace layer_norm_tile
