// Fused LayerNorm forward and backward.
//
// Launch ABI (shared with candle-nn/src/layer_norm_cuda.rs); the tiers are
// listed in layer_norm_tiers.cuh:
//
// T is the storage dtype, ACC the accumulation type (float, double for f64),
// V = 16 / sizeof(T) elements per 16-byte vector and nvec = ceil(ncols / V).
// A "tier" (LANES, VECS) lets LANES threads cooperate on one row, each thread
// holding VECS vectors of the row in registers, so rows of up to
// LANES * VECS * V elements stay resident. Thread `lane` of a row group owns
// the vector slots `lane + k * LANES`, k < VECS. The host picks the first tier
// with LANES * VECS >= nvec; beyond the last one, the `big` forward and the
// split backward (two kernels, below).
//
//   LANES <= 64  : blockDim.x = 128, 128 / LANES rows per block.
//   LANES >= 128 : blockDim.x = LANES, one row per block.
//   big          : blockDim.x = 1024, one row per block, row not resident.
//   split        : blockDim.x = the tier's LANES, gridDim.x = segments (stats)
//                  or column blocks (dx) of the tier's LANES * VECS vectors.
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
// use Welford per thread and Chan's merge across threads; the split backward
// adds its segments' M2 about the row's mean, M2_s + n_s * (mean_s - mean)^2.
// In addition every row is shifted by its first element K before anything is
// summed, and the mean is kept as K + m with m small: for a row with mean 1e4
// and std 1e-2 the float nearest to the mean is up to 5e-4 (0.05 std) off,
// while x - K is exact and (x - K) - m keeps xhat accurate to ~1e-5.

#include "layer_norm_bwd.cuh"
#include "layer_norm_fwd.cuh"
#include "layer_norm_softmax.cuh"
#include "layer_norm_tiers.cuh"

// ---------------------------------------------------------------------------
// Instantiation: one extern "C" kernel per (direction, tier, dtype) of the
// registry, plus the big, split and reduce kernels.
// ---------------------------------------------------------------------------

// The forward of a tier, named NAME; RMS: the RMS norm; WORDS: the instance for
// 16-bit rows without vectors (see fwd_resident).
#define NORM_FWD_KERNEL(NAME, RMS, WORDS, T, L, VV, PF)                                            \
  extern "C" __global__ void __launch_bounds__((L) < 128 ? 128 : (L))                              \
      NAME(const T *x, T *y, const T *w, const T *b, const int64_t nrows, const int64_t ncols,     \
           const float eps) {                                                                      \
    layer_norm::fwd_resident<T, L, VV, PF, RMS, WORDS>(x, y, w, b, nrows, ncols, eps);             \
  }

