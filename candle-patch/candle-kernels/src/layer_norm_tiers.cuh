// The tier registry of the fused LayerNorm kernels: the one list that the
// kernels (layer_norm.cu), the host (candle-nn, which reads this file as
// `candle_kernels::LAYER_NORM_TIERS`) and the kernel test harness all use.
//
//   X(tag, lanes, vecs, smem, prefetch, min_blocks)
//
// lanes threads share a row, each holding vecs 16-byte vectors of it
// (tag l<lanes>v<vecs>, plus `s` when the backward keeps its dw / db partials
// in dynamic shared memory, `sq` (smem 2) when in addition the layer-norm
// backward takes a block's rows two at a time, `sqa` (smem 3) when it also
// copies the next pair of rows into shared memory while reducing the current
// one, `p` when the kernel prefetches the next row of its group); min_blocks
// is the backward's __launch_bounds__ minimum of resident blocks per SM (it
// caps the registers; the forward ignores it).
//
// The host picks the first tier of a list whose lanes * vecs covers the row's
// vectors, so each list is sorted by lanes * vecs; longer rows use the `big`
// forward and the split backward (one tier for each of its two kernels). Where
// the best tier depends on the element size, the backward list has rows X16
// that only f16 and bf16 ship and rows X32 that only f32 and f64 ship (sorted
// for each dtype; the harness compiles every row for every dtype). The
// shipped lists are what production PTX holds. The sweep lists
// are candidates that only the harness compiles (-DLAYER_NORM_SWEEP) to
// re-tune the shipped lists; moving a tier between the two is a one-line
// change. Both lists were picked from a sweep of every tier on an H200.

#pragma once

#define LAYER_NORM_FWD_TIERS(X)                                                                    \
  X(l1v1, 1, 1, 0, 0, 1)                                                                           \
  X(l2v1, 2, 1, 0, 0, 1)                                                                           \
  X(l4v1, 4, 1, 0, 0, 1)                                                                           \
  X(l8v1, 8, 1, 0, 0, 1)                                                                           \
  X(l16v1, 16, 1, 0, 0, 1)                                                                         \
  X(l32v1, 32, 1, 0, 0, 1)                                                                         \
  X(l32v2, 32, 2, 0, 0, 1)                                                                         \
  X(l32v4, 32, 4, 0, 0, 1)                                                                         \
  X(l64v3, 64, 3, 0, 0, 1)                                                                         \
  X(l128v2, 128, 2, 0, 0, 1)                                                                       \
  X(l64v5, 64, 5, 0, 0, 1)                                                                         \
  X(l128v4, 128, 4, 0, 0, 1)                                                                       \
  X(l256v3, 256, 3, 0, 0, 1)                                                                       \
  X(l256v4, 256, 4, 0, 0, 1)                                                                       \
  X(l320v4, 320, 4, 0, 0, 1)                                                                       \
  X(l512v3, 512, 3, 0, 0, 1)                                                                       \
  X(l512v4, 512, 4, 0, 0, 1)                                                                       \
  X(l512v8p, 512, 8, 0, 1, 1)                                                                      \
  X(l1024v8, 1024, 8, 0, 0, 1)

// The backward holds x, dy and two accumulators per element: fewer vectors
// per thread than the forward, and shared memory partials for the widest rows
// (the host skips an `s` tier when 2 * ncols accumulators exceed the device's
// opt-in shared memory).
#define LAYER_NORM_BWD_TIERS(X, X16, X32)                                                          \
  X(l1v1, 1, 1, 0, 0, 1)                                                                           \
  X(l2v1, 2, 1, 0, 0, 1)                                                                           \
  X(l4v1, 4, 1, 0, 0, 1)                                                                           \
  X(l8v1, 8, 1, 0, 0, 1)                                                                           \
  X(l16v1, 16, 1, 0, 0, 1)                                                                         \
  X(l32v1, 32, 1, 0, 0, 1)                                                                         \
  X(l32v2, 32, 2, 0, 0, 1)                                                                         \
  X16(l64v2, 64, 2, 0, 0, 1)                                                                       \
  X32(l128v1, 128, 1, 0, 0, 1)                                                                     \
  X32(l128v2, 128, 2, 0, 0, 1)                                                                     \
  X16(l128v2sqa, 128, 2, 3, 0, 4)                                                                  \
  X32(l160v2s, 160, 2, 1, 0, 6)                                                                    \
  X16(l160v2sqa, 160, 2, 3, 0, 4)                                                                  \
  X16(l128v3sq, 128, 3, 2, 0, 4)                                                                   \
  X32(l256v2s, 256, 2, 1, 0, 4)                                                                    \
  X16(l256v2sqa, 256, 2, 3, 0, 2)                                                                  \
  X32(l320v2s, 320, 2, 1, 0, 3)                                                                    \
  X16(l320v2sqa, 320, 2, 3, 0, 2)                                                                  \
  X16(l256v3sq, 256, 3, 2, 0, 2)                                                                   \
  X32(l512v2s, 512, 2, 1, 0, 2)                                                                    \
  X16(l512v2sqa, 512, 2, 3, 0, 1)                                                                  \
  X32(l256v5s, 256, 5, 1, 0, 3)                                                                    \
  X16(l320v4sq, 320, 4, 2, 0, 1)                                                                   \
  X32(l512v4sp, 512, 4, 1, 1, 1)                                                                   \
  X16(l512v4sq, 512, 4, 2, 0, 1)                                                                   \
  X(l1024v4s, 1024, 4, 1, 0, 1)

