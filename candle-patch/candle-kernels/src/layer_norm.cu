// Fused LayerNorm forward and backward.
//
// Launch ABI (shared with candle-nn/src/ops.rs):
//
// T is the storage dtype, ACC the accumulation type (float, double for f64),
// V = 16 / sizeof(T) elements per 16-byte vector and nvec = ceil(ncols / V).
// A "tier" (LANES, VECS) lets LANES threads cooperate on one row, each thread
// holding VECS vectors of the row in registers, so rows of up to
// LANES * VECS * V elements stay resident. Thread `lane` of a row group owns
// the vector slots `lane + k * LANES`, k < VECS. The host picks the first tier
// with LANES * VECS >= nvec and the `big` kernel beyond the last one.
//
//   LANES <= 64  : blockDim.x = 128, 128 / LANES rows per block.
//   LANES >= 128 : blockDim.x = LANES, one row per block.
//   big          : blockDim.x = 1024, one row per block, row not resident.
//
// All row loops are grid-stride, so any gridDim.x >= 1 is valid.
//
// Backward tiers with an `s` suffix (layernorm_bwd_l512v2s_f32, LANES >= 128
// only) keep the dw / db partials in dynamic shared memory instead of
// registers: they must be launched with 2 * nvec * V * sizeof(ACC) bytes of
// dynamic shared memory (above 48 KB this needs the function attribute
// MAX_DYNAMIC_SHARED_SIZE_BYTES; the host skips these tiers when the size
// exceeds the device's opt-in maximum). Every other kernel uses static shared
// memory only.
//
// Tiers with a `p` suffix (layernorm_fwd_l512v8p_f32, layernorm_bwd_l512v4sp_f32)
// load the next row of their group while the current one is reduced. This
// only hides latency when a block processes several rows, so they are meant
// for a grid of resident blocks; any grid is still valid.
//
//   layernorm_fwd_<tier>_<dtype>(x, y, w, b, nrows, ncols, eps)
//   layernorm_bwd_<tier>_<dtype>(x, dy, w, dx, dw_part, db_part, nrows, ncols, eps)
//   layernorm_bwd_reduce_<dtype>(dw_part, db_part, dw, db, nparts, ncols)
//
// w and b may be NULL (treated as 1 and 0). dw_part / db_part are [gridDim.x,
// ncols] ACC buffers (or NULL to skip): block i writes row i with the sum over
// the rows it processed of dy * xhat and dy. Every block writes its whole
// partial row, and no atomics are used, so the gradients are bit-for-bit
// reproducible for a given grid. bwd_reduce then sums the partials in a fixed
// order.
//
// Numerics: statistics are accumulated in ACC. With the row resident the
// variance is computed in two passes over registers (mean first, then the sum
// of squared deviations): the one-pass E[x^2] - E[x]^2 formula loses all
// precision on rows whose mean is large compared to their spread, and the
// second pass costs no memory traffic. The big kernels, which stream the row,
// use Welford per thread and Chan's merge across threads.
// In addition every row is shifted by its first element K before anything is
// summed, and the mean is kept as K + m with m small: for a row with mean 1e4
// and std 1e-2 the float nearest to the mean is up to 5e-4 (0.05 std) off,
// while x - K is exact and (x - K) - m keeps xhat accurate to ~1e-5.
// Only the fp16/bf16 headers (not cuda_utils.cuh): its compatibility shims
// assume a device-only compile and clash with a host pass.
#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include <stdint.h>

// The kernels are also compiled by a host + device test harness: its host pass
// has no __CUDA_ARCH__ and must still see the kernel declarations.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define LN_HAS_BF16 1
#endif
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 530
#define LN_HAS_F16 1
#endif

