// Standalone test + benchmark for candle-kernels/src/layer_norm.cu: every kernel against a
// double reference (all dtypes, affine combinations, odd sizes, misaligned pointers, grids of
// 1..N blocks), and timings of the tier the host would pick or of every tier (--sweep).
// Build and run on the GPU machine: bench/kernel-harness/run.sh [args], or
//   nvcc -O3 -arch=sm_90 -I<candle-kernels/src> ln_harness.cu -o ln_harness
// Run: ./ln_harness [--no-bench] [--bench-only] [--sweep (every kernel that fits each bench shape)]
//   [--shapes RxC,RxC (bench these shapes instead of the grid)] [--tiers tag,tag (sweep only these)]
//   [--dtypes f32,bf16,f16 (bench these, default f32,bf16)];
// exit code != 0 on any failure.
// The tiers come from the registry layer_norm_tiers.cuh: the shipped ones and the sweep
// candidates, which only this harness compiles.
#define LAYER_NORM_SWEEP
#include "layer_norm.cu"
#include "harness_common.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// Every instantiated kernel: the shipped tiers, then the sweep candidates, in
// registry order (the kernel tables below expand the same lists). smem:
// backward partials in dynamic shared memory (tag suffix `s`); prefetch: `p`; stage: the
// backward stages its next pair of rows in shared memory too (`sqa`).
struct Tier {
  const char *tag;
  int lanes, vecs;
  bool smem, prefetch, stage;
};
#define TIER_ROW(tag, l, v, sm, pf, minb) {#tag, l, v, sm != 0, pf != 0, sm == 3},
static const Tier ALL_FWD[] = {LAYER_NORM_FWD_TIERS(TIER_ROW) LAYER_NORM_FWD_SWEEP_TIERS(TIER_ROW)};
static const Tier ALL_BWD[] = {LAYER_NORM_BWD_TIERS(TIER_ROW, TIER_ROW, TIER_ROW) LAYER_NORM_BWD_SWEEP_TIERS(TIER_ROW)};
static const int N_ALL_FWD = sizeof(ALL_FWD) / sizeof(Tier), N_ALL_BWD = sizeof(ALL_BWD) / sizeof(Tier);
// The layer norm backward's tile tiers (bwd_tile), every row for every dtype.
static const Tier ALL_TILE[] = {LAYER_NORM_BWD_TILE_TIERS(TIER_ROW, TIER_ROW, TIER_ROW)};
static const int N_ALL_TILE = sizeof(ALL_TILE) / sizeof(Tier);

// The host's tables (candle-nn/src/layer_norm_cuda.rs reads the same registry lists); the
// backward's for 16-bit dtypes (X16 rows) and for the others (X32 rows).
#define TIER_TAG(tag, l, v, sm, pf, minb) #tag,
#define TIER_NONE(tag, l, v, sm, pf, minb)
static const char *FWD_TABLE[] = {LAYER_NORM_FWD_TIERS(TIER_TAG)};
static const char *BWD_TABLE16[] = {LAYER_NORM_BWD_TIERS(TIER_TAG, TIER_TAG, TIER_NONE)};
static const char *BWD_TABLE32[] = {LAYER_NORM_BWD_TIERS(TIER_TAG, TIER_NONE, TIER_TAG)};
static const int N_FWD_TABLE = sizeof(FWD_TABLE) / sizeof(char *);
static const int N_BWD_TABLE16 = sizeof(BWD_TABLE16) / sizeof(char *);
static const int N_BWD_TABLE32 = sizeof(BWD_TABLE32) / sizeof(char *);
// Empty lists keep a null entry (a zero-size array is not C++).
static const char *TILE_TABLE16[] = {LAYER_NORM_BWD_TILE_TIERS(TIER_TAG, TIER_TAG, TIER_NONE) nullptr};
static const char *TILE_TABLE32[] = {LAYER_NORM_BWD_TILE_TIERS(TIER_TAG, TIER_NONE, TIER_TAG) nullptr};

// Kernel index: 0..N-1 into ALL_*, N = big (forward) / split (backward).
static int find_tier(const Tier *all, int n, const char *tag) {
  for (int i = 0; i < n; ++i)
    if (!strcmp(all[i].tag, tag))
      return i;
  printf("unknown tier %s\n", tag);
  exit(2);
}

