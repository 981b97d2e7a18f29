// Fused LayerNorm backward: dx and per block dw / db partial sums (resident
// tiers, and the split kernels for wider rows), then the ordered reduction of
// the partials.
// See layer_norm.cu.
#pragma once
#include "layer_norm_common.cuh"
#include "layer_norm_tiers.cuh"

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
// xhat = x * rstd (no shift, no mean, no mean(g) term). WORDS: the instance for
// 16-bit rows without vectors (odd widths). In the `s` tiers, a block whose rows
// all start at the same offset in a 16-byte word (span_phase: the host makes the
// grid a multiple of 8 blocks) takes them as spans of aligned words, one 16-byte
// load or store per word of x, dy and dx, and shifts the weights to the span
// once per block, into shared memory after the partials (the host adds a slot to
// the partials and a slot of weights per span slot). Other blocks (rows at
// different offsets in x, dy and dx, or a grid of another size) and the other
// tiers where a block holds one row load and store full slots in aligned pieces
// (load_words / store_words).
template <typename T, int LANES, int VECS, bool SMEM_ACC, bool PREFETCH, bool RMS = false,
          bool WORDS = false, bool PAIR = false, bool STAGE = false>
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
  static_assert(!PAIR || (SMEM_ACC && !PREFETCH), "pairs: shared memory partials, no prefetch");
  static_assert(!STAGE || (PAIR && LANES > 32), "the stage: pairs, with a block barrier per reduction");
  // PAIR: the layer norm takes the block's rows two at a time (kernel harness, 2026-12-05, bf16
  // rows of 1536 to 16384 columns: 3-24% faster on an H200 and an H100), its WORDS instances
  // too (H100, 2026-12-06, bf16 rows of 3001 to 15001 columns: 9-13% faster; a block takes spans
  // only when all its rows start at the same offset in a word, both rows of a pair among them);
  // the RMS norm, not measured in pairs, takes them one at a time.
  constexpr bool PAIRS = PAIR && !RMS;
  // The aligned pieces only pay where a block holds one row (H200, 2026-12-02, 16-bit rows of
  // 1001 to 15001 columns: 12-25% faster; of 97, 201 and 333 columns, several rows per block:
  // 3-17% slower), so the smaller tiers' WORDS instances are their element-by-element code.
  constexpr bool PIECES = WORDS && RPB == 1;
  // The spans of aligned words pay in the `s` tiers (H200, 2026-12-04, bf16 rows of 2501 to
  // 15001 columns: 10-15% faster); in l128v1 (1001 columns) they were 5% slower, in l256v1
  // (2001) even, so the other tiers keep the pieces.
  constexpr bool SPANS = PIECES && SMEM_ACC;
  // dy stays resident unless the thread's 2 * VECS * V accumulators already
  // take most of the register budget (checked with ptxas -v: no spills);
  // always with PREFETCH, which loads it one row ahead.
  constexpr bool DY_RES =
      PREFETCH || (SMEM_ACC ? VECS * V <= 8 : VECS * V < 32 && (LANES < 512 || VECS * V <= 8));
  constexpr bool W_RES = !SMEM_ACC && LANES >= 128 && VECS * V <= 8;
  // ACC lanes of one vector slot in shared memory, as 16-byte words.
  constexpr int NQ = V * (int)sizeof(ACC) / 16;
  constexpr int A4 = 16 / (int)sizeof(ACC); // ACCs per 16-byte word
  union AccVec {
    float4 q[NQ];
    ACC a[V];
  };
  __shared__ ACC sred[2][3 * 32];

  // SPANS: elements of the span before each of the block's rows (0: pieces, or no span), and
  // the first element of the thread's slot 0 in the row.
  const int span = SPANS ? span_phase<T>(x, dy, dx, blockIdx.x, ncols, (int64_t)LANES * VECS, gridDim.x) : -1;
  const bool aligned = span >= 0; // the span's words are 16-byte aligned
  const int phase = max(span, 0);
  const G rg(ncols, phase);
  const int lane = rg.lane;
  const int grp = rg.grp;
  const int lo0 = lane == 0 ? phase : 0;
  const int vec = use_vec<T>(ncols, x, dy, w, dx);
  // Whether element j of the thread's slot k is in the row.
  auto valid = [&](int k, int j) { return j < rg.nv[k] && (!SPANS || k > 0 || j >= lo0); };
  // Slot k of a row at p in the instance's own way.
  auto load_slot = [&](const T *p, int k, int nvalid) {
    if constexpr (SPANS)
      return load_span<T>(p - phase, lane + k * LANES, k == 0 ? lo0 : 0, nvalid, aligned);
    else
      return load_pack<T, PIECES>(p, lane + k * LANES, nvalid, vec);
  };
  const ACC inv_n = rg.inv_n;
  const int64_t stride = rg.stride;

  ACC dwa[SMEM_ACC ? 1 : VECS][V], dba[SMEM_ACC ? 1 : VECS][V];
  // SMEM_ACC: dw partials at sacc[0, npad), db partials at sacc[npad, 2 npad),
  // word-major: 16-byte word q of vector slot s at word q * nslots + s, so that
  // a warp's accesses to word q of consecutive slots are contiguous (slot-major,
  // 16-bit dtypes' two words per slot would cost twice the shared memory
  // wavefronts).
  const int64_t npad = ((ncols + V - 1) / V + (SPANS ? 1 : 0)) * V;
  const int64_t nslots = npad / V;
  ACC *sacc = reinterpret_cast<ACC *>(ln_dyn_smem);
  // SPANS: the weights of the span's slots, shifted once per block, after the partials.
  Pack<T> *sw = reinterpret_cast<Pack<T> *>(sacc + 2 * npad);
  // The weights of slot k (SPANS: a slot past the span, whose weights are not used, reads the
  // span's last).
  auto load_w = [&](int k) {
    if constexpr (SPANS)
      return sw[min(lane + k * LANES, (int)nslots - 1)];
    else
      return load_pack<T, PIECES>(w, lane + k * LANES, rg.nv[k], vec);
  };
  // The dw and db partials of the V columns of vector slot `slot` (SMEM_ACC).
  auto load_partials = [&](int64_t slot, AccVec &aw, AccVec &ab) {
#pragma unroll
    for (int q = 0; q < NQ; ++q) {
      aw.q[q] = reinterpret_cast<const float4 *>(sacc)[q * nslots + slot];
      ab.q[q] = reinterpret_cast<const float4 *>(sacc + npad)[q * nslots + slot];
    }
  };
  auto store_partials = [&](int64_t slot, const AccVec &aw, const AccVec &ab) {
#pragma unroll
    for (int q = 0; q < NQ; ++q) {
      reinterpret_cast<float4 *>(sacc)[q * nslots + slot] = aw.q[q];
      reinterpret_cast<float4 *>(sacc + npad)[q * nslots + slot] = ab.q[q];
    }
  };
  if constexpr (SMEM_ACC) {
    for (int64_t e = threadIdx.x; e < 2 * npad; e += THREADS)
      sacc[e] = ACC(0);
    if constexpr (SPANS) {
      typedef typename Elem<T>::bits B;
      for (int64_t e = threadIdx.x; e < npad; e += THREADS) {
        const int64_t col = e - phase;
        reinterpret_cast<B *>(sw)[e] = w && col >= 0 && col < ncols ? reinterpret_cast<const B *>(w)[col] : B(0);
      }
    }
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
        wres[k] = load_w(k);
  }

  Pack<T> xr[VECS];
  Pack<T> gr[DY_RES ? VECS : 1];
  if constexpr (PREFETCH) {
    const int64_t row = rg.first_row0() + grp;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      xr[k] = load_slot(x + row * ncols, k, row < nrows ? rg.nv[k] : 0);
      gr[k] = load_slot(dy + row * ncols, k, row < nrows ? rg.nv[k] : 0);
    }
  }

  // row_allreduce has no barrier after its read: consecutive reductions use
  // different buffers. With the mean's reduction (sred[0]) in between, every
  // row's second one can use sred[1]; without it (RMS) rows alternate.
  int parity = 1;
  int64_t row0 = rg.first_row0();
  if constexpr (PAIRS) {
    // Two rows of the block's sequence at a time (row0, row0 + stride): one reduction for both
    // rows' means, one for both rows' sums, and one read-modify-write of the partials in
    // shared memory for both rows (the same additions in the same order as one row at a time).
    // A last row without a pair takes the loop below.
    __shared__ ACC sred2[2][6 * 32];
    // STAGE (the `sqa` tiers), rows with vectors: the next pair's x and dy rows are copied to
    // shared memory after the partials (cp.async; 16-byte word q * nslots + slot of x of row a,
    // dy of a, x of b, dy of b) while the current pair is reduced and written; the host gives
    // the room (layer_norm_cuda.rs, bwd_stage_bytes). A thread reads back the slots it copied
    // and uses them all in the sums' loop before it copies the next pair over them; the rows'
    // first elements (the shifts), copied by lane 0, are read by every thread after a barrier
    // and before the means' reduction, whose barrier orders them before the next copies. The
    // copies are issued after the sums' loop: kernel harness, H100, 2026-12-06, bf16 rows of
    // 1536 to 8192 columns, 3-12% faster than the pairs loading their rows; issued after the
    // means' reduction or at the top of a pair into a second stage, no faster than without a
    // stage. l128v3sq and l256v3sq were 0-2% slower with it, l320v4sq (160 KiB of shared memory
    // a block) faster alone but 4% slower with the parameter reduce after it: they stay `sq`.
    constexpr bool STAGED = STAGE && !PIECES;
    uint4 *stage = reinterpret_cast<uint4 *>(sacc + 2 * npad);
    // The pair at r0, into the stage.
    auto stage_pair = [&](int64_t r0) {
      const T *src[4] = {x + r0 * ncols, dy + r0 * ncols, x + (r0 + stride) * ncols, dy + (r0 + stride) * ncols};
#pragma unroll
      for (int k = 0; k < VECS; ++k)
        if (rg.nv[k] != 0) {
          const int64_t slot = lane + k * LANES;
#pragma unroll
          for (int q = 0; q < 4; ++q)
            stage_slot<T>(stage + q * nslots + slot, src[q], slot, rg.nv[k], vec);
        }
      cp_async_commit();
    };
    if constexpr (STAGED)
      if (row0 + stride < nrows)
        stage_pair(row0);
    for (; row0 + stride < nrows; row0 += 2 * stride) {
      const T *xa = x + row0 * ncols, *xb = xa + stride * ncols;
      const T *dya = dy + row0 * ncols, *dyb = dya + stride * ncols;
      // The next pair, when there is one (uniform over the block).
      const int64_t next = row0 + 2 * stride;
      const bool more = next + stride < nrows;
      Pack<T> xra[VECS], xrb[VECS], gra[VECS], grb[VECS];
      ACC sha, shb;
      if constexpr (STAGED) {
        cp_async_wait_all();
        __syncthreads(); // the shifts were copied by lane 0
        auto get = [&](int q, int k) {
          Pack<T> r;
          if (rg.nv[k] != 0) {
            const uint4 u = stage[q * nslots + lane + k * LANES];
            r.w[0] = u.x;
            r.w[1] = u.y;
            r.w[2] = u.z;
            r.w[3] = u.w;
          } else {
            r.zero();
          }
          return r;
        };
#pragma unroll
        for (int k = 0; k < VECS; ++k) {
          xra[k] = get(0, k);
          gra[k] = get(1, k);
          xrb[k] = get(2, k);
          grb[k] = get(3, k);
        }
        Pack<T> fa, fb;
        const uint4 ua = stage[0], ub = stage[2 * nslots];
        fa.w[0] = ua.x;
        fa.w[1] = ua.y;
        fb.w[0] = ub.x;
        fb.w[1] = ub.y;
        sha = Elem<T>::get(fa, 0);
        shb = Elem<T>::get(fb, 0);
      } else {
#pragma unroll
        for (int k = 0; k < VECS; ++k) {
          xra[k] = load_slot(xa, k, rg.nv[k]);
          gra[k] = load_slot(dya, k, rg.nv[k]);
          xrb[k] = load_slot(xb, k, rg.nv[k]);
          grb[k] = load_slot(dyb, k, rg.nv[k]);
        }
        sha = rg.shift(xra, xa, true, ncols);
        shb = rg.shift(xrb, xb, true, ncols);
      }
      ACC m2[2] = {ACC(0), ACC(0)};
#pragma unroll
      for (int k = 0; k < VECS; ++k)
#pragma unroll
        for (int j = 0; j < V; ++j)
          if (valid(k, j)) {
            m2[0] += Elem<T>::get(xra[k], j) - sha;
            m2[1] += Elem<T>::get(xrb[k], j) - shb;
          }
      row_allreduce<LANES>(m2, sred2[0]);
      const ACC ma = m2[0] * inv_n, mb = m2[1] * inv_n;
      ACC s6[6] = {ACC(0), ACC(0), ACC(0), ACC(0), ACC(0), ACC(0)};
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        Pack<T> wk;
        if (w)
          wk = load_w(k);
#pragma unroll
        for (int j = 0; j < V; ++j)
          if (valid(k, j)) {
            const ACC da = (Elem<T>::get(xra[k], j) - sha) - ma;
            const ACC db = (Elem<T>::get(xrb[k], j) - shb) - mb;
            ACC ga = Elem<T>::get(gra[k], j), gb = Elem<T>::get(grb[k], j);
            if (w) {
              ga *= Elem<T>::get(wk, j);
              gb *= Elem<T>::get(wk, j);
            }
            s6[0] += da * da;
            s6[1] += ga;
            s6[2] += ga * da;
            s6[3] += db * db;
            s6[4] += gb;
            s6[5] += gb * db;
          }
      }
      if constexpr (STAGED)
        if (more)
          stage_pair(next);
      row_allreduce<LANES>(s6, sred2[1]);
      const ACC rsa = ln_rstd(max(s6[0] * inv_n, ACC(0)), eps);
      const ACC rsb = ln_rstd(max(s6[3] * inv_n, ACC(0)), eps);
      const ACC mga = s6[1] * inv_n, mgb = s6[4] * inv_n;
      const ACC mgxa = s6[2] * rsa * inv_n, mgxb = s6[5] * rsb * inv_n;
      T *dxa = dx + row0 * ncols, *dxb = dxa + stride * ncols;
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        if (rg.nv[k] == 0)
          continue;
        const int64_t slot = lane + k * LANES;
        Pack<T> wk, oa, ob;
        oa.zero();
        ob.zero();
        if (w)
          wk = load_w(k);
        AccVec aw, ab;
        load_partials(slot, aw, ab);
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const ACC xha = ((Elem<T>::get(xra[k], j) - sha) - ma) * rsa;
          const ACC xhb = ((Elem<T>::get(xrb[k], j) - shb) - mb) * rsb;
          const ACC dva = Elem<T>::get(gra[k], j), dvb = Elem<T>::get(grb[k], j);
          const ACC ga = w ? dva * Elem<T>::get(wk, j) : dva;
          const ACC gb = w ? dvb * Elem<T>::get(wk, j) : dvb;
          Elem<T>::set(oa, j, rsa * (ga - mga - xha * mgxa));
          Elem<T>::set(ob, j, rsb * (gb - mgb - xhb * mgxb));
          if (valid(k, j)) {
            aw.a[j] += dva * xha;
            ab.a[j] += dva;
            aw.a[j] += dvb * xhb;
            ab.a[j] += dvb;
          }
        }
        store_partials(slot, aw, ab);
        if constexpr (SPANS) {
          store_span<T>(dxa - phase, slot, k == 0 ? lo0 : 0, rg.nv[k], oa, aligned);
          store_span<T>(dxb - phase, slot, k == 0 ? lo0 : 0, rg.nv[k], ob, aligned);
        } else {
          store_pack<T, PIECES>(dxa, slot, rg.nv[k], vec, oa);
          store_pack<T, PIECES>(dxb, slot, rg.nv[k], vec, ob);
        }
      }
    }
  }
  for (; row0 < nrows; row0 += stride) {
    const int64_t row = row0 + grp;
    const bool active = row < nrows;
    const T *xrow = x + row * ncols;
    const T *dyrow = dy + row * ncols;

    Pack<T> xn[PREFETCH ? VECS : 1], gn[PREFETCH ? VECS : 1];
    if constexpr (PREFETCH) {
      const int64_t nrow = row + stride;
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        xn[k] = load_slot(x + nrow * ncols, k, nrow < nrows ? rg.nv[k] : 0);
        gn[k] = load_slot(dy + nrow * ncols, k, nrow < nrows ? rg.nv[k] : 0);
      }
    } else {
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        xr[k] = load_slot(xrow, k, active ? rg.nv[k] : 0);
        if constexpr (DY_RES)
          gr[k] = load_slot(dyrow, k, active ? rg.nv[k] : 0);
      }
    }

    ACC shift = ACC(0), mean = ACC(0); // mean of x - shift
    if constexpr (!RMS) {
      shift = rg.shift(xr, xrow, active, ncols);
      mean = rg.mean(xr, shift, sred[0], lo0);
    }

    ACC s3[3] = {ACC(0), ACC(0), ACC(0)};
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      Pack<T> dyk, wk;
      if constexpr (DY_RES)
        dyk = gr[k];
      else
        dyk = load_slot(dyrow, k, active ? rg.nv[k] : 0);
      if constexpr (W_RES)
        wk = wres[k];
      else if (w)
        wk = load_w(k);
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (valid(k, j)) {
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
          dyk = load_slot(dyrow, k, rg.nv[k]);
        if constexpr (W_RES)
          wk = wres[k];
        else if (w)
          wk = load_w(k);
        if constexpr (SMEM_ACC) {
          // This thread's columns [slot * V, slot * V + V) of the partials.
          AccVec aw, ab;
          load_partials(slot, aw, ab);
#pragma unroll
          for (int j = 0; j < V; ++j) {
            const ACC xhat = ((Elem<T>::get(xr[k], j) - shift) - mean) * rstd;
            const ACC dyv = Elem<T>::get(dyk, j);
            const ACC g = w ? dyv * Elem<T>::get(wk, j) : dyv;
            Elem<T>::set(o, j, rstd * (g - mg - xhat * mgx));
            if (valid(k, j)) {
              aw.a[j] += dyv * xhat;
              ab.a[j] += dyv;
            }
          }
          store_partials(slot, aw, ab);
        } else {
#pragma unroll
          for (int j = 0; j < V; ++j) {
            const ACC xhat = ((Elem<T>::get(xr[k], j) - shift) - mean) * rstd;
            const ACC dyv = Elem<T>::get(dyk, j);
            const ACC g = w ? dyv * Elem<T>::get(wk, j) : dyv;
            Elem<T>::set(o, j, rstd * (g - mg - xhat * mgx));
            if (valid(k, j)) {
              dwa[k][j] += dyv * xhat;
              dba[k][j] += dyv;
            }
          }
        }
        if constexpr (SPANS)
          store_span<T>(dxrow - phase, slot, k == 0 ? lo0 : 0, rg.nv[k], o, aligned);
        else
          store_pack<T, PIECES>(dxrow, slot, rg.nv[k], vec, o);
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
      const int64_t s = e + phase; // its element of the span
      const int j = (int)(s % V);
      const int64_t i = ((j / A4) * nslots + s / V) * A4 + j % A4;
      if (dw_part)
        dw_part[prow + e] = sacc[i];
      if (db_part)
        db_part[prow + e] = sacc[npad + i];
    }
  } else if constexpr (RPB == 1) {
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const int64_t col = (int64_t)(lane + k * LANES) * V + j - phase;
        if (col >= 0 && col < ncols) {
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

constexpr int TILE_THREADS = LAYER_NORM_BWD_TILE_THREADS;

// Whether a lane of a tile tier of `vecs` vectors rereads x and dy (more columns than
// LAYER_NORM_BWD_TILE_REREAD).
template <typename T> __host__ __device__ constexpr bool tile_reread(int vecs) {
  return vecs * (16 / (int)sizeof(T)) > LAYER_NORM_BWD_TILE_REREAD;
}

// The rows of a tile of a tile tier whose groups have `lanes` threads: about
// LAYER_NORM_BWD_TILE_BYTES of x, a whole number of rows for each group, no more than the tensor's
// rows need. The host computes the same (layer_norm_cuda.rs, TileGeometry).
template <typename T> __host__ __device__ inline int64_t tile_rows_of(int lanes, int64_t nrows, int64_t ncols) {
  const int64_t groups = TILE_THREADS / lanes;
  const int64_t group_bytes = groups * (ncols > 1 ? ncols : 1) * (int64_t)sizeof(T);
  int64_t per_group = (LAYER_NORM_BWD_TILE_BYTES + group_bytes / 2) / group_bytes;
  const int64_t need = (nrows + groups - 1) / groups;
  per_group = per_group < need ? per_group : need;
  return groups * (per_group > 1 ? per_group : 1);
}

// The dynamic shared memory of bwd_tile: two stages of x and dy and the dx of a tile, then the
// weights (REREAD), or the groups' partials at the end if more (layer_norm_cuda.rs,
// TileGeometry).
template <typename T>
__host__ __device__ inline int64_t tile_smem_bytes(int lanes, bool reread, int64_t tile_rows, int64_t ncols) {
  typedef typename acc_type<T>::type ACC;
  const int64_t staged = 5 * tile_words<T>(tile_rows * ncols) * 16 + (reread ? ncols * (int64_t)sizeof(ACC) : 0);
  const int64_t partials = 2 * (TILE_THREADS / lanes) * ncols * (int64_t)sizeof(ACC);
  return staged > partials ? staged : partials;
}

// Backward, narrow rows staged by tiles (the registry's LAYER_NORM_BWD_TILE_TIERS): a tile is
// tile_rows consecutive rows, one contiguous range of the tensor whatever the row's width, so
// the block copies it into shared memory in 16-byte words (copy_tile_in, the next tile's copy in
// flight while this one is computed) and writes its dx back the same way, where the resident
// tiers load a row without vectors (16-bit odd widths) element by element and leave a quarter
// of their lanes idle at widths like 96 or 384. In shared memory a group of LANES (<= 32)
// lanes takes a row, lane l its columns l + LANES * k (k < VECS * V), with the same per-row
// arithmetic as bwd_resident; the dw / db partials of its columns stay in registers across the
// block's tiles and are added in group order at the end: one partial row per block, for
// bwd_reduce. REREAD: x and dy are read from shared memory in each of the row's three passes
// (the mean, the sums, dx) and the weights kept there, instead of 3 * VECS * V registers a lane.
// Dynamic shared memory: tile_smem_bytes.
template <typename T, int LANES, int VECS, bool REREAD>
__device__ __forceinline__ void bwd_tile(const T *__restrict__ x, const T *__restrict__ dy,
                                         const T *__restrict__ w, T *__restrict__ dx,
                                         typename acc_type<T>::type *__restrict__ dw_part,
                                         typename acc_type<T>::type *__restrict__ db_part, int64_t nrows,
                                         int64_t ncols, int tile_rows, float eps) {
  using ACC = typename acc_type<T>::type;
  constexpr int THREADS = TILE_THREADS;
  constexpr int K = VECS * Pack<T>::N; // columns a lane
  constexpr int NG = THREADS / LANES;  // groups a block
  static_assert(LANES <= 32 && 32 % LANES == 0, "a row's lanes inside a warp");
  uint4 *smem = reinterpret_cast<uint4 *>(ln_dyn_smem);
  // Two stages of x and dy, then dx, then (REREAD) the weights.
  const int64_t tw = tile_words<T>((int64_t)tile_rows * ncols);
  // Stage s of x and of dy, computed: an array of the stages indexed by s would live in local memory.
  auto sx = [&](int s) { return smem + 2 * tw * s; };
  auto sdy = [&](int s) { return smem + tw + 2 * tw * s; };
  uint4 *const sdx = smem + 4 * tw;
  ACC *const sw = reinterpret_cast<ACC *>(smem + 5 * tw);
  const int lane = threadIdx.x % LANES, grp = threadIdx.x / LANES;
  const int64_t n = nrows * ncols;
  const int64_t ntiles = (nrows + tile_rows - 1) / tile_rows;
  const ACC inv_n = ACC(1) / ACC(ncols);

  ACC wv[REREAD ? 1 : K], dwa[K], dba[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t c = lane + (int64_t)LANES * k;
    if constexpr (!REREAD)
      wv[k] = w && c < ncols ? to_acc(w[c]) : ACC(1);
    dwa[k] = ACC(0);
    dba[k] = ACC(0);
  }
  if constexpr (REREAD) {
    // Read after the first tile's barrier.
    for (int64_t c = threadIdx.x; c < ncols; c += THREADS)
      sw[c] = w ? to_acc(w[c]) : ACC(1);
  }
  auto weight = [&](int k, int c) -> ACC {
    if constexpr (REREAD)
      return sw[c];
    else
      return wv[k];
  };
  auto copy_in = [&](int64_t t, int s) {
    const int64_t e0 = t * tile_rows * ncols, e1 = min(nrows, (t + 1) * tile_rows) * ncols;
    copy_tile_in<T, THREADS>(sx(s), x, n, e0, e1);
    copy_tile_in<T, THREADS>(sdy(s), dy, n, e0, e1);
    cp_async_commit();
  };

  int64_t t = blockIdx.x;
  if (t < ntiles)
    copy_in(t, 0);
  for (int it = 0; t < ntiles; ++it, t += gridDim.x) {
    const int s = it & 1;
    // The next tile into the other stage (its last reads were before the previous tile's
    // final barrier); an empty group past the last keeps wait<1> on this tile's.
    if (t + gridDim.x < ntiles)
      copy_in(t + gridDim.x, s ^ 1);
    else
      cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const int64_t e0 = t * tile_rows * ncols;
    const int rows = (int)(min(nrows, (t + 1) * tile_rows) - t * tile_rows);
    const T *tx = reinterpret_cast<const T *>(sx(s)) + word_offset(x + e0);
    const T *tdy = reinterpret_cast<const T *>(sdy(s)) + word_offset(dy + e0);
    T *tdx = reinterpret_cast<T *>(sdx) + word_offset(dx + e0);
    // tile_rows is a multiple of NG: the groups of a warp run the same rows (the shuffles).
    for (int r = grp; r < tile_rows; r += NG) {
      const bool active = r < rows;
      const T *xr = tx + (int64_t)r * ncols;
      const T *gr = tdy + (int64_t)r * ncols;
      ACC xv[REREAD ? 1 : K], gv[REREAD ? 1 : K];
      // The shift K = the row's first element, as bwd_resident.
      const ACC shift = active ? to_acc(xr[0]) : ACC(0);
      ACC s1[1] = {ACC(0)};
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int c = lane + LANES * k;
        const bool in = active && c < ncols;
        if constexpr (REREAD) {
          if (in)
            s1[0] += to_acc(xr[c]) - shift;
        } else {
          xv[k] = in ? to_acc(xr[c]) - shift : ACC(0);
          gv[k] = in ? to_acc(gr[c]) : ACC(0);
          s1[0] += xv[k];
        }
      }
      row_allreduce<LANES>(s1, static_cast<ACC *>(nullptr));
      // REREAD: a fence, so that the compiler reads x and dy again rather than keeping them.
      if constexpr (REREAD)
        __syncwarp();
      const ACC mean = s1[0] * inv_n;
      // x - K - mean and dy of the lane's column k (c).
      auto d_of = [&](int k, int c) -> ACC {
        if constexpr (REREAD)
          return to_acc(xr[c]) - shift - mean;
        else
          return xv[k] - mean;
      };
      auto dy_of = [&](int k, int c) -> ACC {
        if constexpr (REREAD)
          return to_acc(gr[c]);
        else
          return gv[k];
      };
      ACC s3[3] = {ACC(0), ACC(0), ACC(0)};
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int c = lane + LANES * k;
        if (active && c < ncols) {
          const ACC d = d_of(k, c), g = dy_of(k, c) * weight(k, c);
          s3[0] += d * d;
          s3[1] += g;
          s3[2] += g * d;
        }
      }
      row_allreduce<LANES>(s3, static_cast<ACC *>(nullptr));
      if constexpr (REREAD)
        __syncwarp();
      const ACC rstd = ln_rstd(max(s3[0] * inv_n, ACC(0)), eps);
      const ACC mg = s3[1] * inv_n;
      const ACC mgx = s3[2] * rstd * inv_n;
      if (active) {
        T *dr = tdx + (int64_t)r * ncols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int c = lane + LANES * k;
          if (c < ncols) {
            const ACC xhat = d_of(k, c) * rstd, g = dy_of(k, c);
            dr[c] = from_acc<T>(rstd * (g * weight(k, c) - mg - xhat * mgx));
            dwa[k] += g * xhat;
            dba[k] += g;
          }
        }
      }
    }
    __syncthreads();
    copy_tile_out<T, THREADS>(dx, sdx, e0, e0 + (int64_t)rows * ncols);
    __syncthreads();
  }
  cp_async_wait<0>();
  __syncthreads();
  // The groups' partials, added in group order (the room: see tile_smem_bytes).
  ACC *pw = reinterpret_cast<ACC *>(smem);
  ACC *pb = pw + (int64_t)NG * ncols;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int c = lane + LANES * k;
    if (c < ncols) {
      pw[(int64_t)grp * ncols + c] = dwa[k];
      pb[(int64_t)grp * ncols + c] = dba[k];
    }
  }
  __syncthreads();
  for (int64_t c = threadIdx.x; c < ncols; c += THREADS) {
    ACC aw = pw[c], ab = pb[c];
    for (int g = 1; g < NG; ++g) {
      aw += pw[(int64_t)g * ncols + c];
      ab += pb[(int64_t)g * ncols + c];
    }
    if (dw_part)
      dw_part[(int64_t)blockIdx.x * ncols + c] = aw;
    if (db_part)
      db_part[(int64_t)blockIdx.x * ncols + c] = ab;
  }
}