namespace layer_norm {

template <typename T> struct acc_type { typedef float type; };
template <> struct acc_type<double> { typedef double type; };

__device__ __forceinline__ float ln_rstd(float var, float eps) { return rsqrtf(var + eps); }
__device__ __forceinline__ double ln_rstd(double var, float eps) { return 1.0 / sqrt(var + (double)eps); }

// 16 bytes of a row: the unit of the vector path and of the register layout.
// Stored as four 32-bit words so that 16-bit dtypes stay packed two per
// register; elements are converted to ACC at each use (get) rather than kept
// converted, which would double the register footprint of the wide tiers.
template <typename T> struct Pack {
  static constexpr int N = 16 / sizeof(T);
  uint32_t w[4];
  __device__ __forceinline__ void zero() { w[0] = w[1] = w[2] = w[3] = 0u; }
};

// Per-dtype element access. j is a compile-time constant after unrolling.
template <typename T> struct Elem;

template <> struct Elem<float> {
  typedef uint32_t bits;
  static __device__ __forceinline__ float get(const Pack<float> &p, int j) { return __uint_as_float(p.w[j]); }
  static __device__ __forceinline__ void set(Pack<float> &p, int j, float v) { p.w[j] = __float_as_uint(v); }
  static __device__ __forceinline__ void set_bits(Pack<float> &p, int j, bits b) { p.w[j] = b; }
  static __device__ __forceinline__ bits get_bits(const Pack<float> &p, int j) { return p.w[j]; }
};

template <> struct Elem<double> {
  typedef unsigned long long bits;
  static __device__ __forceinline__ double get(const Pack<double> &p, int j) {
    return __hiloint2double((int)p.w[2 * j + 1], (int)p.w[2 * j]);
  }
  static __device__ __forceinline__ void set(Pack<double> &p, int j, double v) {
    p.w[2 * j] = (uint32_t)__double2loint(v);
    p.w[2 * j + 1] = (uint32_t)__double2hiint(v);
  }
  static __device__ __forceinline__ void set_bits(Pack<double> &p, int j, bits b) {
    p.w[2 * j] = (uint32_t)b;
    p.w[2 * j + 1] = (uint32_t)(b >> 32);
  }
  static __device__ __forceinline__ bits get_bits(const Pack<double> &p, int j) {
    return ((bits)p.w[2 * j + 1] << 32) | p.w[2 * j];
  }
};

// Shared by the two 16-bit dtypes: element j is half j % 2 of word j / 2.
struct Elem16 {
  typedef unsigned short bits;
  template <typename P> static __device__ __forceinline__ void set_bits(P &p, int j, bits b) {
    p.w[j / 2] = (j & 1) ? ((p.w[j / 2] & 0xffffu) | ((uint32_t)b << 16)) : ((p.w[j / 2] & 0xffff0000u) | b);
  }
  template <typename P> static __device__ __forceinline__ bits get_bits(const P &p, int j) {
    return (bits)((j & 1) ? (p.w[j / 2] >> 16) : (p.w[j / 2] & 0xffffu));
  }
};

// The conversions are volatile asm on purpose: with plain intrinsics the
// compiler hoists them and keeps the whole row as floats (-> spills).
#ifdef LN_HAS_F16
template <> struct Elem<__half> : Elem16 {
  static __device__ __forceinline__ float get(const Pack<__half> &p, int j) {
#ifdef __CUDA_ARCH__
    float f;
    if (j & 1)
      asm volatile("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %1; cvt.f32.f16 %0, hi; }" : "=f"(f) : "r"(p.w[j / 2]));
    else
      asm volatile("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %1; cvt.f32.f16 %0, lo; }" : "=f"(f) : "r"(p.w[j / 2]));
    return f;
#else
    return 0.f;
#endif
  }
  static __device__ __forceinline__ void set(Pack<__half> &p, int j, float v) {
    set_bits(p, j, __half_as_ushort(__float2half_rn(v)));
  }
};
#endif

#ifdef LN_HAS_BF16
template <> struct Elem<__nv_bfloat16> : Elem16 {
  static __device__ __forceinline__ float get(const Pack<__nv_bfloat16> &p, int j) {
#ifdef __CUDA_ARCH__
    uint32_t u;
    if (j & 1)
      asm volatile("and.b32 %0, %1, 0xffff0000;" : "=r"(u) : "r"(p.w[j / 2]));
    else
      asm volatile("shl.b32 %0, %1, 16;" : "=r"(u) : "r"(p.w[j / 2]));
    return __uint_as_float(u);
#else
    return 0.f;
#endif
  }
  static __device__ __forceinline__ void set(Pack<__nv_bfloat16> &p, int j, float v) {
    set_bits(p, j, __bfloat16_as_ushort(__float2bfloat16_rn(v)));
  }
};
#endif

__device__ __forceinline__ bool aligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

// Vector path iff every row starts 16-byte aligned and no vector straddles the
// end of a row. Uniform over the grid.
template <typename T>
__device__ __forceinline__ bool use_vec(int64_t ncols, const void *a, const void *b,
                                        const void *c, const void *d) {
  constexpr int V = Pack<T>::N;
  return (ncols % V) == 0 && aligned16(a) && aligned16(b) && aligned16(c) && aligned16(d);
}

// Number of valid elements in vector slot `slot` of a row (0..V).
template <int V>
__device__ __forceinline__ int slot_valid(int64_t slot, int64_t ncols) {
  const int64_t r = ncols - slot * V;
  return r <= 0 ? 0 : (r >= V ? V : (int)r);
}


// Loads vector slot `slot` of the row at p into the register layout; elements
// past the end of the row (j >= nvalid) are zero. In vector mode nvalid is
// either 0 or V, so a full slot is one 16-byte load.
template <typename T>
__device__ __forceinline__ Pack<T> load_pack(const T *__restrict__ p, int64_t slot, int nvalid, bool vec) {
  typedef typename Elem<T>::bits B;
  constexpr int V = Pack<T>::N;
  Pack<T> r;
  if (vec && nvalid == V) {
    const uint4 u = __ldg(reinterpret_cast<const uint4 *>(p + slot * V));
    r.w[0] = u.x;
    r.w[1] = u.y;
    r.w[2] = u.z;
    r.w[3] = u.w;
  } else {
    r.zero();
    const B *q = reinterpret_cast<const B *>(p) + slot * V;
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (j < nvalid)
        Elem<T>::set_bits(r, j, q[j]);
  }
  return r;
}

template <typename T>
__device__ __forceinline__ void store_pack(T *__restrict__ p, int64_t slot, int nvalid, bool vec, const Pack<T> &r) {
  typedef typename Elem<T>::bits B;
  constexpr int V = Pack<T>::N;
  if (vec && nvalid == V) {
    *reinterpret_cast<uint4 *>(p + slot * V) = make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]);
  } else {
    B *q = reinterpret_cast<B *>(p) + slot * V;
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (j < nvalid)
        q[j] = Elem<T>::get_bits(r, j);
  }
}