template <typename T> struct KT;
#define KTABLE(T, A, S)                                                                            \
  template <> struct KT<T> {                                                                       \
    typedef A ACC;                                                                                 \
    typedef void (*Fwd)(const T *, T *, const T *, const T *, int64_t, int64_t, float);            \
    typedef void (*Bwd)(const T *, const T *, const T *, T *, A *, A *, int64_t, int64_t, float);  \
    typedef void (*Red)(const A *, const A *, T *, T *, int64_t, int64_t);                         \
    typedef void (*Tile)(const T *, const T *, const T *, T *, A *, A *, int64_t, int64_t, int,    \
                         float);                                                                   \
    static Tile tile(int i) {                                                                      \
      static const Tile t[] = {LAYER_NORM_BWD_TILE_TIERS(KB_##S, KB_##S, KB_##S)};                 \
      return t[i];                                                                                 \
    }                                                                                              \
    typedef void (*SplitStats)(const T *, const T *, const T *, A *, int64_t, int64_t);            \
    typedef void (*SplitDx)(const T *, const T *, const T *, const A *, T *, A *, A *, int64_t,    \
                            int64_t, float);                                                       \
    static const char *name() { return #S; }                                                       \
    static Fwd fwd(int i) {                                                                        \
      static const Fwd t[] = {LAYER_NORM_FWD_TIERS(KF_##S) LAYER_NORM_FWD_SWEEP_TIERS(KF_##S) layernorm_fwd_big_##S};                          \
      return t[i];                                                                                 \
    }                                                                                              \
    static Bwd bwd(int i) {                                                                        \
      static const Bwd t[] = {LAYER_NORM_BWD_TIERS(KB_##S, KB_##S, KB_##S)                         \
                                  LAYER_NORM_BWD_SWEEP_TIERS(KB_##S)};                             \
      return t[i];                                                                                 \
    }                                                                                              \
    /* The `words` instances of a shipped 16-bit tier (layer_norm.cu), or NULL. */                 \
    static Fwd fwd_words(const char *tag) {                                                        \
      static const struct { const char *tag; Fwd f; } t[] = {                                      \
          LAYER_NORM_FWD_TIERS(KWF_##S){nullptr, nullptr}};                                        \
      for (int i = 0; t[i].tag; ++i)                                                               \
        if (!strcmp(t[i].tag, tag))                                                                \
          return t[i].f;                                                                           \
      return nullptr;                                                                              \
    }                                                                                              \
    static Bwd bwd_words(const char *tag) {                                                        \
      static const struct { const char *tag; Bwd f; } t[] = {                                      \
          LAYER_NORM_BWD_TIERS(KW_##S, KW_##S, TIER_NONE){nullptr, nullptr}};                     \
      for (int i = 0; t[i].tag; ++i)                                                               \
        if (!strcmp(t[i].tag, tag))                                                                \
          return t[i].f;                                                                           \
      return nullptr;                                                                              \
    }                                                                                              \
    static Red red() { return layernorm_bwd_reduce_##S; }                                          \
    static SplitStats split_stats() { return layernorm_bwd_split_stats_##S; }                      \
    static SplitDx split_dx() { return layernorm_bwd_split_dx_##S; }                               \
    /* The split backward's `words` instances (16-bit dtypes, layer_norm.cu), or NULL. */         \
    static SplitStats split_stats_words() { return KSW_##S(stats); }                               \
    static SplitDx split_dx_words() { return KSW_##S(dx); }                                        \
  };
#define KF_f32(tag, l, v, sm, pf, minb) layernorm_fwd_##tag##_f32,
#define KB_f32(tag, l, v, sm, pf, minb) layernorm_bwd_##tag##_f32,
#define KF_f64(tag, l, v, sm, pf, minb) layernorm_fwd_##tag##_f64,
#define KB_f64(tag, l, v, sm, pf, minb) layernorm_bwd_##tag##_f64,
#define KF_f16(tag, l, v, sm, pf, minb) layernorm_fwd_##tag##_f16,
#define KB_f16(tag, l, v, sm, pf, minb) layernorm_bwd_##tag##_f16,
#define KF_bf16(tag, l, v, sm, pf, minb) layernorm_fwd_##tag##_bf16,
#define KB_bf16(tag, l, v, sm, pf, minb) layernorm_bwd_##tag##_bf16,
#define KWF_f32(tag, l, v, sm, pf, minb)
#define KWF_f64(tag, l, v, sm, pf, minb)
#define KWF_f16(tag, l, v, sm, pf, minb) {#tag, layernorm_fwd_##tag##_words_f16},
#define KWF_bf16(tag, l, v, sm, pf, minb) {#tag, layernorm_fwd_##tag##_words_bf16},
#define KW_f32(tag, l, v, sm, pf, minb)
#define KW_f64(tag, l, v, sm, pf, minb)
#define KW_f16(tag, l, v, sm, pf, minb) {#tag, layernorm_bwd_##tag##_words_f16},
#define KW_bf16(tag, l, v, sm, pf, minb) {#tag, layernorm_bwd_##tag##_words_bf16},
#define KSW_f32(k) nullptr
#define KSW_f64(k) nullptr
#define KSW_f16(k) layernorm_bwd_split_##k##_words_f16
#define KSW_bf16(k) layernorm_bwd_split_##k##_words_bf16
KTABLE(float, float, f32)
KTABLE(double, double, f64)
KTABLE(__half, float, f16)
KTABLE(__nv_bfloat16, float, bf16)

static int g_sms = 0;
static int g_fail = 0, g_pass = 0;

// Launch rules, exactly as candle-nn/src/layer_norm_cuda.rs (LaunchPlan): first table tier with
// lanes * vecs >= nvec (the backward skips the shared memory tiers when their
// size exceeds the opt-in maximum), blockDim = max(128, lanes),
// rows per block = blockDim / lanes, big / split beyond the table.
static int g_max_smem_optin = 0;
// Their `words` instances (16-bit rows that fit no 8-byte vector) take a slot more and the
// weights of a row span; the `sqa` tiers' other instances a pair of x and dy rows
// (layer_norm_cuda.rs, bwd_smem_bytes).
template <typename T> static bool unaligned_16bit(int64_t ncols) { return sizeof(T) == 2 && ncols % 4 != 0; }
// Whether backward tier t (of ALL_BWD) runs its `words` instance on rows of ncols: the shipped
// tiers' 16-bit rows that fit no 8-byte vector (LN_NO_WORDS=1: never). A sweep tier has no
// such instance, so its other instance, stage included, runs on those rows too.
template <typename T> static bool bwd_runs_words(int t, int64_t ncols) {
  return unaligned_16bit<T>(ncols) && t < N_ALL_BWD && KT<T>::bwd_words(ALL_BWD[t].tag) != nullptr &&
         !getenv("LN_NO_WORDS");
}
template <typename T> static size_t bwd_smem_bytes(const Tier *all, int t, int n, int64_t ncols) {
  if (t == n || !all[t].smem)
    return 0;
  const int64_t V = 16 / sizeof(T);
  const bool words = bwd_runs_words<T>(t, ncols);
  const size_t slots = (size_t)((ncols + V - 1) / V + words);
  return 2 * slots * V * sizeof(typename KT<T>::ACC) + (words ? slots * 16 : 0) +
         (all[t].stage && !words ? 4 * slots * 16 : 0);
}
template <typename T> static int pick_tier(int64_t ncols, bool bwd) {
  const int64_t nvec = (ncols + 16 / (int64_t)sizeof(T) - 1) / (16 / (int64_t)sizeof(T));
  const bool h = sizeof(T) == 2;
  const char *const *table = !bwd ? FWD_TABLE : h ? BWD_TABLE16 : BWD_TABLE32;
  const int n = !bwd ? N_FWD_TABLE : h ? N_BWD_TABLE16 : N_BWD_TABLE32;
  const Tier *all = bwd ? ALL_BWD : ALL_FWD;
  const int nall = bwd ? N_ALL_BWD : N_ALL_FWD;
  for (int i = 0; i < n; ++i) {
    const int t = find_tier(all, nall, table[i]);
    if ((int64_t)all[t].lanes * all[t].vecs < nvec)
      continue;
    if (bwd && bwd_smem_bytes<T>(all, t, nall, ncols) > (size_t)g_max_smem_optin)
      continue;
    return t;
  }
  return nall; // big / split
}
// The tile tier the host takes for the layer norm's backward (layer_norm_cuda.rs, tile_tier), or
// -1: the first that holds the row, where the row fills more than half of it and has no 8-byte
// vectors or leaves lanes of a one-vector tier idle.
template <typename T> static int pick_tile(int64_t ncols) {
  const int64_t nvec = (ncols + 16 / (int64_t)sizeof(T) - 1) / (16 / (int64_t)sizeof(T));
  const char *const *table = sizeof(T) == 2 ? TILE_TABLE16 : TILE_TABLE32;
  for (int i = 0; table[i]; ++i) {
    const int t = find_tier(ALL_TILE, N_ALL_TILE, table[i]);
    const int64_t slots = (int64_t)ALL_TILE[t].lanes * ALL_TILE[t].vecs;
    if (slots < nvec)
      continue;
    const bool idle_lanes = ALL_TILE[t].vecs == 1 && nvec < ALL_TILE[t].lanes;
    const bool any = getenv("LN_TILE_ANY") != nullptr; // LN_TILE_ANY=1: every row a tile tier holds
    return any || (2 * nvec > slots && (unaligned_16bit<T>(ncols) || idle_lanes)) ? t : -1;
  }
  return -1;
}
// A tile tier's geometry as the host's (TileGeometry): rows of a tile, dynamic shared memory.
template <typename T> static void tile_geometry(int t, int64_t nrows, int64_t ncols, int &tile_rows, size_t &smem) {
  tile_rows = (int)layer_norm::tile_rows_of<T>(ALL_TILE[t].lanes, nrows, ncols);
  smem = (size_t)layer_norm::tile_smem_bytes<T>(ALL_TILE[t].lanes, layer_norm::tile_reread<T>(ALL_TILE[t].vecs),
                                                 tile_rows, ncols);
}
// The split backward (layer_norm_bwd.cuh): its two tiers, as layer_norm_cuda.rs (SplitTiers).
static const Tier SPLIT_STATS[] = {LAYER_NORM_BWD_SPLIT_STATS_TIER(TIER_ROW)};
static const Tier SPLIT_DX[] = {LAYER_NORM_BWD_SPLIT_DX_TIER(TIER_ROW)};
template <typename T> static int64_t split_segs(int64_t ncols) {
  const int64_t nvec = (ncols + 16 / (int64_t)sizeof(T) - 1) / (16 / (int64_t)sizeof(T));
  const int64_t w = (int64_t)SPLIT_STATS[0].lanes * SPLIT_STATS[0].vecs;
  return (nvec + w - 1) / w;
}
template <typename T> static int64_t split_col_blocks(int64_t ncols) {
  const int64_t nvec = (ncols + 16 / (int64_t)sizeof(T) - 1) / (16 / (int64_t)sizeof(T));
  const int64_t w = (int64_t)SPLIT_DX[0].lanes * SPLIT_DX[0].vecs;
  return (nvec + w - 1) / w;
}
static int tier_threads(const Tier *all, int t, int n) {
  if (t == n)
    return all == ALL_BWD ? SPLIT_DX[0].lanes : 1024;
  return all[t].lanes < 128 ? 128 : all[t].lanes;
}
static int tier_rpb(const Tier *all, int t, int n) {
  if (t == n)
    return 1;
  return tier_threads(all, t, n) / all[t].lanes;
}
static const char *tier_name(const Tier *all, int t, int n) {
  return t < n ? all[t].tag : all == ALL_BWD ? "split" : "big";
}

template <typename F> static int occupancy(F f, int threads, size_t smem) {
  int nb = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, f, threads, smem));
  return nb;
}

// Device buffers with an optional 1-element offset (misaligned pointers).
template <typename T> struct DBuf {
  T *base = nullptr;
  T *p = nullptr;
  size_t n = 0;
  void alloc(size_t count, int off) {
    n = count;
    CK(cudaMalloc(&base, (count + 2) * sizeof(T)));
    p = base + off;
  }
  ~DBuf() {
    if (base)
      cudaFree(base);
  }
};

template <typename T> struct Problem {
  typedef typename KT<T>::ACC ACC;
  int64_t nrows, ncols;
  bool has_w, has_b;
  int off;
  // Added to off for dy's buffer (set before init): rows of x and dy at different offsets.
  int dy_off = 0;
  // Added to x[i, j] (set before init): ramp * (2 j / ncols - 1), rows whose column blocks have
  // different means (the term of the split backward's merge between its segments).
  double ramp = 0;
  float eps = 1e-5f;
  std::vector<T> x, dy, w, b;
  DBuf<T> dx_, ddy, dw_, db_, dy_out, ddx, ddw, ddb;
  DBuf<ACC> dwp, dbp, stats;
  int fwd_tier, bwd_tier, fwd_grid, bwd_grid;
  size_t bwd_smem;
  // The backward's tile tier (index into ALL_TILE) where the host takes one, else -1; the
  // rows of its tiles. LN_NO_TILE=1 keeps the resident tiers (to time one against the other),
  // LN_TILE_ANY=1 takes a tile tier wherever one holds the row.
  int tile = -1, tile_rows = 0;
  // Both directions run the tier's `words` instance: 16-bit rows that fit no 8-byte vector, as
  // layer_norm_cuda.rs (LaunchPlan::words_when_unaligned), forced tiers included when they have one;
  // the split backward its `words` kernels (SplitTiers::names).
  // LN_NO_WORDS=1 keeps the element-by-element tiers (to time one against the other).
  bool words = false, fwords = false;

  // fwd_t / bwd_t >= 0 force a kernel (index into ALL_FWD / ALL_BWD, N = big)
  // instead of the table's choice; the launch rules are otherwise the same.
  void init(int64_t r, int64_t c, bool hw, bool hb, int o, double mean, double std, bool constant,
            int fwd_t = -1, int bwd_t = -1) {
    nrows = r;
    ncols = c;
    has_w = hw;
    has_b = hb;
    off = o;
    const size_t N = (size_t)r * c;
    x.resize(N);
    dy.resize(N);
    w.resize(c);
    b.resize(c);
    for (int64_t i = 0; i < r; ++i) {
      const double rowoff = 0.25 * urand();
      for (int64_t j = 0; j < c; ++j) {
        const double v = (constant ? mean + rowoff : mean + std * (urand() * 1.7 + rowoff)) +
                         ramp * (2.0 * j / c - 1.0);
        x[i * c + j] = from_d<T>(v);
        dy[i * c + j] = from_d<T>(urand());
      }
    }
    for (int64_t j = 0; j < c; ++j) {
      w[j] = from_d<T>(1.0 + 0.5 * urand());
      b[j] = from_d<T>(0.5 * urand());
    }
    dx_.alloc(N, o);
    ddy.alloc(N, o + dy_off);
    dw_.alloc(c, o);
    db_.alloc(c, o);
    dy_out.alloc(N, o);
    ddx.alloc(N, o);
    ddw.alloc(c, o);
    ddb.alloc(c, o);
    if (N) {
      CK(cudaMemcpy(dx_.p, x.data(), N * sizeof(T), cudaMemcpyHostToDevice));
      CK(cudaMemcpy(ddy.p, dy.data(), N * sizeof(T), cudaMemcpyHostToDevice));
    }
    CK(cudaMemcpy(dw_.p, w.data(), c * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db_.p, b.data(), c * sizeof(T), cudaMemcpyHostToDevice));
    fwd_tier = fwd_t >= 0 ? fwd_t : pick_tier<T>(c, false);
    bwd_tier = bwd_t >= 0 ? bwd_t : pick_tier<T>(c, true);
    tile = bwd_t >= 0 || getenv("LN_NO_TILE") ? -1 : pick_tile<T>(c);
    if (tile >= 0) {
      tile_geometry<T>(tile, r, c, tile_rows, bwd_smem);
      if (bwd_smem > (size_t)g_max_smem_optin)
        tile = -1;
    }
    words = bwd_tier < N_ALL_BWD ? bwd_runs_words<T>(bwd_tier, c)
                                 : unaligned_16bit<T>(c) && KT<T>::split_stats_words() != nullptr &&
                                       !getenv("LN_NO_WORDS");
    fwords = unaligned_16bit<T>(c) && fwd_tier < N_ALL_FWD && KT<T>::fwd_words(ALL_FWD[fwd_tier].tag) &&
             !getenv("LN_NO_WORDS");
    const int bth = tier_threads(ALL_BWD, bwd_tier, N_ALL_BWD);
    // Forward: one block per row group, uncapped except for prefetch tiers (layer_norm_cuda.rs).
    const int64_t frpb = tier_rpb(ALL_FWD, fwd_tier, N_ALL_FWD);
    fwd_grid = (int)std::min<int64_t>(std::max<int64_t>(1, (r + frpb - 1) / frpb), INT32_MAX);
    if (fwd_tier < N_ALL_FWD && ALL_FWD[fwd_tier].prefetch)
      fwd_grid = std::min(fwd_grid, g_sms * std::max(1, occupancy(fwd_fn(), fwd_threads(), 0)));
    // Backward: persistent, capped at what is resident (layer_norm_cuda.rs).
    if (tile < 0)
      bwd_smem = bwd_smem_bytes<T>(ALL_BWD, bwd_tier, N_ALL_BWD, c);
    // Opt in whenever there is dynamic shared memory: past 48 KiB counts the kernel's static
    // shared memory too (as layer_norm_cuda.rs, LaunchPlan::prepare).
    if (bwd_smem > 0)
      CK(cudaFuncSetAttribute(tile >= 0 ? (const void *)KT<T>::tile(tile) : (const void *)bwd_fn(),
                              cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bwd_smem));
    if (tile >= 0) {
      // As many blocks as are resident, at most one a tile (layer_norm_cuda.rs, bwd_tile).
      words = false;
      const int64_t ntiles = std::max<int64_t>(1, (r + tile_rows - 1) / tile_rows);
      bwd_grid = (int)std::min<int64_t>(
          ntiles, (int64_t)g_sms * std::max(1, occupancy(KT<T>::tile(tile), LAYER_NORM_BWD_TILE_THREADS, bwd_smem)));
    } else if (bwd_tier == N_ALL_BWD) {
      // Split: the grid is the dx kernel's parts (gridDim.y), as many blocks as are resident
      // over the column blocks (layer_norm_cuda.rs, bwd_split).
      const int64_t ncb = split_col_blocks<T>(c), tile = SPLIT_DX[0].lanes / 32;
      const int64_t resident = (int64_t)g_sms * std::max(1, occupancy(split_dx_fn(), bth, 0));
      // Experiment switch (bench only): LN_SPLIT_GRID_FLOOR=1 takes as many parts as fit in one
      // wave (resident / ncb) instead of the host's ceil(resident / ncb).
      const int64_t parts = getenv("LN_SPLIT_GRID_FLOOR") ? resident / ncb : (resident + ncb - 1) / ncb;
      bwd_grid = (int)std::max<int64_t>(1, std::min<int64_t>({parts, (r + tile - 1) / tile, 65535}));
      stats.alloc((size_t)std::max<int64_t>(1, r * split_segs<T>(c)) * 4, 0);
    } else {
      const int64_t brpb = tier_rpb(ALL_BWD, bwd_tier, N_ALL_BWD);
      const int64_t bneed = std::max<int64_t>(1, (r + brpb - 1) / brpb);
      bwd_grid = (int)std::min<int64_t>(
          bneed, (int64_t)g_sms * std::max(1, occupancy(bwd_fn(), bth, bwd_smem)));
      // Experiment switch (bench only, not a launch rule): LN_BWD_BLOCKS_PER_SM=n caps the grid
      // at n blocks per SM, to see what the parameter partials (a row per block) cost.
      if (const char *cap = getenv("LN_BWD_BLOCKS_PER_SM"))
        bwd_grid = std::min(bwd_grid, g_sms * std::max(1, atoi(cap)));
      // A multiple of 8 blocks for the `words` instances of the `s` tiers (layer_norm_cuda.rs, bwd).
      if (words && ALL_BWD[bwd_tier].smem && bwd_grid > 8)
        bwd_grid = bwd_grid / 8 * 8;
    }
    // Room for the explicit small/large grids of the tests too.
    dwp.alloc((size_t)std::max(bwd_grid, 64) * c, 0);
    dbp.alloc((size_t)std::max(bwd_grid, 64) * c, 0);
  }
  typename KT<T>::Fwd fwd_fn() const {
    return fwords ? KT<T>::fwd_words(ALL_FWD[fwd_tier].tag) : KT<T>::fwd(fwd_tier);
  }
  typename KT<T>::Bwd bwd_fn() const {
    return words ? KT<T>::bwd_words(ALL_BWD[bwd_tier].tag) : KT<T>::bwd(bwd_tier);
  }
  typename KT<T>::SplitStats split_stats_fn() const {
    return words ? KT<T>::split_stats_words() : KT<T>::split_stats();
  }
  typename KT<T>::SplitDx split_dx_fn() const { return words ? KT<T>::split_dx_words() : KT<T>::split_dx(); }
  int fwd_threads() const { return tier_threads(ALL_FWD, fwd_tier, N_ALL_FWD); }
  int bwd_threads() const {
    return tile >= 0 ? LAYER_NORM_BWD_TILE_THREADS : tier_threads(ALL_BWD, bwd_tier, N_ALL_BWD);
  }
  const char *fwd_name() const { return tier_name(ALL_FWD, fwd_tier, N_ALL_FWD); }
  const char *bwd_name() const { return tile >= 0 ? ALL_TILE[tile].tag : tier_name(ALL_BWD, bwd_tier, N_ALL_BWD); }
  void fwd(int grid = 0) {
    if (!grid)
      grid = fwd_grid;
    fwd_fn()<<<grid, fwd_threads()>>>(dx_.p, dy_out.p, has_w ? dw_.p : nullptr,
                                                  has_b ? db_.p : nullptr, nrows, ncols, eps);
    CK(cudaGetLastError());
  }
  void bwd_main(int grid = 0, bool want_dw = true, bool want_db = true) {
    if (!grid)
      grid = bwd_grid;
    if (tile >= 0) {
      KT<T>::tile(tile)<<<grid, LAYER_NORM_BWD_TILE_THREADS, bwd_smem>>>(
          dx_.p, ddy.p, has_w ? dw_.p : nullptr, ddx.p, want_dw ? dwp.p : nullptr, want_db ? dbp.p : nullptr,
          nrows, ncols, tile_rows, eps);
      CK(cudaGetLastError());
      return;
    }
    if (bwd_tier == N_ALL_BWD) {
      if (nrows == 0)
        return;
      const dim3 sgrid((unsigned)split_segs<T>(ncols), (unsigned)std::min<int64_t>(nrows, 65535));
      split_stats_fn()<<<sgrid, SPLIT_STATS[0].lanes>>>(dx_.p, ddy.p, has_w ? dw_.p : nullptr, stats.p,
                                                        nrows, ncols);
      CK(cudaGetLastError());
      const dim3 dgrid((unsigned)split_col_blocks<T>(ncols), (unsigned)grid);
      split_dx_fn()<<<dgrid, SPLIT_DX[0].lanes>>>(dx_.p, ddy.p, has_w ? dw_.p : nullptr, stats.p, ddx.p,
                                                  want_dw ? dwp.p : nullptr, want_db ? dbp.p : nullptr,
                                                  nrows, ncols, eps);
      CK(cudaGetLastError());
      return;
    }
    bwd_fn()<<<grid, bwd_threads(), bwd_smem>>>(
        dx_.p, ddy.p, has_w ? dw_.p : nullptr, ddx.p, want_dw ? dwp.p : nullptr, want_db ? dbp.p : nullptr,
        nrows, ncols, eps);
    CK(cudaGetLastError());
  }
  void bwd(int grid = 0, bool want_dw = true, bool want_db = true) {
    if (!grid)
      grid = bwd_grid;
    bwd_main(grid, want_dw, want_db);
    reduce(grid, want_dw, want_db);
  }
  // The partials of `grid` blocks summed as layer_norm_cuda.rs does (reduce_parts).
  void reduce(int grid = 0, bool want_dw = true, bool want_db = true) {
    if (!grid)
      grid = bwd_grid;
    if (ncols > 0) {
      // A column per thread for few parts (layer_norm_cuda.rs, reduce_parts).
      const int64_t rgrid = grid <= LAYER_NORM_BWD_REDUCE_COLUMN_PARTS ? (ncols + 1023) / 1024 : (ncols + 31) / 32;
      KT<T>::red()<<<(unsigned)rgrid, 1024>>>(
          want_dw ? dwp.p : nullptr, want_db ? dbp.p : nullptr, want_dw ? ddw.p : nullptr,
          want_db ? ddb.p : nullptr, grid, ncols);
      CK(cudaGetLastError());
    }
  }
};

static void report(bool ok, const std::string &what) {
  if (ok)
    ++g_pass;
  else {
    ++g_fail;
    printf("FAIL %s\n", what.c_str());
  }
}

// Normalised error: max |a - r| / max(1, max |r|); NaN counts as failure.
struct Err {
  double maxdiff = 0, maxref = 0;
  bool nan = false;
  void add(double a, double r) {
    if (std::isnan(a) || std::isinf(a))
      nan = true;
    maxdiff = std::max(maxdiff, std::fabs(a - r));
    maxref = std::max(maxref, std::fabs(r));
  }
  double norm() const { return nan ? INFINITY : maxdiff / std::max(1.0, maxref); }
};

// Runs forward + backward on one problem and compares against a double
// reference. Returns the max abs error of y (for the large-mean check).
template <typename T>
static double check(Problem<T> &P, const char *label, int fgrid = 0, int bgrid = 0, double ytol_abs = -1,
                    double bwd_tol = -1) {
  const int64_t R = P.nrows, C = P.ncols;
  const size_t N = (size_t)R * C;
  P.fwd(fgrid);
  P.bwd(bgrid);
  CK(cudaDeviceSynchronize());
  std::vector<T> y = fetch(P.dy_out.p, N), dx = fetch(P.ddx.p, N), dw = fetch(P.ddw.p, C), db = fetch(P.ddb.p, C);
  Err ey, edx, edw, edb;
  std::vector<double> rdw(C, 0.0), rdb(C, 0.0), xhat(C), g(C);
  const double eps = (double)P.eps;
  double cond = 1.0; // max over rows of max|x| / sqrt(var + eps)
  for (int64_t i = 0; i < R; ++i) {
    const T *xr = &P.x[i * C];
    const T *dyr = &P.dy[i * C];
    double m = 0;
    for (int64_t j = 0; j < C; ++j)
      m += to_d(xr[j]);
    m /= C;
    double v = 0;
    for (int64_t j = 0; j < C; ++j) {
      const double d = to_d(xr[j]) - m;
      v += d * d;
    }
    v /= C;
    const double rstd = 1.0 / std::sqrt(v + eps);
    for (int64_t j = 0; j < C; ++j)
      cond = std::max(cond, std::fabs(to_d(xr[j])) * rstd);
    double mg = 0, mgx = 0;
    for (int64_t j = 0; j < C; ++j) {
      xhat[j] = (to_d(xr[j]) - m) * rstd;
      const double wj = P.has_w ? to_d(P.w[j]) : 1.0;
      const double bj = P.has_b ? to_d(P.b[j]) : 0.0;
      ey.add(to_d(y[i * C + j]), xhat[j] * wj + bj);
      g[j] = to_d(dyr[j]) * wj;
      mg += g[j];
      mgx += g[j] * xhat[j];
      rdw[j] += to_d(dyr[j]) * xhat[j];
      rdb[j] += to_d(dyr[j]);
    }
    mg /= C;
    mgx /= C;
    for (int64_t j = 0; j < C; ++j)
      edx.add(to_d(dx[i * C + j]), rstd * (g[j] - mg - xhat[j] * mgx));
  }
  for (int64_t j = 0; j < C; ++j) {
    edw.add(to_d(dw[j]), rdw[j]);
    edb.add(to_d(db[j]), rdb[j]);
  }
  // f64: the kernels are exact to a few ulps of the inputs, so the error of
  // xhat (and so of y, dw) scales with the row's condition number
  // max|x| / std (1e6 for the large-mean rows, 1e3 for the constant ones).
  const double t = sizeof(T) == 8 ? tol<T>() * std::max(1.0, cond / 10) : tol<T>();
  const double tb = bwd_tol > 0 ? bwd_tol : t;
  char buf[512];
  snprintf(buf, sizeof buf,
           "%s %s rows=%lld cols=%lld w=%d b=%d off=%d tiers=%s%s/%s%s grids=%d/%d tol=%.1e | y=%.2e (abs %.2e) dx=%.2e "
           "dw=%.2e db=%.2e",
           KT<T>::name(), label, (long long)R, (long long)C, P.has_w, P.has_b, P.off, P.fwd_name(),
           P.fwords ? "-words" : "", P.bwd_name(), P.words ? "-words" : "", fgrid ? fgrid : P.fwd_grid, bgrid ? bgrid : P.bwd_grid, t, ey.norm(), ey.maxdiff, edx.norm(), edw.norm(),
           edb.norm());
  bool ok = ey.norm() <= t && edx.norm() <= tb && edw.norm() <= tb && edb.norm() <= tb;
  if (ytol_abs > 0)
    ok = ok && ey.maxdiff <= ytol_abs;
  report(ok, buf);
  if (getenv("LN_VERBOSE"))
    printf("%s %s\n", ok ? "ok  " : "FAIL", buf);
  return ey.maxdiff;
}

template <typename T> static void test_dtype() {
  const int64_t cols[] = {1, 3, 17, 64, 100, 1000, 1024, 4097, 16384, 65536};
  const int64_t rows[] = {0, 1, 7, 1000};
  int before = g_fail;
  for (int64_t c : cols)
    for (int64_t r : rows)
      for (int aff = 0; aff < 4; ++aff)
        for (int off = 0; off < 2; ++off) {
          const bool heavy = r * c > (int64_t)2000000;
          if (heavy && (aff != 3 || off != 0))
            continue;
          Problem<T> P;
          P.init(r, c, aff & 1, aff & 2, off, 0.3, 1.0, false);
          check(P, "sweep");
        }
  // Constant rows.
  for (int64_t c : {64, 1000, 4097, 65536}) {
    Problem<T> P;
    P.init(7, c, true, true, 0, 3.0, 1.0, true);
    check(P, "const");
  }
  // Small grids: many rows per block (grid-stride loops, per-thread
  // accumulation across rows, blocks with no rows).
  for (int64_t c : {17, 64, 1000, 4097, 16384, 65536}) {
    Problem<T> P;
    P.init(1000, c, true, true, 0, 0.0, 1.0, false);
    check(P, "grid3", 3, 3);
    Problem<T> Q;
    Q.init(5, c, true, true, 1, 0.0, 1.0, false);
    check(Q, "grid64-few-rows", 64, 64); // blocks that process no rows
  }
  // Every instantiated kernel, not only the table's choices (so that a tier
  // table change needs no new test): widths at the kernel's capacity, just
  // below it with a ragged (non-vector) width, and far below it; default and
  // small grids; misaligned pointers.
  {
    const int64_t V = 16 / sizeof(T);
    for (int dir = 0; dir < 2; ++dir) {
      const Tier *all = dir ? ALL_BWD : ALL_FWD;
      const int n = dir ? N_ALL_BWD : N_ALL_FWD;
      for (int t = 0; t < n; ++t) {
        const int64_t cap = (int64_t)all[t].lanes * all[t].vecs * V;
        // cap - 1: a 16-bit row that fits as a span only where it starts near a word's start.
        for (int64_t c : {cap, cap - 1, cap - V - 1, cap / 4 + 1}) {
          if (c < 1 || (dir && bwd_smem_bytes<T>(all, t, n, c) > (size_t)g_max_smem_optin))
            continue;
          const int64_t r = std::max<int64_t>(2, std::min<int64_t>(300, 600000 / c));
          Problem<T> P;
          P.init(r, c, true, true, c == cap ? 0 : 1, 0.5, 1.0, false, dir ? -1 : t, dir ? t : -1);
          std::string lab = std::string("tier-") + (dir ? "bwd-" : "fwd-") + all[t].tag;
          check(P, lab.c_str());
          check(P, (lab + "-grid3").c_str(), 3, 3);
          // x and dy at different offsets in a 16-byte word: no block takes its rows as spans.
          if (c == cap - V - 1) {
            Problem<T> Q;
            Q.dy_off = 1;
            Q.init(r, c, true, true, 0, 0.5, 1.0, false, dir ? -1 : t, dir ? t : -1);
            check(Q, (lab + "-dy-off").c_str());
          }
        }
      }
    }
  }
  // The split backward at widths the table gives a tier (it takes any row): one
  // element, ragged and half-vector widths, one segment and a few, misaligned
  // pointers, default and small grids, blocks with no rows.
  {
    const int64_t V = 16 / sizeof(T);
    const int64_t seg = (int64_t)SPLIT_STATS[0].lanes * SPLIT_STATS[0].vecs * V;
    for (int64_t c : {(int64_t)1, (int64_t)3, V / 2 * 33, seg - 1, seg, seg + V, 3 * seg + V / 2, 5 * seg - 7})
      for (int off = 0; off < 2; ++off) {
        if (c < 1)
          continue;
        const int64_t r = std::max<int64_t>(2, std::min<int64_t>(300, 600000 / c));
        Problem<T> P;
        P.init(r, c, true, off == 0, off, 0.5, 1.0, false, -1, N_ALL_BWD);
        check(P, "split");
        check(P, "split-grid3", 3, 3);
        check(P, "split-grid64", 64, 64);
      }
  }
  // Rows whose two halves have different means, past the tiers and forced to the split backward
  // at a width a tier would take: the merge of the segments' sums (M2 about each segment's own
  // mean) must add the between-segment term.
  for (int64_t c : {(int64_t)65536, (int64_t)20000, (int64_t)4097}) {
    Problem<T> P;
    P.ramp = 2.0;
    P.init(40, c, true, true, 0, 0.0, 1.0, false, -1, N_ALL_BWD);
    check(P, "ramp");
  }
  // The forward's streaming kernel forced at widths a tier would take: odd
  // widths, whose rows start at every offset in a 16-byte word (the aligned
  // pieces of load_words / store_words), misaligned pointers, small grids.
  for (int64_t c : {(int64_t)17, (int64_t)4097, (int64_t)70001})
    for (int off = 0; off < 2; ++off) {
      Problem<T> P;
      P.init(30, c, true, off == 0, off, 0.5, 1.0, false, N_ALL_FWD, -1);
      check(P, "big");
      check(P, "big-grid3", 3, 3);
    }
  // NULL dw_part / db_part.
  {
    Problem<T> P;
    P.init(100, 1000, true, true, 0, 0.0, 1.0, false);
    P.bwd(0, false, true);
    P.bwd(0, true, false);
    CK(cudaDeviceSynchronize());
    report(true, "null partials");
  }
  // Determinism: backward twice, dw / db / dx bit-for-bit.
  for (int64_t c : {64, 1000, 4096, 16384, 65536}) {
    Problem<T> P;
    P.init(1000, c, true, true, 0, 0.0, 1.0, false);
    P.bwd();
    CK(cudaDeviceSynchronize());
    auto dw1 = fetch(P.ddw.p, c), db1 = fetch(P.ddb.p, c);
    auto dx1 = fetch(P.ddx.p, (size_t)1000 * c);
    CK(cudaMemset(P.ddw.p, 0, c * sizeof(T)));
    CK(cudaMemset(P.dwp.p, 0xff, P.dwp.n * sizeof(typename KT<T>::ACC)));
    P.bwd();
    CK(cudaDeviceSynchronize());
    auto dw2 = fetch(P.ddw.p, c), db2 = fetch(P.ddb.p, c);
    auto dx2 = fetch(P.ddx.p, (size_t)1000 * c);
    const bool same = !memcmp(dw1.data(), dw2.data(), c * sizeof(T)) &&
                      !memcmp(db1.data(), db2.data(), c * sizeof(T)) &&
                      !memcmp(dx1.data(), dx2.data(), dx1.size() * sizeof(T));
    report(same, std::string("determinism ") + KT<T>::name() + " cols=" + std::to_string(c));
  }
  printf("%-5s: %s (%d failures)\n", KT<T>::name(), g_fail == before ? "ok" : "FAILED", g_fail - before);
}

template <typename T> static void test_large_mean() {
  // mean 1e4, std 1e-2: f32 output max abs err must be <= 1e-2.
  for (int64_t c : {17, 64, 1000, 1024, 4097, 16384, 65536}) {
    Problem<T> P;
    P.init(7, c, false, false, 0, 1e4, 1e-2, false);
    const double e = check(P, "large-mean", 0, 0, 1e-2, 1e-3);
    printf("large-mean %s cols=%lld: y max abs err %.3e\n", KT<T>::name(), (long long)c, e);
  }
}

// Table choice (exactly what layer_norm_cuda.rs launches), or with sweep every kernel that
// fits the row within a factor 8 of its capacity, each with the layer_norm_cuda.rs launch
// rules; forward also with the grid capped at the resident blocks ("cap").
static std::string g_tiers; // --tiers a,b: sweep only these tags (",a,b,")
// Experiment switch (bench only): LN_FLUSH_L2=1 also times the backward (kernels + reduce) after
// a kernel that reads 256 MiB, which leaves none of the problem's tensors in L2: the time of
// flush + backward minus the time of the flush alone ("cold" in the bench line).
__global__ void l2_flush_read(const int4 *p, size_t n, int *out) {
  int s = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    s ^= p[i].x;
  if (s == 0x7fffffff)
    *out = s;
}

template <typename T> static void bench(int64_t R, int64_t C, bool sweep) {
  Problem<T> P;
  P.init(R, C, true, true, 0, 0.0, 1.0, false);
  const double N = (double)R * C;
  const double fbytes = 2 * N * sizeof(T) + 2.0 * C * sizeof(T);
  const double bbytes = 3 * N * sizeof(T);
  const double tf = time_us([&] { P.fwd(); });
  const double tb = time_us([&] { P.bwd_main(); });
  const double tbr = time_us([&] { P.bwd(); });
  const double tr = time_us([&] { P.reduce(); });
  if (getenv("LN_FLUSH_L2")) {
    const size_t n = (256u << 20) / sizeof(int4);
    int4 *buf;
    int *out;
    CK(cudaMalloc(&buf, n * sizeof(int4)));
    CK(cudaMalloc(&out, sizeof(int)));
    CK(cudaMemset(buf, 1, n * sizeof(int4)));
    auto flush = [&] { l2_flush_read<<<g_sms * 8, 512>>>(buf, n, out); };
    const double tfl = time_us(flush);
    const double tcold = time_us([&] { flush(); P.bwd(); }) - tfl;
    printf("cold %-4s %6lldx%-6lld bwd %-8s%s flush %8.1f us | bwd+reduce after the flush %8.1f us\n",
           KT<T>::name(), (long long)R, (long long)C, P.bwd_name(), P.words ? "-words" : "", tfl, tcold);
    CK(cudaFree(buf));
    CK(cudaFree(out));
  }
  printf("bench %-4s %6lldx%-6lld fwd %-8s%s grid %6d %8.1f us %7.0f GB/s | bwd %-8s%s grid %5d %8.1f us %7.0f GB/s"
         " | bwd+reduce %8.1f us %7.0f GB/s | reduce %6.1f us\n",
         KT<T>::name(), (long long)R, (long long)C, P.fwd_name(), P.fwords ? "-words" : "", P.fwd_grid, tf, fbytes / (tf * 1e-6) / 1e9,
         P.bwd_name(), P.words ? "-words" : "", P.bwd_grid, tb, bbytes / (tb * 1e-6) / 1e9, tbr, bbytes / (tbr * 1e-6) / 1e9, tr);
  if (!sweep)
    return;
  const int64_t V = 16 / sizeof(T), nvec = (C + V - 1) / V;
  for (int dir = 0; dir < 2; ++dir) {
    const Tier *all = dir ? ALL_BWD : ALL_FWD;
    const int n = dir ? N_ALL_BWD : N_ALL_FWD;
    for (int t = 0; t <= n; ++t) {
      const int64_t cap = t == n ? INT64_MAX : (int64_t)all[t].lanes * all[t].vecs;
      if (cap < nvec || (t < n && cap > 8 * nvec) || (t == n && nvec > 8 * 1024 * 8))
        continue;
      if (!g_tiers.empty() && g_tiers.find("," + std::string(tier_name(all, t, n)) + ",") == std::string::npos)
        continue;
      if (dir && bwd_smem_bytes<T>(all, t, n, C) > (size_t)g_max_smem_optin)
        continue;
      Problem<T> Q;
      Q.init(R, C, true, true, 0, 0.0, 1.0, false, dir ? -1 : t, dir ? t : -1);
      if (!dir) {
        const double u = time_us([&] { Q.fwd(); });
        const int cap_grid = (int)std::min<int64_t>(
            Q.fwd_grid, (int64_t)g_sms * occupancy(Q.fwd_fn(), Q.fwd_threads(), 0));
        const double uc = time_us([&] { Q.fwd(cap_grid); });
        printf("sweep %-4s %6lldx%-6lld fwd %-8s%s %8.1f us %7.0f GB/s | cap grid %5d %8.1f us %7.0f GB/s\n",
               KT<T>::name(), (long long)R, (long long)C, Q.fwd_name(), Q.fwords ? "-words" : "", u, fbytes / (u * 1e-6) / 1e9, cap_grid,
               uc, fbytes / (uc * 1e-6) / 1e9);
      } else {
        const double u = time_us([&] { Q.bwd_main(); });
        const double ur = time_us([&] { Q.bwd(); });
        printf("sweep %-4s %6lldx%-6lld bwd %-8s grid %5d smem %6zu %8.1f us %7.0f GB/s | +reduce %8.1f us %7.0f "
               "GB/s\n",
               KT<T>::name(), (long long)R, (long long)C, Q.bwd_name(), Q.bwd_grid, Q.bwd_smem, u,
               bbytes / (u * 1e-6) / 1e9, ur, bbytes / (ur * 1e-6) / 1e9);
      }
    }
  }
}

template <typename T> static void print_attrs() {
  auto show = [](const char *dir, const char *tag, const void *f, int threads) {
    cudaFuncAttributes at;
    CK(cudaFuncGetAttributes(&at, f));
    int nb = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, f, threads, 0));
    printf("attr %-4s %s %-9s threads %4d regs %3d local %4zu smem %5zu blocks/SM %2d (+dynamic smem for s tiers)\n",
           KT<T>::name(), dir, tag, threads, at.numRegs, at.localSizeBytes, at.sharedSizeBytes, nb);
  };
  for (int i = 0; i <= N_ALL_FWD; ++i)
    show("fwd", tier_name(ALL_FWD, i, N_ALL_FWD), (const void *)KT<T>::fwd(i), tier_threads(ALL_FWD, i, N_ALL_FWD));
  for (int i = 0; i < N_ALL_BWD; ++i)
    show("bwd", tier_name(ALL_BWD, i, N_ALL_BWD), (const void *)KT<T>::bwd(i), tier_threads(ALL_BWD, i, N_ALL_BWD));
  show("bwd", "split-st", (const void *)KT<T>::split_stats(), SPLIT_STATS[0].lanes);
  show("bwd", "split-dx", (const void *)KT<T>::split_dx(), SPLIT_DX[0].lanes);
  for (int i = 0; i < N_ALL_TILE; ++i)
    show("bwd", ALL_TILE[i].tag, (const void *)KT<T>::tile(i), LAYER_NORM_BWD_TILE_THREADS);
  show("red", "reduce", (const void *)KT<T>::red(), 1024);
}

int main(int argc, char **argv) {
  bool do_test = true, do_bench = true, sweep = false;
  std::string dtypes = ",f32,bf16,"; // --dtypes f32,bf16,f16: the dtypes to bench
  std::vector<std::pair<int64_t, int64_t>> only; // --shapes RxC,RxC: bench these instead
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--dtypes") && i + 1 < argc)
      dtypes = std::string(",") + argv[++i] + ",";
    if (!strcmp(argv[i], "--tiers") && i + 1 < argc)
      g_tiers = std::string(",") + argv[++i] + ",";
    if (!strcmp(argv[i], "--shapes") && i + 1 < argc) {
      std::string list = argv[++i];
      size_t pos = 0;
      while (pos < list.size()) {
        size_t end = list.find(',', pos);
        if (end == std::string::npos)
          end = list.size();
        long long r, c;
        if (sscanf(list.substr(pos, end - pos).c_str(), "%lldx%lld", &r, &c) == 2)
          only.push_back({r, c});
        pos = end + 1;
      }
    }
    if (!strcmp(argv[i], "--no-bench"))
      do_bench = false;
    if (!strcmp(argv[i], "--bench-only"))
      do_test = false;
    if (!strcmp(argv[i], "--sweep"))
      sweep = true;
  }
  // A dtype the bench does not know would otherwise bench nothing, silently.
  for (size_t pos = 1; pos < dtypes.size();) {
    const size_t end = dtypes.find(',', pos);
    const std::string d = dtypes.substr(pos, end - pos);
    if (d != "f32" && d != "bf16" && d != "f16") {
      printf("--dtypes: unknown dtype `%s` (f32, bf16 or f16)\n", d.c_str());
      return 2;
    }
    pos = end + 1;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  g_sms = prop.multiProcessorCount;
  g_max_smem_optin = (int)prop.sharedMemPerBlockOptin;
  printf("device %s, %d SMs, %d B opt-in shared memory per block\n", prop.name, g_sms, g_max_smem_optin);
  print_attrs<float>();
  print_attrs<__nv_bfloat16>();
  print_attrs<__half>();
  print_attrs<double>();
  if (do_test) {
    test_dtype<float>();
    test_dtype<__half>();
    test_dtype<__nv_bfloat16>();
    test_dtype<double>();
    test_large_mean<float>();
    test_large_mean<double>();
    printf("tests: %d passed, %d failed\n", g_pass, g_fail);
  }
  if (do_bench) {
    const int64_t shapes[][2] = {{16384, 64},  {16384, 256},  {8192, 1024},  {4096, 4096},
                                 {1024, 16384}, {65536, 1024}, {32768, 4096}};
    if (only.empty())
      for (auto &s : shapes)
        only.push_back({s[0], s[1]});
    if (dtypes.find(",f32,") != std::string::npos)
      for (auto &s : only)
        bench<float>(s.first, s.second, sweep);
    if (dtypes.find(",bf16,") != std::string::npos)
      for (auto &s : only)
        bench<__nv_bfloat16>(s.first, s.second, sweep);
    if (dtypes.find(",f16,") != std::string::npos)
      for (auto &s : only)
        bench<__half>(s.first, s.second, sweep);
  }
  return g_fail ? 1 : 0;
}
