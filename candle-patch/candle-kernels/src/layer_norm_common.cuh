// Fused LayerNorm: primitives shared by the forward (layer_norm_fwd.cuh) and the
// backward (layer_norm_bwd.cuh) kernels. See layer_norm.cu for the launch ABI.
#pragma once

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

__device__ __forceinline__ bool aligned(const void *p, uintptr_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0;
}

// How a row's vector slots are loaded and stored, uniform over the grid:
// VEC_FULL, one 16-byte access per slot, when every row starts 16-byte aligned
// and no vector straddles the end of a row; VEC_HALF, two 8-byte accesses, when
// that holds for half vectors (f32 rows of 4k + 2 elements, 16-bit rows of
// 8k + 4, e.g. 2500); else element by element.
enum VecMode { VEC_NONE = 0, VEC_HALF = 1, VEC_FULL = 2 };

template <typename T>
__device__ __forceinline__ int use_vec(int64_t ncols, const void *a, const void *b,
                                       const void *c, const void *d) {
  constexpr int V = Pack<T>::N;
  if ((ncols % V) == 0 && aligned(a, 16) && aligned(b, 16) && aligned(c, 16) && aligned(d, 16))
    return VEC_FULL;
  if (V > 2 && (ncols % (V / 2)) == 0 && aligned(a, 8) && aligned(b, 8) && aligned(c, 8) && aligned(d, 8))
    return VEC_HALF;
  return VEC_NONE;
}

// Number of valid elements in vector slot `slot` of a row (0..V).
template <int V>
__device__ __forceinline__ int slot_valid(int64_t slot, int64_t ncols) {
  const int64_t r = ncols - slot * V;
  return r <= 0 ? 0 : (r >= V ? V : (int)r);
}


// The 16 bytes at address a (2-byte aligned) as four 32-bit words, in the
// widest aligned pieces: one 16-byte load, two 8-byte, 4 + 8 + 4 bytes, or (a
// 16-bit row that starts at an odd element) 2 + 4 + 4 + 4 + 2 bytes joined by
// funnel shifts. Nothing outside the 16 bytes is read. The branch depends on
// a % 16 only, the same for every slot of a row.
__device__ __forceinline__ void load_words(uintptr_t a, uint32_t (&w)[4]) {
  if ((a & 15) == 0) {
    const uint4 u = __ldg(reinterpret_cast<const uint4 *>(a));
    w[0] = u.x;
    w[1] = u.y;
    w[2] = u.z;
    w[3] = u.w;
  } else if ((a & 7) == 0) {
    const uint2 lo = __ldg(reinterpret_cast<const uint2 *>(a));
    const uint2 hi = __ldg(reinterpret_cast<const uint2 *>(a + 8));
    w[0] = lo.x;
    w[1] = lo.y;
    w[2] = hi.x;
    w[3] = hi.y;
  } else if ((a & 3) == 0) {
    const uint2 mid = __ldg(reinterpret_cast<const uint2 *>(a + 4));
    w[0] = __ldg(reinterpret_cast<const uint32_t *>(a));
    w[1] = mid.x;
    w[2] = mid.y;
    w[3] = __ldg(reinterpret_cast<const uint32_t *>(a + 12));
  } else {
    const uint32_t h0 = __ldg(reinterpret_cast<const unsigned short *>(a));
    const uint32_t w1 = __ldg(reinterpret_cast<const uint32_t *>(a + 2));
    const uint32_t w2 = __ldg(reinterpret_cast<const uint32_t *>(a + 6));
    const uint32_t w3 = __ldg(reinterpret_cast<const uint32_t *>(a + 10));
    const uint32_t h7 = __ldg(reinterpret_cast<const unsigned short *>(a + 14));
    w[0] = h0 | (w1 << 16);
    w[1] = __funnelshift_r(w1, w2, 16);
    w[2] = __funnelshift_r(w2, w3, 16);
    w[3] = __funnelshift_r(w3, h7, 16);
  }
}