// Sums N values over the LANES threads that share a row; every thread of the
// group gets the same bits back (xor butterflies are symmetric and the
// cross-warp step sums the per-warp values in a fixed order in every thread).
// sbuf ([N][32] in shared memory) is only used when LANES > 32; the row group
// of a thread is warps [w0, w0 + LANES / 32) of the block. Consecutive calls
// must use different buffers: there is no barrier after the read.
template <int LANES, int N, typename ACC>
__device__ __forceinline__ void row_allreduce(ACC (&v)[N], ACC *sbuf) {
  constexpr int W = LANES < 32 ? LANES : 32;
#pragma unroll
  for (int m = W / 2; m > 0; m >>= 1)
#pragma unroll
    for (int i = 0; i < N; ++i)
      v[i] += __shfl_xor_sync(0xffffffffu, v[i], m);
  if constexpr (LANES > 32) {
    constexpr int NW = LANES / 32;
    const int warp = threadIdx.x / 32;
    const int w0 = warp - warp % NW;
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
      for (int i = 0; i < N; ++i)
        sbuf[i * 32 + warp] = v[i];
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < N; ++i) {
      ACC s = sbuf[i * 32 + w0];
#pragma unroll
      for (int k = 1; k < NW; ++k)
        s += sbuf[i * 32 + w0 + k];
      v[i] = s;
    }
  }
}

// ---------------------------------------------------------------------------
// Resident tiers: the row lives in registers (raw T, converted on the fly).
// ---------------------------------------------------------------------------