// Backward, rows past the widest tier: split over blocks. Holding a whole row
// per block would leave a row's dw / db partials nowhere to accumulate across
// rows (registers and shared memory are too small), so the row is cut into
// column blocks in two kernels:
//  1. bwd_split_stats: one block per (row, segment of SEG_LANES * SEG_VECS
//     vectors) writes the segment's sum (x - K), its M2 about its own mean, and
//     sum g, sum g * (x - K), g = dy * w, K the row's first element (0 for RMS).
//  2. bwd_split_dx: a block owns DX_LANES * DX_VECS vectors of columns and a
//     tile of rows at a time: warp i merges the segments of row i of the tile,
//     then every thread writes dx for its columns of the tile's rows and adds
//     dy * xhat, dy to its partials in registers. Its partial row goes to
//     dw_part / db_part[blockIdx.y] for bwd_reduce.
// The merge is a sum over segments in both steps (the mean first, then
// M2 = sum(M2_s + n_s * (mean_s - mean)^2)), done with xor butterflies: every
// lane gets the same bits, and the result does not depend on scheduling.
// WORDS: the instances for 16-bit rows without vectors (odd widths), which load
// and store a full slot in aligned pieces (load_words) instead of element by
// element; instances of their own, the pieces cost the vector path registers.
constexpr int SPLIT_STATS = 4; // ACCs per (row, segment)