#define LN_FWD_KERNEL(T, ACC, S, TAG, L, VV, SM, PF, MINB)                                         \
  NORM_FWD_KERNEL(layernorm_fwd_##TAG##_##S, false, false, T, L, VV, PF)

// The backward of a tier, named NAME; RMS: the RMS norm; WORDS: the instance
// for 16-bit rows without vectors (see bwd_resident).
#define NORM_BWD_KERNEL(NAME, RMS, WORDS, T, ACC, L, VV, SM, PF, MINB)                             \
  extern "C" __global__ void __launch_bounds__((L) < 128 ? 128 : (L), MINB)                        \
      NAME(const T *x, const T *dy, const T *w, T *dx, ACC *dw_part, ACC *db_part,                 \
           const int64_t nrows, const int64_t ncols, const float eps) {                            \
    layer_norm::bwd_resident<T, L, VV, (SM) != 0, PF, RMS, WORDS, (SM) >= 2, (SM) == 3>(           \
        x, dy, w, dx, dw_part, db_part, nrows, ncols, eps);                                        \
  }

#define LN_BWD_KERNEL(T, ACC, S, TAG, L, VV, SM, PF, MINB)                                         \
  NORM_BWD_KERNEL(layernorm_bwd_##TAG##_##S, false, false, T, ACC, L, VV, SM, PF, MINB)

// The layer norm's backward of a tile tier (LAYER_NORM_BWD_TILE_TIERS): the ABI of the resident
// tiers plus tile_rows, the rows of a tile (a multiple of LAYER_NORM_BWD_TILE_THREADS / L).
#define LN_BWD_TILE_KERNEL(T, ACC, S, TAG, L, VV, SM, PF, MINB)                                    \
  extern "C" __global__ void __launch_bounds__(LAYER_NORM_BWD_TILE_THREADS, MINB)                 \
      layernorm_bwd_##TAG##_##S(const T *x, const T *dy, const T *w, T *dx, ACC *dw_part,         \
                                ACC *db_part, const int64_t nrows, const int64_t ncols,           \
                                const int tile_rows, const float eps) {                           \
    layer_norm::bwd_tile<T, L, VV, layer_norm::tile_reread<T>(VV)>(x, dy, w, dx, dw_part, db_part, \
                                                                   nrows, ncols, tile_rows, eps);  \
  }

// The RMS norm, same tiers and ABI (rmsnorm_fwd_<tier>_<dtype>, rmsnorm_bwd_<tier>_<dtype>: b and
// db_part are NULL); its weight partials are added by layernorm_bwd_reduce.
#define RN_FWD_KERNEL(T, ACC, S, TAG, L, VV, SM, PF, MINB)                                         \
  NORM_FWD_KERNEL(rmsnorm_fwd_##TAG##_##S, true, false, T, L, VV, PF)

#define RN_BWD_KERNEL(T, ACC, S, TAG, L, VV, SM, PF, MINB)                                         \
  NORM_BWD_KERNEL(rmsnorm_bwd_##TAG##_##S, true, false, T, ACC, L, VV, SM, PF, MINB)

// The instances for 16-bit rows without vectors (odd widths), which load and
// store a full slot in aligned pieces: layernorm_<dir>_<tier>_words_<dtype>,
// rmsnorm_<dir>_<tier>_words_<dtype>, same ABI, for the tiers f16 and bf16 ship
// (the backward's of several rows per block and the forward's of several rows
// per warp keep element accesses, see bwd_resident and fwd_resident).
#define LN_FWD_WORDS_KERNEL(T, ACC, S, TAG, L, VV, SM, PF, MINB)                                   \
  NORM_FWD_KERNEL(layernorm_fwd_##TAG##_words_##S, false, true, T, L, VV, PF)
#define RN_FWD_WORDS_KERNEL(T, ACC, S, TAG, L, VV, SM, PF, MINB)                                   \
  NORM_FWD_KERNEL(rmsnorm_fwd_##TAG##_words_##S, true, true, T, L, VV, PF)
#define LN_BWD_WORDS_KERNEL(T, ACC, S, TAG, L, VV, SM, PF, MINB)                                   \
  NORM_BWD_KERNEL(layernorm_bwd_##TAG##_words_##S, false, true, T, ACC, L, VV, SM, PF, MINB)
#define RN_BWD_WORDS_KERNEL(T, ACC, S, TAG, L, VV, SM, PF, MINB)                                   \
  NORM_BWD_KERNEL(rmsnorm_bwd_##TAG##_words_##S, true, true, T, ACC, L, VV, SM, PF, MINB)

// The softmax over the last dimension, same tiers (layer_norm_softmax.cuh), no parameters:
//   softmax_fwd_<tier>_<dtype>(x, y, nrows, ncols)
//   softmax_bwd_<tier>_<dtype>(y, dy, dx, nrows, ncols)
// The backward takes the backward's tiers; with no partials to keep, their `s` flag changes nothing.
#define SM_FWD_KERNEL(T, ACC, S, TAG, L, VV, SM, PF, MINB)                                         \
  extern "C" __global__ void __launch_bounds__((L) < 128 ? 128 : (L))                              \
      softmax_fwd_##TAG##_##S(const T *x, T *y, const int64_t nrows, const int64_t ncols) {        \
    layer_norm::softmax_fwd_resident<T, L, VV, PF>(x, y, nrows, ncols);                            \
  }

#define SM_BWD_KERNEL(T, ACC, S, TAG, L, VV, SM, PF, MINB)                                         \
  extern "C" __global__ void __launch_bounds__((L) < 128 ? 128 : (L))                              \
      softmax_bwd_##TAG##_##S(const T *y, const T *dy, T *dx, const int64_t nrows,                 \
                              const int64_t ncols) {                                               \
    layer_norm::softmax_bwd_resident<T, L, VV, PF>(y, dy, dx, nrows, ncols);                       \
  }

// The registry's X(tag, lanes, vecs, smem, prefetch, min_blocks) rows, bound
// to the dtype LN_T / LN_ACC / LN_S defined around each LN_OPS expansion below
// (through LN_EXPAND so that LN_S is replaced before it is pasted).
#define LN_EXPAND(M, ...) M(__VA_ARGS__)
#define LN_FWD_ROW(TAG, L, VV, SM, PF, MINB)                                                       \
  LN_EXPAND(LN_FWD_KERNEL, LN_T, LN_ACC, LN_S, TAG, L, VV, SM, PF, MINB)
#define LN_BWD_ROW(TAG, L, VV, SM, PF, MINB)                                                       \
  LN_EXPAND(LN_BWD_KERNEL, LN_T, LN_ACC, LN_S, TAG, L, VV, SM, PF, MINB)
#define RN_FWD_ROW(TAG, L, VV, SM, PF, MINB)                                                       \
  LN_EXPAND(RN_FWD_KERNEL, LN_T, LN_ACC, LN_S, TAG, L, VV, SM, PF, MINB)
#define RN_BWD_ROW(TAG, L, VV, SM, PF, MINB)                                                       \
  LN_EXPAND(RN_BWD_KERNEL, LN_T, LN_ACC, LN_S, TAG, L, VV, SM, PF, MINB)
#define SM_FWD_ROW(TAG, L, VV, SM, PF, MINB)                                                       \
  LN_EXPAND(SM_FWD_KERNEL, LN_T, LN_ACC, LN_S, TAG, L, VV, SM, PF, MINB)
#define SM_BWD_ROW(TAG, L, VV, SM, PF, MINB)                                                       \
  LN_EXPAND(SM_BWD_KERNEL, LN_T, LN_ACC, LN_S, TAG, L, VV, SM, PF, MINB)
#define LN_FWD_WORDS_ROW(TAG, L, VV, SM, PF, MINB)                                                 \
  LN_WORDS(LN_EXPAND(LN_FWD_WORDS_KERNEL, LN_T, LN_ACC, LN_S, TAG, L, VV, SM, PF, MINB))
#define RN_FWD_WORDS_ROW(TAG, L, VV, SM, PF, MINB)                                                 \
  LN_WORDS(LN_EXPAND(RN_FWD_WORDS_KERNEL, LN_T, LN_ACC, LN_S, TAG, L, VV, SM, PF, MINB))
#define LN_BWD_WORDS_ROW(TAG, L, VV, SM, PF, MINB)                                                 \
  LN_WORDS(LN_EXPAND(LN_BWD_WORDS_KERNEL, LN_T, LN_ACC, LN_S, TAG, L, VV, SM, PF, MINB))
#define RN_BWD_WORDS_ROW(TAG, L, VV, SM, PF, MINB)                                                 \
  LN_WORDS(LN_EXPAND(RN_BWD_WORDS_KERNEL, LN_T, LN_ACC, LN_S, TAG, L, VV, SM, PF, MINB))

// The backward rows that only some dtypes ship (X16: f16 and bf16, X32: f32 and
// f64): LN_IF16 / LN_IF32 keep or drop them, set for each dtype below; the
// harness (LAYER_NORM_SWEEP) compiles them for every dtype. LN_WORDS keeps the
// `words` instances (16-bit dtypes only).
#define LN_BWD_ROW16(...) LN_IF16(LN_BWD_ROW(__VA_ARGS__))
#define LN_BWD_ROW32(...) LN_IF32(LN_BWD_ROW(__VA_ARGS__))
#define RN_BWD_ROW16(...) LN_IF16(RN_BWD_ROW(__VA_ARGS__))
#define RN_BWD_ROW32(...) LN_IF32(RN_BWD_ROW(__VA_ARGS__))
#define SM_BWD_ROW16(...) LN_IF16(SM_BWD_ROW(__VA_ARGS__))
#define SM_BWD_ROW32(...) LN_IF32(SM_BWD_ROW(__VA_ARGS__))
#define LN_BWD_TILE_ROW(TAG, L, VV, SM, PF, MINB)                                                  \
  LN_EXPAND(LN_BWD_TILE_KERNEL, LN_T, LN_ACC, LN_S, TAG, L, VV, SM, PF, MINB)
#define LN_BWD_TILE_ROW16(...) LN_IF16(LN_BWD_TILE_ROW(__VA_ARGS__))
#define LN_BWD_TILE_ROW32(...) LN_IF32(LN_BWD_TILE_ROW(__VA_ARGS__))
#define LN_KEEP(...) __VA_ARGS__
#define LN_DROP(...)
#ifdef LAYER_NORM_SWEEP
#define LN_SWEEP_ONLY(...) __VA_ARGS__
#else
#define LN_SWEEP_ONLY(...)
#endif

// The split backward (rows past the backward tiers): its two tiers' lanes and vecs.
#define LN_TIER_LANES(TAG, L, VV, SM, PF, MINB) L
#define LN_TIER_VECS(TAG, L, VV, SM, PF, MINB) VV
#define LN_SPLIT_STATS_L LAYER_NORM_BWD_SPLIT_STATS_TIER(LN_TIER_LANES)
#define LN_SPLIT_STATS_V LAYER_NORM_BWD_SPLIT_STATS_TIER(LN_TIER_VECS)
#define LN_SPLIT_DX_L LAYER_NORM_BWD_SPLIT_DX_TIER(LN_TIER_LANES)
#define LN_SPLIT_DX_V LAYER_NORM_BWD_SPLIT_DX_TIER(LN_TIER_VECS)

//   <op>_bwd_split_stats_<dtype>(x, dy, w, stats, nrows, ncols)
//     grid (segments, any), stats [nrows, segments, 4] ACC
//   <op>_bwd_split_dx_<dtype>(x, dy, w, stats, dx, dw_part, db_part, nrows, ncols, eps)
//     grid (column blocks, parts), dw_part / db_part [parts, ncols]
// and, for f16 and bf16 (WORDS, W = words_), <op>_bwd_split_{stats,dx}_words_<dtype>, same ABI,
// for rows that fit no 8-byte vector.
#define LN_SPLIT_KERNELS(T, ACC, S, OP, RMS, W, WORDS)                                             \
  extern "C" __global__ void __launch_bounds__(LN_SPLIT_STATS_L)                                  \
      OP##_bwd_split_stats_##W##S(const T *x, const T *dy, const T *w, ACC *stats,                \
                                  const int64_t nrows, const int64_t ncols) {                     \
    layer_norm::bwd_split_stats<T, LN_SPLIT_STATS_L, LN_SPLIT_STATS_V, RMS, WORDS>(                \
        x, dy, w, stats, nrows, ncols);                                                            \
  }                                                                                                \
  extern "C" __global__ void __launch_bounds__(LN_SPLIT_DX_L)                                     \
      OP##_bwd_split_dx_##W##S(const T *x, const T *dy, const T *w, const ACC *stats, T *dx,      \
                               ACC *dw_part, ACC *db_part, const int64_t nrows,                   \
                               const int64_t ncols, const float eps) {                            \
    layer_norm::bwd_split_dx<T, LN_SPLIT_DX_L, LN_SPLIT_DX_V, LN_SPLIT_STATS_L * LN_SPLIT_STATS_V, \
                             RMS, WORDS>(x, dy, w, stats, dx, dw_part, db_part, nrows, ncols,     \
                                         eps);                                                     \
  }

#ifdef LAYER_NORM_SWEEP
#define LN_SWEEP_TIERS                                                                             \
  LAYER_NORM_FWD_SWEEP_TIERS(LN_FWD_ROW)                                                           \
  LAYER_NORM_BWD_SWEEP_TIERS(LN_BWD_ROW)
#else
#define LN_SWEEP_TIERS
#endif

#define LN_OPS(T, ACC, S)                                                                          \
  extern "C" __global__ void __launch_bounds__(layer_norm::BIG_THREADS)                           \
      layernorm_fwd_big_##S(const T *x, T *y, const T *w, const T *b, const int64_t nrows,         \
                            const int64_t ncols, const float eps) {                                \
    layer_norm::fwd_big<T>(x, y, w, b, nrows, ncols, eps);                                         \
  }                                                                                                \
  LN_SPLIT_KERNELS(T, ACC, S, layernorm, false, , false)                                          \
  LN_WORDS(LN_SPLIT_KERNELS(T, ACC, S, layernorm, false, words_, true))                           \
  extern "C" __global__ void __launch_bounds__(layer_norm::RED_COLS * layer_norm::RED_SLICES)     \
      layernorm_bwd_reduce_##S(const ACC *dw_part, const ACC *db_part, T *dw, T *db,               \
                               const int64_t nparts, const int64_t ncols) {                        \
    layer_norm::bwd_reduce<T>(dw_part, db_part, dw, db, nparts, ncols);                            \
  }                                                                                                \
  extern "C" __global__ void __launch_bounds__(layer_norm::BIG_THREADS)                           \
      rmsnorm_fwd_big_##S(const T *x, T *y, const T *w, const T *b, const int64_t nrows,           \
                          const int64_t ncols, const float eps) {                                  \
    layer_norm::fwd_big<T, true>(x, y, w, b, nrows, ncols, eps);                                   \
  }                                                                                                \
  LN_SPLIT_KERNELS(T, ACC, S, rmsnorm, true, , false)                                             \
  LN_WORDS(LN_SPLIT_KERNELS(T, ACC, S, rmsnorm, true, words_, true))                              \
  extern "C" __global__ void __launch_bounds__(layer_norm::BIG_THREADS)                           \
      softmax_fwd_big_##S(const T *x, T *y, const int64_t nrows, const int64_t ncols) {            \
    layer_norm::softmax_fwd_big<T>(x, y, nrows, ncols);                                            \
  }                                                                                                \
  extern "C" __global__ void __launch_bounds__(layer_norm::BIG_THREADS)                           \
      softmax_bwd_big_##S(const T *y, const T *dy, T *dx, const int64_t nrows,                     \
                          const int64_t ncols) {                                                   \
    layer_norm::softmax_bwd_big<T>(y, dy, dx, nrows, ncols);                                       \
  }                                                                                                \
  LAYER_NORM_FWD_TIERS(LN_FWD_ROW)                                                                 \
  LAYER_NORM_BWD_TIERS(LN_BWD_ROW, LN_BWD_ROW16, LN_BWD_ROW32)                                     \
  LAYER_NORM_BWD_TILE_TIERS(LN_BWD_TILE_ROW, LN_BWD_TILE_ROW16, LN_BWD_TILE_ROW32)                 \
  LAYER_NORM_FWD_TIERS(RN_FWD_ROW)                                                                 \
  LAYER_NORM_BWD_TIERS(RN_BWD_ROW, RN_BWD_ROW16, RN_BWD_ROW32)                                     \
  LAYER_NORM_FWD_TIERS(LN_FWD_WORDS_ROW)                                                           \
  LAYER_NORM_FWD_TIERS(RN_FWD_WORDS_ROW)                                                           \
  LAYER_NORM_BWD_TIERS(LN_BWD_WORDS_ROW, LN_BWD_WORDS_ROW, LN_DROP)                                \
  LAYER_NORM_BWD_TIERS(RN_BWD_WORDS_ROW, RN_BWD_WORDS_ROW, LN_DROP)                                \
  LAYER_NORM_FWD_TIERS(SM_FWD_ROW)                                                                 \
  LAYER_NORM_BWD_TIERS(SM_BWD_ROW, SM_BWD_ROW16, SM_BWD_ROW32)                                     \
  LN_SWEEP_TIERS