// PREFETCH: the loads of the group's next row are issued before the current
// row is reduced, so that with a grid of resident blocks the memory latency
// of one row overlaps the reductions of the previous one.
template <typename T, int LANES, int VECS, bool PREFETCH>
__device__ __forceinline__ void fwd_resident(const T *__restrict__ x, T *__restrict__ y,
                                             const T *__restrict__ w, const T *__restrict__ b,
                                             int64_t nrows, int64_t ncols, float eps) {
  using ACC = typename acc_type<T>::type;
  constexpr int V = Pack<T>::N;
  constexpr int THREADS = LANES < 128 ? 128 : LANES;
  constexpr int RPB = THREADS / LANES;
  __shared__ ACC sred[2][32];

  const int lane = threadIdx.x % LANES;
  const int grp = threadIdx.x / LANES;
  const bool vec = use_vec<T>(ncols, x, y, w, b);
  const ACC inv_n = ACC(1) / ACC(ncols);
  // The columns a thread owns do not depend on the row.
  int nv[VECS];
#pragma unroll
  for (int k = 0; k < VECS; ++k)
    nv[k] = slot_valid<V>(lane + k * LANES, ncols);
  const int64_t stride = (int64_t)gridDim.x * RPB;

  Pack<T> xr[VECS];
  if constexpr (PREFETCH) {
    const int64_t row = (int64_t)blockIdx.x * RPB + grp;
#pragma unroll
    for (int k = 0; k < VECS; ++k)
      xr[k] = load_pack(x + row * ncols, lane + k * LANES, row < nrows ? nv[k] : 0, vec);
  }

  // row0 is uniform over the block, so every lane runs the shuffles below
  // even when its own row is past the end.
  for (int64_t row0 = (int64_t)blockIdx.x * RPB; row0 < nrows; row0 += stride) {
    const int64_t row = row0 + grp;
    const bool active = row < nrows;
    const T *xrow = x + row * ncols;

    Pack<T> xn[PREFETCH ? VECS : 1];
    if constexpr (PREFETCH) {
      const int64_t nrow = row + stride;
#pragma unroll
      for (int k = 0; k < VECS; ++k)
        xn[k] = load_pack(x + nrow * ncols, lane + k * LANES, nrow < nrows ? nv[k] : 0, vec);
    } else {
#pragma unroll
      for (int k = 0; k < VECS; ++k)
        xr[k] = load_pack(xrow, lane + k * LANES, active ? nv[k] : 0, vec);
    }

    // Shift K = the row's first element (held by lane 0 of the group).
    ACC shift;
    if constexpr (LANES <= 32) {
      shift = __shfl_sync(0xffffffffu, Elem<T>::get(xr[0], 0), 0, LANES);
    } else {
      const Pack<T> first = load_pack(xrow, 0, active && ncols > 0 ? 1 : 0, false);
      shift = Elem<T>::get(first, 0);
    }

    ACC s[1] = {ACC(0)};
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < nv[k])
          s[0] += Elem<T>::get(xr[k], j) - shift;
    row_allreduce<LANES>(s, sred[0]);
    const ACC mean = s[0] * inv_n; // mean of x - shift

    // Second pass over the registers: sum of squared deviations.
    ACC q[1] = {ACC(0)};
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < nv[k]) {
          const ACC d = (Elem<T>::get(xr[k], j) - shift) - mean;
          q[0] += d * d;
        }
    row_allreduce<LANES>(q, sred[1]);
    const ACC rstd = ln_rstd(max(q[0] * inv_n, ACC(0)), eps);

    if (active) {
      T *yrow = y + row * ncols;
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        if (nv[k] == 0)
          continue;
        const int64_t slot = lane + k * LANES;
        Pack<T> wr, br, o;
        o.zero();
        if (w)
          wr = load_pack(w, slot, nv[k], vec);
        if (b)
          br = load_pack(b, slot, nv[k], vec);
#pragma unroll
        for (int j = 0; j < V; ++j) {
          ACC v = ((Elem<T>::get(xr[k], j) - shift) - mean) * rstd;
          if (w)
            v *= Elem<T>::get(wr, j);
          if (b)
            v += Elem<T>::get(br, j);
          Elem<T>::set(o, j, v);
        }
        store_pack(yrow, slot, nv[k], vec, o);
      }
    }
    if constexpr (PREFETCH) {
#pragma unroll
      for (int k = 0; k < VECS; ++k)
        xr[k] = xn[k];
    }
  }
}

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