// Stores four 32-bit words to the 16 bytes at address a, as load_words reads them.
__device__ __forceinline__ void store_words(uintptr_t a, const uint32_t (&w)[4]) {
  if ((a & 15) == 0) {
    *reinterpret_cast<uint4 *>(a) = make_uint4(w[0], w[1], w[2], w[3]);
  } else if ((a & 7) == 0) {
    *reinterpret_cast<uint2 *>(a) = make_uint2(w[0], w[1]);
    *reinterpret_cast<uint2 *>(a + 8) = make_uint2(w[2], w[3]);
  } else if ((a & 3) == 0) {
    *reinterpret_cast<uint32_t *>(a) = w[0];
    *reinterpret_cast<uint2 *>(a + 4) = make_uint2(w[1], w[2]);
    *reinterpret_cast<uint32_t *>(a + 12) = w[3];
  } else {
    *reinterpret_cast<unsigned short *>(a) = (unsigned short)w[0];
    *reinterpret_cast<uint32_t *>(a + 2) = __funnelshift_r(w[0], w[1], 16);
    *reinterpret_cast<uint32_t *>(a + 6) = __funnelshift_r(w[1], w[2], 16);
    *reinterpret_cast<uint32_t *>(a + 10) = __funnelshift_r(w[2], w[3], 16);
    *reinterpret_cast<unsigned short *>(a + 14) = (unsigned short)(w[3] >> 16);
  }
}

// Loads vector slot `slot` of the row at p into the register layout; elements
// past the end of the row (j >= nvalid) are zero. In VEC_FULL mode nvalid is
// either 0 or V, so a full slot is one 16-byte load; in VEC_HALF mode it is 0,
// V / 2 or V, a multiple of 8-byte loads. WORDS (the streaming kernels and the
// backward's `words` instances only: in the other instances the extra path
// costs registers) loads a full slot of a row without vectors as load_words
// does, instead of element by element.
template <typename T, bool WORDS = false>
__device__ __forceinline__ Pack<T> load_pack(const T *__restrict__ p, int64_t slot, int nvalid, int vec) {
  typedef typename Elem<T>::bits B;
  constexpr int V = Pack<T>::N;
  Pack<T> r;
  if (vec == VEC_FULL && nvalid == V) {
    const uint4 u = __ldg(reinterpret_cast<const uint4 *>(p + slot * V));
    r.w[0] = u.x;
    r.w[1] = u.y;
    r.w[2] = u.z;
    r.w[3] = u.w;
  } else if (vec == VEC_HALF && nvalid > 0) {
    const uint2 *q = reinterpret_cast<const uint2 *>(p + slot * V);
    const uint2 lo = __ldg(q);
    const uint2 hi = nvalid == V ? __ldg(q + 1) : make_uint2(0u, 0u);
    r.w[0] = lo.x;
    r.w[1] = lo.y;
    r.w[2] = hi.x;
    r.w[3] = hi.y;
  } else if (WORDS && nvalid == V) {
    load_words(reinterpret_cast<uintptr_t>(p + slot * V), r.w);
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

template <typename T, bool WORDS = false>
__device__ __forceinline__ void store_pack(T *__restrict__ p, int64_t slot, int nvalid, int vec, const Pack<T> &r) {
  typedef typename Elem<T>::bits B;
  constexpr int V = Pack<T>::N;
  if (vec == VEC_FULL && nvalid == V) {
    *reinterpret_cast<uint4 *>(p + slot * V) = make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]);
  } else if (vec == VEC_HALF && nvalid > 0) {
    uint2 *q = reinterpret_cast<uint2 *>(p + slot * V);
    q[0] = make_uint2(r.w[0], r.w[1]);
    if (nvalid == V)
      q[1] = make_uint2(r.w[2], r.w[3]);
  } else if (WORDS && nvalid == V) {
    store_words(reinterpret_cast<uintptr_t>(p + slot * V), r.w);
  } else {
    B *q = reinterpret_cast<B *>(p) + slot * V;
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (j < nvalid)
        q[j] = Elem<T>::get_bits(r, j);
  }
}