// The layer norm's backward of narrow rows by tiles of consecutive rows staged in shared memory
// (layer_norm_bwd.cuh, bwd_tile): lanes (<= 32) threads a row, each holding vecs 16-byte
// vectors' worth of columns (strided: lane l has columns l + lanes * k), blocks of
// LAYER_NORM_BWD_TILE_THREADS threads, tiles of about LAYER_NORM_BWD_TILE_BYTES bytes of x; a
// lane with more than LAYER_NORM_BWD_TILE_REREAD columns rereads x and dy from shared memory
// in each pass over a row instead of holding them. The host takes the first that holds the row
// where it beats LAYER_NORM_BWD_TIERS (layer_norm_cuda.rs, tile_tier; the RMS norm keeps those).
#define LAYER_NORM_BWD_TILE_TIERS(X, X16, X32)                                                     \
  X16(l16v1t, 16, 1, 0, 0, 1)                                                                      \
  X16(l32v1t, 32, 1, 0, 0, 1)                                                                      \
  X16(l32v2t, 32, 2, 0, 0, 1)                                                                      \
  X16(l32v4t, 32, 4, 0, 0, 1)

#define LAYER_NORM_BWD_TILE_THREADS 256
#define LAYER_NORM_BWD_TILE_BYTES 16384
#define LAYER_NORM_BWD_TILE_REREAD 8

// The backward of rows past LAYER_NORM_BWD_TIERS (layer_norm_bwd.cuh): the
// statistics kernel takes a segment of lanes * vecs vectors of a row per
// block, the dx kernel a column block of lanes * vecs vectors and a tile of
// lanes / 32 rows at a time.
#define LAYER_NORM_BWD_SPLIT_STATS_TIER(X)                                                         \
  X(l256v4, 256, 4, 0, 0, 1)

#define LAYER_NORM_BWD_SPLIT_DX_TIER(X)                                                            \
  X(l256v2, 256, 2, 0, 0, 1)

#define LAYER_NORM_FWD_SWEEP_TIERS(X)                                                              \
  X(l32v8, 32, 8, 0, 0, 1)                                                                         \
  X(l64v1, 64, 1, 0, 0, 1)                                                                         \
  X(l64v2, 64, 2, 0, 0, 1)                                                                         \
  X(l128v1, 128, 1, 0, 0, 1)                                                                       \
  X(l256v2, 256, 2, 0, 0, 1)                                                                       \
  X(l512v1, 512, 1, 0, 0, 1)                                                                       \
  X(l512v2, 512, 2, 0, 0, 1)                                                                       \
  X(l1024v2, 1024, 2, 0, 0, 1)                                                                     \
  X(l1024v4, 1024, 4, 0, 0, 1)

#define LAYER_NORM_BWD_SWEEP_TIERS(X)                                                              \
  X(l32v4, 32, 4, 0, 0, 1)                                                                         \
  X(l32v8, 32, 8, 0, 0, 1)                                                                         \
  X(l64v1, 64, 1, 0, 0, 1)                                                                         \
  X(l128v3s, 128, 3, 1, 0, 6)                                                                      \
  X(l256v1, 256, 1, 0, 0, 1)                                                                       \
  X(l256v3s, 256, 3, 1, 0, 3)                                                                      \
  X(l320v4s, 320, 4, 1, 0, 2)                                                                      \
  X(l128v4, 128, 4, 0, 0, 1)                                                                       \
  X(l256v2, 256, 2, 0, 0, 1)                                                                       \
  X(l512v4, 512, 4, 0, 0, 1)                                                                       \
  X(l128v2s, 128, 2, 1, 0, 1)                                                                      \
  X(l128v4s, 128, 4, 1, 0, 1)                                                                      \
  X(l256v4, 256, 4, 0, 0, 2)                                                                       \
  X(l256v4s, 256, 4, 1, 0, 1)                                                                      \
  X(l512v4s, 512, 4, 1, 0, 1)                                                                      \
  X(l512v1s, 512, 1, 1, 0, 2)                                                                      \
  X(l1024v1s, 1024, 1, 1, 0, 1)                                                                    \
  X(l1024v2s, 1024, 2, 1, 0, 1)

// The parameter reduce (layer_norm_bwd.cuh, bwd_reduce) takes a column per
// thread, 1024 columns a block, for at most this many partial rows (the split
// backward's grid), and 32 columns x 32 slices a block for more; the host
// launches its grid from the same value.
#define LAYER_NORM_BWD_REDUCE_COLUMN_PARTS 64