template <typename T, int LANES, int VECS, bool SMEM_ACC, bool PREFETCH>
__device__ __forceinline__ void bwd_resident(const T *__restrict__ x, const T *__restrict__ dy,
                                             const T *__restrict__ w, T *__restrict__ dx,
                                             typename acc_type<T>::type *__restrict__ dw_part,
                                             typename acc_type<T>::type *__restrict__ db_part,
                                             int64_t nrows, int64_t ncols, float eps) {
  using ACC = typename acc_type<T>::type;
  constexpr int V = Pack<T>::N;
  constexpr int THREADS = LANES < 128 ? 128 : LANES;
  constexpr int RPB = THREADS / LANES;
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

  const int lane = threadIdx.x % LANES;
  const int grp = threadIdx.x / LANES;
  const bool vec = use_vec<T>(ncols, x, dy, w, dx);
  const ACC inv_n = ACC(1) / ACC(ncols);
  int nv[VECS];
#pragma unroll
  for (int k = 0; k < VECS; ++k)
    nv[k] = slot_valid<V>(lane + k * LANES, ncols);
  const int64_t stride = (int64_t)gridDim.x * RPB;

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
        wres[k] = load_pack(w, lane + k * LANES, nv[k], vec);
  }

  Pack<T> xr[VECS];
  Pack<T> gr[DY_RES ? VECS : 1];
  if constexpr (PREFETCH) {
    const int64_t row = (int64_t)blockIdx.x * RPB + grp;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      xr[k] = load_pack(x + row * ncols, lane + k * LANES, row < nrows ? nv[k] : 0, vec);
      gr[k] = load_pack(dy + row * ncols, lane + k * LANES, row < nrows ? nv[k] : 0, vec);
    }
  }

  for (int64_t row0 = (int64_t)blockIdx.x * RPB; row0 < nrows; row0 += stride) {
    const int64_t row = row0 + grp;
    const bool active = row < nrows;
    const T *xrow = x + row * ncols;
    const T *dyrow = dy + row * ncols;

    Pack<T> xn[PREFETCH ? VECS : 1], gn[PREFETCH ? VECS : 1];
    if constexpr (PREFETCH) {
      const int64_t nrow = row + stride;
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        xn[k] = load_pack(x + nrow * ncols, lane + k * LANES, nrow < nrows ? nv[k] : 0, vec);
        gn[k] = load_pack(dy + nrow * ncols, lane + k * LANES, nrow < nrows ? nv[k] : 0, vec);
      }
    } else {
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        xr[k] = load_pack(xrow, lane + k * LANES, active ? nv[k] : 0, vec);
        if constexpr (DY_RES)
          gr[k] = load_pack(dyrow, lane + k * LANES, active ? nv[k] : 0, vec);
      }
    }

    // Shift K = the row's first element (held by lane 0 of the group).
    ACC shift;
    if constexpr (LANES <= 32) {
      shift = __shfl_sync(0xffffffffu, Elem<T>::get(xr[0], 0), 0, LANES);
    } else {
      const Pack<T> first = load_pack(xrow, 0, active && ncols > 0 ? 1 : 0, false);
      shift = Elem<T>::get(first, 0);
    }

    ACC s[1] = {ACC(0)};
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < nv[k])
          s[0] += Elem<T>::get(xr[k], j) - shift;
    row_allreduce<LANES>(s, sred[0]);
    const ACC mean = s[0] * inv_n; // mean of x - shift

    ACC s3[3] = {ACC(0), ACC(0), ACC(0)};
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      const int64_t slot = lane + k * LANES;
      Pack<T> dyk, wk;
      if constexpr (DY_RES)
        dyk = gr[k];
      else
        dyk = load_pack(dyrow, slot, active ? nv[k] : 0, vec);
      if constexpr (W_RES)
        wk = wres[k];
      else if (w)
        wk = load_pack(w, slot, nv[k], vec);
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < nv[k]) {
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
    row_allreduce<LANES>(s3, sred[1]);
    const ACC rstd = ln_rstd(max(s3[0] * inv_n, ACC(0)), eps);
    const ACC mg = s3[1] * inv_n;
    const ACC mgx = s3[2] * rstd * inv_n;

    if (active) {
      T *dxrow = dx + row * ncols;
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        if (nv[k] == 0)
          continue;
        const int64_t slot = lane + k * LANES;
        Pack<T> dyk, wk, o;
        o.zero();
        if constexpr (DY_RES)
          dyk = gr[k];
        else
          dyk = load_pack(dyrow, slot, nv[k], vec);
        if constexpr (W_RES)
          wk = wres[k];
        else if (w)
          wk = load_pack(w, slot, nv[k], vec);
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
            if (j < nv[k]) {
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
            if (j < nv[k]) {
              dwa[k][j] += dyv * xhat;
              dba[k][j] += dyv;
            }
          }
        }
        store_pack(dxrow, slot, nv[k], vec, o);
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

// ---------------------------------------------------------------------------
// Big kernels: one row per 1024-thread block, the row is streamed twice (the
// second read mostly hits L2). Statistics use Welford per thread (one
// 16-byte chunk at a time) and Chan's merge across threads.
// ---------------------------------------------------------------------------

constexpr int BIG_THREADS = 1024;

template <typename ACC> struct Welford {
  ACC n, mean, m2;
};

// Chan et al.: merge the (count, mean, M2) of two disjoint sets.
template <typename ACC>
__device__ __forceinline__ void welford_merge(Welford<ACC> &a, ACC nb, ACC mb, ACC m2b) {
  const ACC n = a.n + nb;
  if (n == ACC(0))
    return;
  const ACC f = nb / n;
  const ACC delta = mb - a.mean;
  a.mean += delta * f;
  a.m2 += m2b + delta * delta * a.n * f;
  a.n = n;
}

// Folds one chunk of nv (>= 1) elements, shifted by `shift`, into a.
template <typename T, typename ACC>
__device__ __forceinline__ void welford_chunk(Welford<ACC> &a, const Pack<T> &xr, int nv, ACC shift) {
  constexpr int V = Pack<T>::N;
  ACC s = ACC(0);
#pragma unroll
  for (int j = 0; j < V; ++j)
    if (j < nv)
      s += Elem<T>::get(xr, j) - shift;
  const ACC cn = ACC(nv);
  const ACC cm = s / cn;
  ACC c2 = ACC(0);
#pragma unroll
  for (int j = 0; j < V; ++j)
    if (j < nv) {
      const ACC d = (Elem<T>::get(xr, j) - shift) - cm;
      c2 += d * d;
    }
  welford_merge(a, cn, cm, c2);
}

// Block-wide Welford merge plus NS plain sums; every thread gets the same
// bits (warp tree into lane 0, then each thread merges the 32 warps in order).
// sh must hold (3 + NS) * 32 ACC.
template <int NS, typename ACC>
__device__ __forceinline__ void big_allreduce(Welford<ACC> &a, ACC *s, ACC *sh) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const ACC nb = __shfl_down_sync(0xffffffffu, a.n, off);
    const ACC mb = __shfl_down_sync(0xffffffffu, a.mean, off);
    const ACC m2b = __shfl_down_sync(0xffffffffu, a.m2, off);
    welford_merge(a, nb, mb, m2b);
#pragma unroll
    for (int i = 0; i < NS; ++i)
      s[i] += __shfl_down_sync(0xffffffffu, s[i], off);
  }
  const int warp = threadIdx.x / 32;
  __syncthreads(); // the previous row's readers are done with sh
  if ((threadIdx.x & 31) == 0) {
    sh[warp] = a.n;
    sh[32 + warp] = a.mean;
    sh[64 + warp] = a.m2;
#pragma unroll
    for (int i = 0; i < NS; ++i)
      sh[(3 + i) * 32 + warp] = s[i];
  }
  __syncthreads();
  a.n = sh[0];
  a.mean = sh[32];
  a.m2 = sh[64];