template <typename T, int LANES, int VECS, bool RMS = false, bool WORDS = false>
__device__ __forceinline__ void bwd_split_stats(const T *__restrict__ x, const T *__restrict__ dy,
                                                const T *__restrict__ w,
                                                typename acc_type<T>::type *__restrict__ stats,
                                                int64_t nrows, int64_t ncols) {
  using ACC = typename acc_type<T>::type;
  constexpr int V = Pack<T>::N;
  static_assert(LANES >= 32 && LANES % 32 == 0, "one segment per block");
  __shared__ ACC sred[2][3 * 32];
  const int vec = use_vec<T>(ncols, x, dy, w, x);
  const int64_t nseg = (ncols + LANES * VECS * V - 1) / (LANES * VECS * V);
  const int64_t seg0 = (int64_t)blockIdx.x * LANES * VECS; // first slot of the segment
  const ACC nseg_elems = ACC(min((int64_t)LANES * VECS * V, ncols - seg0 * V));
  int nv[VECS];
  Pack<T> wk[VECS];
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    const int64_t slot = seg0 + threadIdx.x + k * LANES;
    nv[k] = slot_valid<V>(slot, ncols);
    if (w)
      wk[k] = load_pack<T, WORDS>(w, slot, nv[k], vec);
  }
  // The rows from the last to the first: bwd_split_dx reads them again from the first, and
  // finds those read last still in L2.
  for (int64_t i = blockIdx.y; i < nrows; i += gridDim.y) {
    const int64_t row = nrows - 1 - i;
    const T *xrow = x + row * ncols;
    const T *dyrow = dy + row * ncols;
    Pack<T> xr[VECS], gr[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      const int64_t slot = seg0 + threadIdx.x + k * LANES;
      xr[k] = load_pack<T, WORDS>(xrow, slot, nv[k], vec);
      gr[k] = load_pack<T, WORDS>(dyrow, slot, nv[k], vec);
    }
    ACC shift = ACC(0);
    if constexpr (!RMS)
      shift = Elem<T>::get(load_pack(xrow, 0, 1, false), 0);
    ACC sd[1] = {ACC(0)};
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < nv[k])
          sd[0] += Elem<T>::get(xr[k], j) - shift;
    row_allreduce<LANES>(sd, sred[0]);
    const ACC mseg = sd[0] / nseg_elems;
    ACC s3[3] = {ACC(0), ACC(0), ACC(0)};
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < nv[k]) {
          const ACC d = Elem<T>::get(xr[k], j) - shift;
          ACC g = Elem<T>::get(gr[k], j);
          if (w)
            g *= Elem<T>::get(wk[k], j);
          s3[0] += (d - mseg) * (d - mseg);
          s3[1] += g;
          s3[2] += g * d;
        }
    // The previous row read sred[1] before this row's barrier in the sd
    // reduction, so it is free here.
    row_allreduce<LANES>(s3, sred[1]);
    if (threadIdx.x == 0) {
      ACC *st = stats + (row * nseg + blockIdx.x) * SPLIT_STATS;
      st[0] = sd[0];
      st[1] = s3[0];
      st[2] = s3[1];
      st[3] = s3[2];
    }
  }
}