#ifdef LN_HAS_BF16
#define LN_T __nv_bfloat16
#define LN_ACC float
#define LN_S bf16
#define LN_IF16 LN_KEEP
#define LN_IF32 LN_SWEEP_ONLY
#define LN_WORDS LN_KEEP
LN_OPS(__nv_bfloat16, float, bf16)
#undef LN_T
#undef LN_ACC
#undef LN_S
#undef LN_IF16
#undef LN_IF32
#undef LN_WORDS
#endif

#ifdef LN_HAS_F16
#define LN_T __half
#define LN_ACC float
#define LN_S f16
#define LN_IF16 LN_KEEP
#define LN_IF32 LN_SWEEP_ONLY
#define LN_WORDS LN_KEEP
LN_OPS(__half, float, f16)
#undef LN_T
#undef LN_ACC
#undef LN_S
#undef LN_IF16
#undef LN_IF32
#undef LN_WORDS
#endif

#define LN_T float
#define LN_ACC float
#define LN_S f32
#define LN_IF16 LN_SWEEP_ONLY
#define LN_IF32 LN_KEEP
#define LN_WORDS LN_DROP
LN_OPS(float, float, f32)
#undef LN_T
#undef LN_ACC
#undef LN_S
#undef LN_IF16
#undef LN_IF32
#undef LN_WORDS

#define LN_T double
#define LN_ACC double
#define LN_S f64
#define LN_IF16 LN_SWEEP_ONLY
#define LN_IF32 LN_KEEP
#define LN_WORDS LN_DROP
LN_OPS(double, double, f64)
#undef LN_T
#undef LN_ACC
#undef LN_S
#undef LN_IF16
#undef LN_IF32
#undef LN_WORDS