#pragma unroll
  for (int i = 0; i < NS; ++i)
    s[i] = sh[(3 + i) * 32];
  for (int k = 1; k < BIG_THREADS / 32; ++k) {
    welford_merge(a, sh[k], sh[32 + k], sh[64 + k]);
#pragma unroll
    for (int i = 0; i < NS; ++i)
      s[i] += sh[(3 + i) * 32 + k];
  }
}

template <typename T>
__device__ __forceinline__ void fwd_big(const T *__restrict__ x, T *__restrict__ y,
                                        const T *__restrict__ w, const T *__restrict__ b,
                                        int64_t nrows, int64_t ncols, float eps) {
  using ACC = typename acc_type<T>::type;
  constexpr int V = Pack<T>::N;
  __shared__ ACC sh[3 * 32];
  const bool vec = use_vec<T>(ncols, x, y, w, b);
  const int64_t nvec = (ncols + V - 1) / V;
  for (int64_t row = blockIdx.x; row < nrows; row += gridDim.x) {
    const T *xrow = x + row * ncols;
    ACC shift = ACC(0);
    if (ncols > 0) {
      const Pack<T> first = load_pack(xrow, 0, 1, false);
      shift = Elem<T>::get(first, 0);
    }
    Welford<ACC> a = {ACC(0), ACC(0), ACC(0)};
    for (int64_t slot = threadIdx.x; slot < nvec; slot += BIG_THREADS) {
      const int nv = slot_valid<V>(slot, ncols);
      welford_chunk<T>(a, load_pack(xrow, slot, nv, vec), nv, shift);
    }
    big_allreduce<0>(a, (ACC *)nullptr, sh);
    const ACC mean = a.mean;
    const ACC rstd = ln_rstd(max(a.m2 / ACC(ncols), ACC(0)), eps);
    T *yrow = y + row * ncols;
    for (int64_t slot = threadIdx.x; slot < nvec; slot += BIG_THREADS) {
      const int nv = slot_valid<V>(slot, ncols);
      const Pack<T> xr = load_pack(xrow, slot, nv, vec);
      Pack<T> wr, br, o;
      o.zero();
      if (w)
        wr = load_pack(w, slot, nv, vec);
      if (b)
        br = load_pack(b, slot, nv, vec);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        ACC v = ((Elem<T>::get(xr, j) - shift) - mean) * rstd;
        if (w)
          v *= Elem<T>::get(wr, j);
        if (b)
          v += Elem<T>::get(br, j);
        Elem<T>::set(o, j, v);
      }
      store_pack(yrow, slot, nv, vec, o);
    }
  }
}