// The row statistics of bwd_split_dx from the row's segments, computed by one
// warp; every lane returns the same bits. seg_elems: elements of a full segment.
template <typename ACC> struct SplitRow {
  ACC mean, rstd, mg, mgx;
};

template <typename ACC, bool RMS>
__device__ __forceinline__ SplitRow<ACC> split_row_stats(const ACC *__restrict__ st, int64_t nseg,
                                                         int64_t seg_elems, int64_t ncols,
                                                         float eps) {
  const int lane = threadIdx.x & 31;
  const ACC inv_n = ACC(1) / ACC(ncols);
  ACC s3[3] = {ACC(0), ACC(0), ACC(0)}; // sum (x - K), sum g, sum g * (x - K)
  for (int64_t i = lane; i < nseg; i += 32) {
    s3[0] += st[i * SPLIT_STATS];
    s3[1] += st[i * SPLIT_STATS + 2];
    s3[2] += st[i * SPLIT_STATS + 3];
  }
  row_allreduce<32>(s3, (ACC *)nullptr);
  const ACC mean = s3[0] * inv_n; // of x - K
  ACC m2[1] = {ACC(0)};
  for (int64_t i = lane; i < nseg; i += 32) {
    const ACC n = ACC(min(seg_elems, ncols - i * seg_elems));
    const ACC delta = st[i * SPLIT_STATS] / n - mean;
    m2[0] += st[i * SPLIT_STATS + 1] + n * delta * delta;
  }
  row_allreduce<32>(m2, (ACC *)nullptr);
  // RMS: mean(x^2) = M2 / n + mean^2, and no mean removed.
  const ACC var = RMS ? m2[0] * inv_n + mean * mean : m2[0] * inv_n;
  SplitRow<ACC> r;
  r.mean = RMS ? ACC(0) : mean;
  r.rstd = ln_rstd(max(var, ACC(0)), eps);
  r.mg = RMS ? ACC(0) : s3[1] * inv_n;
  r.mgx = (s3[2] - r.mean * s3[1]) * r.rstd * inv_n;
  return r;
}