// Slot `slot` of a row span that starts at p (p may precede the buffer when lo > 0): elements
// [lo, hi) of the slot, the others zero. A full slot is one 16-byte load where the span starts
// on a 16-byte boundary (`aligned`: the block takes spans), else read as load_words does; the
// elements before lo and from hi on are not read.
template <typename T>
__device__ __forceinline__ Pack<T> load_span(const T *p, int64_t slot, int lo, int hi, bool aligned) {
  typedef typename Elem<T>::bits B;
  constexpr int V = Pack<T>::N;
  Pack<T> r;
  if (lo == 0 && hi == V && aligned) {
    const uint4 u = __ldg(reinterpret_cast<const uint4 *>(p + slot * V));
    r.w[0] = u.x;
    r.w[1] = u.y;
    r.w[2] = u.z;
    r.w[3] = u.w;
  } else if (lo == 0 && hi == V) {
    load_words(reinterpret_cast<uintptr_t>(p + slot * V), r.w);
  } else {
    r.zero();
    const B *q = reinterpret_cast<const B *>(p) + slot * V;
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (j >= lo && j < hi)
        Elem<T>::set_bits(r, j, q[j]);
  }
  return r;
}

// Stores elements [lo, hi) of slot `slot` of a row span that starts at p, as load_span reads them.
template <typename T>
__device__ __forceinline__ void store_span(T *p, int64_t slot, int lo, int hi, const Pack<T> &r, bool aligned) {
  typedef typename Elem<T>::bits B;
  constexpr int V = Pack<T>::N;
  if (lo == 0 && hi == V && aligned) {
    // One 16-byte store: as a plain uint4 store, ptxas splits the first slot's into four
    // 32-bit stores (ncu, H200, 2026-12-04: 4x the sectors).
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p + slot * V), "r"(r.w[0]), "r"(r.w[1]),
                 "r"(r.w[2]), "r"(r.w[3])
                 : "memory");
  } else if (lo == 0 && hi == V) {
    store_words(reinterpret_cast<uintptr_t>(p + slot * V), r.w);
  } else {
    B *q = reinterpret_cast<B *>(p) + slot * V;
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (j >= lo && j < hi)
        q[j] = Elem<T>::get_bits(r, j);
  }
}

// Copies of 16 and 8 bytes from global to shared memory that complete asynchronously
// (cp.async, sm_80+) until cp_async_wait_all; `bytes` < 8 zero-fills the rest. Older devices
// copy through registers.
__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src) : "memory");
#else
  *reinterpret_cast<uint4 *>(dst) = __ldg(reinterpret_cast<const uint4 *>(src));
#endif
}

__device__ __forceinline__ void cp_async8(void *dst, const void *src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(s), "l"(src), "r"(bytes) : "memory");
#else
  *reinterpret_cast<uint2 *>(dst) = bytes == 8 ? __ldg(reinterpret_cast<const uint2 *>(src)) : make_uint2(0u, 0u);
#endif
}

// Closes the group of copies issued since the last one.
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

// Waits for every copy of the thread; other threads see them after a barrier.
__device__ __forceinline__ void cp_async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 0;" ::: "memory");
#endif
}

// Waits for the copies of the thread but its N most recent groups.
template <int N> __device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

// One element as ACC, and an ACC as an element (rounded to nearest).
__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ double to_acc(double v) { return v; }
template <typename T> __device__ __forceinline__ T from_acc(typename acc_type<T>::type v) { return v; }
#ifdef LN_HAS_F16
__device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ __half from_acc<__half>(float v) { return __float2half_rn(v); }
#endif
#ifdef LN_HAS_BF16
__device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
#endif

// 16-byte words of shared memory that hold `elems` consecutive elements starting anywhere in a
// word.
template <typename T> __host__ __device__ __forceinline__ int64_t tile_words(int64_t elems) {
  return (elems * (int64_t)sizeof(T) + 15) / 16 + 1;
}