// Backward, big kernel. Pass 1 streams x, dy, w once for the statistics and
// the two gradient sums; everything is shifted by K, the row's first element,
// and sum g*(x - mean) is accumulated as sum g*(x - K), corrected once the
// (shifted) mean is known. Pass 2 re-reads the row (L2), writes dx and
// adds dy*xhat, dy into the block's own partial row: each column belongs to
// one thread, so there are no races.
template <typename T>
__device__ __forceinline__ void bwd_big(const T *__restrict__ x, const T *__restrict__ dy,
                                        const T *__restrict__ w, T *__restrict__ dx,
                                        typename acc_type<T>::type *__restrict__ dw_part,
                                        typename acc_type<T>::type *__restrict__ db_part,
                                        int64_t nrows, int64_t ncols, float eps) {
  using ACC = typename acc_type<T>::type;
  constexpr int V = Pack<T>::N;
  __shared__ ACC sh[5 * 32];
  const bool vec = use_vec<T>(ncols, x, dy, w, dx);
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
    if (ncols > 0) {
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
    const ACC mean = a.mean;
    const ACC rstd = ln_rstd(max(a.m2 * inv_n, ACC(0)), eps);
    const ACC mg = s[0] * inv_n;
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

// ---------------------------------------------------------------------------
// Instantiation: one extern "C" kernel per (direction, tier, dtype).
// ---------------------------------------------------------------------------

// PF: prefetch tiers (tag suffix `p`).
#define LN_FWD_PF(T, S, TAG, L, VV, PF)                                                            \
  extern "C" __global__ void __launch_bounds__((L) < 128 ? 128 : (L))                              \
      layernorm_fwd_##TAG##_##S(const T *x, T *y, const T *w, const T *b, const int64_t nrows,    \
                                const int64_t ncols, const float eps) {                            \
    layer_norm::fwd_resident<T, L, VV, PF>(x, y, w, b, nrows, ncols, eps);                         \
  }
#define LN_FWD(T, S, TAG, L, VV) LN_FWD_PF(T, S, TAG, L, VV, false)

// MINB: minimum resident blocks per SM for __launch_bounds__ (caps the
// registers: l256v4 at 128 so that two blocks fit, the 512-lane small tiers
// at 64).
#define LN_BWD_PF(T, ACC, S, TAG, L, VV, MINB, SM, PF)                                             \
  extern "C" __global__ void __launch_bounds__((L) < 128 ? 128 : (L), MINB)                        \
      layernorm_bwd_##TAG##_##S(const T *x, const T *dy, const T *w, T *dx, ACC *dw_part,          \
                                ACC *db_part, const int64_t nrows, const int64_t ncols,            \
                                const float eps) {                                                 \
    layer_norm::bwd_resident<T, L, VV, SM, PF>(x, dy, w, dx, dw_part, db_part, nrows, ncols, eps); \
  }
#define LN_BWD(T, ACC, S, TAG, L, VV, MINB, SM) LN_BWD_PF(T, ACC, S, TAG, L, VV, MINB, SM, false)

// Every tier below is instantiated for both directions, plus forward-only
// and backward-only (shared memory partials) ones; the host tier tables pick
// a subset, the harness benchmarks them all.
#define LN_TIERS(T, ACC, S, TAG, L, VV, MINB)                                                      \
  LN_FWD(T, S, TAG, L, VV)                                                                         \
  LN_BWD(T, ACC, S, TAG, L, VV, MINB, false)