// SEG_VECS: vectors of a segment of bwd_split_stats (its LANES * VECS).
template <typename T, int LANES, int VECS, int SEG_VECS, bool RMS = false, bool WORDS = false>
__device__ __forceinline__ void bwd_split_dx(const T *__restrict__ x, const T *__restrict__ dy,
                                             const T *__restrict__ w,
                                             const typename acc_type<T>::type *__restrict__ stats,
                                             T *__restrict__ dx,
                                             typename acc_type<T>::type *__restrict__ dw_part,
                                             typename acc_type<T>::type *__restrict__ db_part,
                                             int64_t nrows, int64_t ncols, float eps) {
  using ACC = typename acc_type<T>::type;
  constexpr int V = Pack<T>::N;
  constexpr int TILE = LANES / 32; // rows per tile, one per warp for the statistics
  constexpr int64_t SEG_ELEMS = (int64_t)SEG_VECS * V;
  __shared__ ACC srow[TILE][5];
  const int vec = use_vec<T>(ncols, x, dy, w, dx);
  const int64_t nseg = (ncols + SEG_ELEMS - 1) / SEG_ELEMS;
  const int64_t col0 = (int64_t)blockIdx.x * LANES * VECS; // first slot of the column block
  const int warp = threadIdx.x / 32;
  int nv[VECS];
  Pack<T> wk[VECS];
  ACC dwa[VECS][V], dba[VECS][V];
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    const int64_t slot = col0 + threadIdx.x + k * LANES;
    nv[k] = slot_valid<V>(slot, ncols);
    if (w)
      wk[k] = load_pack<T, WORDS>(w, slot, nv[k], vec);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      dwa[k][j] = ACC(0);
      dba[k][j] = ACC(0);
    }
  }
  // Each row's slots are loaded while the row before it is computed (the first
  // row of the next tile while this tile's statistics are merged), so a
  // thread has a row of loads in flight instead of one slot's.
  const int64_t tile_step = (int64_t)gridDim.y * TILE;
  Pack<T> xn[VECS], gn[VECS];
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    xn[k].zero();
    gn[k].zero();
  }
  auto load_row = [&](int64_t row) {
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      const int64_t slot = col0 + threadIdx.x + k * LANES;
      xn[k] = load_pack<T, WORDS>(x + row * ncols, slot, nv[k], vec);
      gn[k] = load_pack<T, WORDS>(dy + row * ncols, slot, nv[k], vec);
    }
  };
  if ((int64_t)blockIdx.y * TILE < nrows)
    load_row((int64_t)blockIdx.y * TILE);
  for (int64_t tile0 = (int64_t)blockIdx.y * TILE; tile0 < nrows; tile0 += tile_step) {
    __syncthreads(); // the previous tile's readers are done with srow
    {
      const int64_t row = tile0 + warp;
      if (row < nrows) {
        const SplitRow<ACC> r =
            split_row_stats<ACC, RMS>(stats + row * nseg * SPLIT_STATS, nseg, SEG_ELEMS, ncols, eps);
        if ((threadIdx.x & 31) == 0) {
          srow[warp][0] = RMS ? ACC(0) : Elem<T>::get(load_pack(x + row * ncols, 0, 1, false), 0);
          srow[warp][1] = r.mean;
          srow[warp][2] = r.rstd;
          srow[warp][3] = r.mg;
          srow[warp][4] = r.mgx;
        }
      }
    }
    __syncthreads();
    const int rows = (int)min((int64_t)TILE, nrows - tile0);
#pragma unroll 1
    for (int i = 0; i < rows; ++i) {
      const int64_t row = tile0 + i;
      Pack<T> xr[VECS], dyr[VECS];
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        xr[k] = xn[k];
        dyr[k] = gn[k];
      }
      const int64_t next = i + 1 < rows ? row + 1 : tile0 + tile_step;
      if (next < nrows)
        load_row(next);
      const ACC shift = srow[i][0], mean = srow[i][1], rstd = srow[i][2], mg = srow[i][3],
                mgx = srow[i][4];
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        if (nv[k] == 0)
          continue;
        const int64_t slot = col0 + threadIdx.x + k * LANES;
        Pack<T> o;
        o.zero();
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const ACC xhat = ((Elem<T>::get(xr[k], j) - shift) - mean) * rstd;
          const ACC dyv = Elem<T>::get(dyr[k], j);
          const ACC g = w ? dyv * Elem<T>::get(wk[k], j) : dyv;
          Elem<T>::set(o, j, rstd * (g - mg - xhat * mgx));
          if (j < nv[k]) {
            dwa[k][j] += dyv * xhat;
            dba[k][j] += dyv;
          }
        }
        store_pack<T, WORDS>(dx + row * ncols, slot, nv[k], vec, o);
      }
    }
  }
  // This block's partial row of its columns: every column is written (zeros
  // when the block processed no rows).
  const int64_t prow = (int64_t)blockIdx.y * ncols;