// Element offset of p in its 16-byte word.
template <typename T> __device__ __forceinline__ int word_offset(const T *p) {
  return (int)((reinterpret_cast<uintptr_t>(p) & 15) / sizeof(T));
}

// Copies elements [e0, e1) of p, a tensor of n elements, to s, the block's THREADS threads
// together: word i of s is the 16-byte word of p + e0 (rounded down to a word), plus i. Words
// wholly inside the tensor with cp_async16 (wait with cp_async_wait), the others element by
// element, only the range's elements.
template <typename T, int THREADS>
__device__ __forceinline__ void copy_tile_in(uint4 *s, const T *p, int64_t n, int64_t e0, int64_t e1) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p + e0), b = reinterpret_cast<uintptr_t>(p + e1);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = reinterpret_cast<uintptr_t>(p + n);
  const uintptr_t a0 = a & ~uintptr_t(15);
  const int64_t nw = (int64_t)((b - a0 + 15) / 16);
  for (int64_t i = threadIdx.x; i < nw; i += THREADS) {
    const uintptr_t g = a0 + 16 * (uintptr_t)i;
    if (g >= lo && g + 16 <= hi) {
      cp_async16(s + i, reinterpret_cast<const void *>(g));
    } else {
      for (int j = 0; j < 16 / (int)sizeof(T); ++j) {
        const uintptr_t e = g + j * sizeof(T);
        if (e >= a && e < b)
          reinterpret_cast<T *>(s + i)[j] = *reinterpret_cast<const T *>(e);
      }
    }
  }
}

// Writes elements [e0, e1) of p from s, laid out as copy_tile_in lays them: whole words with
// one 16-byte store, the range's first and last words element by element (their other
// elements are another block's).
template <typename T, int THREADS>
__device__ __forceinline__ void copy_tile_out(T *p, const uint4 *s, int64_t e0, int64_t e1) {
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

// Copies vector slot `slot` of the row at p (nvalid elements, the others zero, as load_pack
// loads it) to the 16 bytes at dst in shared memory: with cp_async16 or cp_async8 for VEC_FULL
// and VEC_HALF rows, element by element otherwise.
template <typename T>
__device__ __forceinline__ void stage_slot(uint4 *dst, const T *p, int64_t slot, int nvalid, int vec) {
  constexpr int V = Pack<T>::N;
  if (vec == VEC_FULL) {
    cp_async16(dst, p + slot * V);
  } else if (vec == VEC_HALF) {
    cp_async8(dst, p + slot * V, 8);
    cp_async8(reinterpret_cast<char *>(dst) + 8, nvalid == V ? p + slot * V + V / 2 : p + slot * V,
              nvalid == V ? 8 : 0);
  } else {
    const Pack<T> r = load_pack<T>(p, slot, nvalid, vec);
    *dst = make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]);
  }
}

// The elements of the first 16-byte word of row `row` before the row, when the rows that a
// row group processes (row, row + stride, ...; stride 0: only `row`) all start at the same
// offset in a 16-byte word in each of a, b and c (the same offset in all three, and
// stride * ncols a multiple of V), and the row then spans at most `max_slots` words; else -1.
// A kernel that takes such a group's rows as spans of whole aligned words (load_span) loads
// them with one 16-byte load per word instead of pieces.
template <typename T>
__device__ __forceinline__ int span_phase(const void *a, const void *b, const void *c, int64_t row,
                                          int64_t ncols, int64_t max_slots, int64_t stride) {
  constexpr int V = Pack<T>::N;
  const uintptr_t pa = reinterpret_cast<uintptr_t>(a);
  const int first = (int)(pa / sizeof(T) % V);
  if (pa % sizeof(T) != 0 || (stride * ncols) % V != 0 ||
      ((reinterpret_cast<uintptr_t>(b) ^ pa) & 15) != 0 || ((reinterpret_cast<uintptr_t>(c) ^ pa) & 15) != 0)
    return -1;
  const int phase = (int)((first + row % V * (ncols % V)) % V);
  return (ncols + phase + V - 1) / V <= max_slots ? phase : -1;
}