#define LN_OPS(T, ACC, S)                                                                          \
  LN_TIERS(T, ACC, S, l1v1, 1, 1, 1)                                                               \
  LN_TIERS(T, ACC, S, l2v1, 2, 1, 1)                                                               \
  LN_TIERS(T, ACC, S, l4v1, 4, 1, 1)                                                               \
  LN_TIERS(T, ACC, S, l8v1, 8, 1, 1)                                                               \
  LN_TIERS(T, ACC, S, l16v1, 16, 1, 1)                                                             \
  LN_TIERS(T, ACC, S, l32v1, 32, 1, 1)                                                             \
  LN_TIERS(T, ACC, S, l32v2, 32, 2, 1)                                                             \
  LN_TIERS(T, ACC, S, l32v4, 32, 4, 1)                                                             \
  LN_TIERS(T, ACC, S, l32v8, 32, 8, 1)                                                             \
  LN_TIERS(T, ACC, S, l64v1, 64, 1, 1)                                                             \
  LN_TIERS(T, ACC, S, l64v2, 64, 2, 1)                                                             \
  LN_TIERS(T, ACC, S, l128v1, 128, 1, 1)                                                           \
  LN_TIERS(T, ACC, S, l128v2, 128, 2, 1)                                                           \
  LN_TIERS(T, ACC, S, l128v4, 128, 4, 1)                                                           \
  LN_TIERS(T, ACC, S, l256v1, 256, 1, 1)                                                           \
  LN_TIERS(T, ACC, S, l256v2, 256, 2, 1)                                                           \
  LN_TIERS(T, ACC, S, l256v4, 256, 4, 2)                                                           \
  LN_TIERS(T, ACC, S, l512v4, 512, 4, 1)                                                           \
  LN_FWD(T, S, l512v1, 512, 1)                                                                     \
  LN_FWD(T, S, l512v2, 512, 2)                                                                     \
  LN_FWD(T, S, l1024v2, 1024, 2)                                                                   \
  LN_FWD(T, S, l1024v4, 1024, 4)                                                                   \
  LN_FWD(T, S, l1024v8, 1024, 8)                                                                   \
  LN_BWD(T, ACC, S, l128v2s, 128, 2, 1, true)                                                      \
  LN_BWD(T, ACC, S, l128v4s, 128, 4, 1, true)                                                      \
  LN_BWD(T, ACC, S, l256v2s, 256, 2, 1, true)                                                      \
  LN_BWD(T, ACC, S, l256v4s, 256, 4, 1, true)                                                      \
  LN_BWD(T, ACC, S, l512v1s, 512, 1, 2, true)                                                      \
  LN_BWD(T, ACC, S, l512v2s, 512, 2, 2, true)                                                      \
  LN_BWD(T, ACC, S, l512v4s, 512, 4, 1, true)                                                      \
  LN_BWD(T, ACC, S, l1024v1s, 1024, 1, 1, true)                                                    \
  LN_BWD(T, ACC, S, l1024v2s, 1024, 2, 1, true)                                                    \
  LN_BWD(T, ACC, S, l1024v4s, 1024, 4, 1, true)                                                    \
  LN_FWD_PF(T, S, l512v8p, 512, 8, true)                                                           \
  LN_BWD_PF(T, ACC, S, l512v4sp, 512, 4, 1, true, true)                                            \
  extern "C" __global__ void __launch_bounds__(layer_norm::BIG_THREADS)                           \
      layernorm_fwd_big_##S(const T *x, T *y, const T *w, const T *b, const int64_t nrows,         \
                            const int64_t ncols, const float eps) {                                \
    layer_norm::fwd_big<T>(x, y, w, b, nrows, ncols, eps);                                         \
  }                                                                                                \
  extern "C" __global__ void __launch_bounds__(layer_norm::BIG_THREADS)                           \
      layernorm_bwd_big_##S(const T *x, const T *dy, const T *w, T *dx, ACC *dw_part,              \
                            ACC *db_part, const int64_t nrows, const int64_t ncols,                \
                            const float eps) {                                                     \
    layer_norm::bwd_big<T>(x, dy, w, dx, dw_part, db_part, nrows, ncols, eps);                     \
  }                                                                                                \
  extern "C" __global__ void __launch_bounds__(layer_norm::RED_COLS * layer_norm::RED_SLICES)     \
      layernorm_bwd_reduce_##S(const ACC *dw_part, const ACC *db_part, T *dw, T *db,               \
                               const int64_t nparts, const int64_t ncols) {                        \
    layer_norm::bwd_reduce<T>(dw_part, db_part, dw, db, nparts, ncols);                            \
  }

#ifdef LN_HAS_BF16
LN_OPS(__nv_bfloat16, float, bf16)
#endif

#ifdef LN_HAS_F16
LN_OPS(__half, float, f16)
#endif

LN_OPS(float, float, f32)
LN_OPS(double, double, f64)