#pragma unroll
  for (int k = 0; k < VECS; ++k)
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const int64_t col = (col0 + threadIdx.x + k * LANES) * V + j;
      if (col < ncols) {
        if (dw_part)
          dw_part[prow + col] = dwa[k][j];
        if (db_part)
          db_part[prow + col] = dba[k][j];
      }
    }
}

// dw[c] = sum_p dw_part[p * ncols + c] (same for db), always in the same order.
// Launch: blockDim.x = 1024 = 32 columns x 32 slices, gridDim.x = ceil(ncols / 32)
// (any grid works: column blocks are grid-strided). Slice t sums the parts
// p = t, t + 32, t + 64, ... in increasing order, then thread (c, 0) adds the 32
// slice sums in slice order. 32 slices keep narrow rows (2 column blocks for
// 64 columns) from summing a thousand partials per thread.
// With at most RED_COL_PARTS parts (the split backward's grid) a thread takes a
// column and adds its parts in increasing order instead, without a block's
// 32-step tail per 32 columns (up to 32 parts these are the slices' sums: each
// slice holds one part or none); gridDim.x = ceil(ncols / 1024) is enough then.
constexpr int RED_COLS = 32;
constexpr int RED_SLICES = 32;
constexpr int RED_COL_PARTS = LAYER_NORM_BWD_REDUCE_COLUMN_PARTS;