struct SumOp {
  template <typename A> __device__ __forceinline__ A operator()(A a, A b) const { return a + b; }
};
struct MaxOp {
  template <typename A> __device__ __forceinline__ A operator()(A a, A b) const { return max(a, b); }
};

// Reduces N values with op (a sum by default) over the LANES threads that
// share a row; every thread of the group gets the same bits back (xor
// butterflies are symmetric and the cross-warp step combines the per-warp
// values in a fixed order in every thread). sbuf ([N][32] in shared memory) is
// only used when LANES > 32; the row group of a thread is warps
// [w0, w0 + LANES / 32) of the block. Consecutive calls must use different
// buffers: there is no barrier after the read.
template <int LANES, int N, typename ACC, typename OP = SumOp>
__device__ __forceinline__ void row_allreduce(ACC (&v)[N], ACC *sbuf, OP op = OP()) {
  constexpr int W = LANES < 32 ? LANES : 32;
#pragma unroll
  for (int m = W / 2; m > 0; m >>= 1)
#pragma unroll
    for (int i = 0; i < N; ++i)
      v[i] = op(v[i], __shfl_xor_sync(0xffffffffu, v[i], m));
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
        s = op(s, sbuf[i * 32 + w0 + k]);
      v[i] = s;
    }
  }
}

// The prologue of every resident kernel: a row group of LANES threads holds a
// row, thread `lane` owns the vector slots lane + k * LANES (k < VECS) of every
// row its group processes, groups step through the rows grid-stride.
template <typename T, int LANES, int VECS> struct RowGroup {
  using ACC = typename acc_type<T>::type;
  static constexpr int V = Pack<T>::N;
  static constexpr int THREADS = LANES < 128 ? 128 : LANES;
  static constexpr int RPB = THREADS / LANES;

  int lane, grp;
  // Valid elements of each owned slot: the columns a thread owns do not depend on the row.
  int nv[VECS];
  int64_t stride;
  ACC inv_n;

  // phase: the group takes its rows as spans that start `phase` elements before the row
  // (span_phase): slot s of a span holds the row's columns s * V - phase + j, and the first
  // `phase` elements of slot 0 are not the row's.
  __device__ __forceinline__ explicit RowGroup(int64_t ncols, int phase = 0) {
    lane = threadIdx.x % LANES;
    grp = threadIdx.x / LANES;
#pragma unroll
    for (int k = 0; k < VECS; ++k)
      nv[k] = slot_valid<V>(lane + k * LANES, ncols + phase);
    stride = (int64_t)gridDim.x * RPB;
    inv_n = ACC(1) / ACC(ncols);
  }

  // First row of the group in this block; row0 is uniform over the block.
  __device__ __forceinline__ int64_t first_row0() const { return (int64_t)blockIdx.x * RPB; }

  // The shift K = the row's first element (held by lane 0 of the group).
  __device__ __forceinline__ ACC shift(const Pack<T> (&xr)[VECS], const T *xrow, bool active,
                                       int64_t ncols) const {
    if constexpr (LANES <= 32) {
      return __shfl_sync(0xffffffffu, Elem<T>::get(xr[0], 0), 0, LANES);
    } else {
      const Pack<T> first = load_pack(xrow, 0, active && ncols > 0 ? 1 : 0, false);
      return Elem<T>::get(first, 0);
    }
  }

  // Mean of x - shift over the row; every thread of the group gets the same bits. lo0: the
  // first element of the thread's slot 0 in the row (not 0 in the first slot of a span).
  __device__ __forceinline__ ACC mean(const Pack<T> (&xr)[VECS], ACC shift, ACC *sbuf, int lo0 = 0) const {
    ACC s[1] = {ACC(0)};
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < nv[k] && (k > 0 || j >= lo0))
          s[0] += Elem<T>::get(xr[k], j) - shift;
    row_allreduce<LANES>(s, sbuf);
    return s[0] * inv_n;
  }
};

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

} // namespace layer_norm