template <typename T>
__device__ __forceinline__ void store_param(T *__restrict__ d, int64_t col, typename acc_type<T>::type v) {
  Pack<T> t;
  t.zero();
  Elem<T>::set(t, 0, v);
  reinterpret_cast<typename Elem<T>::bits *>(d)[col] = Elem<T>::get_bits(t, 0);
}

template <typename T>
__device__ __forceinline__ void bwd_reduce(const typename acc_type<T>::type *__restrict__ dw_part,
                                           const typename acc_type<T>::type *__restrict__ db_part,
                                           T *__restrict__ dw, T *__restrict__ db, int64_t nparts,
                                           int64_t ncols) {
  using ACC = typename acc_type<T>::type;
  __shared__ ACC sw[RED_SLICES][RED_COLS + 1];
  __shared__ ACC sb[RED_SLICES][RED_COLS + 1];
  if (nparts <= RED_COL_PARTS) {
    for (int64_t col = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; col < ncols;
         col += (int64_t)gridDim.x * blockDim.x) {
      ACC aw = ACC(0), ab = ACC(0);
      if (dw_part)
#pragma unroll 8
        for (int64_t p = 0; p < nparts; ++p)
          aw += dw_part[p * ncols + col];
      if (db_part)
#pragma unroll 8
        for (int64_t p = 0; p < nparts; ++p)
          ab += db_part[p * ncols + col];
      if (dw)
        store_param(dw, col, aw);
      if (db)
        store_param(db, col, ab);
    }
    return;
  }
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
      if (dw)
        store_param(dw, col, tw);
      if (db)
        store_param(db, col, tb);
    }
  }
}

} // namespace layer_norm
