// Experiment (bench only): the layer norm's backward with its rows brought into shared memory by
// bulk copies (Hopper `cp.async.bulk`, one per row of x and of dy, completion on an mbarrier) in
// a ring of S stages, so that S - 1 rows of each block are on their way while it reduces and
// writes the current one; a thread reads its slots of the row from the stage and keeps its
// columns' dw / db partials in registers. Aligned rows only (16-byte rows, tensors at 16-byte
// addresses). Against the resident tier the host takes at each width (layer_norm_tiers.cuh),
// each with the parameter reduce, same process. Checks every method's dx / dw / db against a
// double reference first (exit code 1 on a failure).
//
// Why (issue 14): on the H200 the 16-bit backward runs at 46% of the copy speed (median of the
// sweep); `ncu` puts the resident tiers at 25-31% occupancy with warps waiting on global loads:
// one or two rows a block in flight, none while it reduces.
//   nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I<candle-kernels/src> pipe_exp.cu
//   ./pipe_exp [--dtypes f32,bf16,f16] [--cols 2048,..] [--test-cols 2048,..] [--no-test] [--no-bench]
#include "layer_norm_bwd.cuh"
#include "bwd_exp.cuh"
#include "pipe_sync.cuh"

using layer_norm::Elem;
using layer_norm::Pack;

namespace pipe {

// Two floats as the 16-bit pair (lo, hi) of a word, one conversion instruction.
template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t *>(&h);
}
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t *>(&h);
}
template <> __device__ __forceinline__ uint32_t pack2<float>(float, float) { return 0u; }

// THREADS threads a row, thread t owning vector slots t + k * THREADS (k < VPT) of every row;
// block b takes rows b, b + gridDim.x, ..; `stages` rows of x and dy in the ring (dynamic shared
// memory: stages * 2 * row bytes, then `stages` mbarriers). dw / db partials of block b at row
// b of dwp / dbp. RR: a thread rereads its slots from the stage in each pass over the row
// instead of holding them in registers (fewer registers, more warps an SM); a stage is then
// refilled after the block's first reduction of the next row, so S - 1 rows are on their way.
// MINB: the blocks an SM the registers must allow (__launch_bounds__). PK: 16-bit dx converted
// two elements at a time (cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32) instead of element by element
// into the pack (fewer instructions an element).
template <typename T, int THREADS, int VPT, bool RR = false, int MINB = 1, bool PK = false>
__global__ void __launch_bounds__(THREADS, MINB)
    k_pipe(const T *__restrict__ x, const T *__restrict__ dy, const T *__restrict__ w, T *__restrict__ dx,
           Acc<T> *__restrict__ dwp, Acc<T> *__restrict__ dbp, int64_t nrows, int64_t ncols, int stages, float eps) {
  using ACC = Acc<T>;
  constexpr int V = Pack<T>::N;
  const int64_t nvec = ncols / V;
  const uint32_t row_bytes = (uint32_t)(ncols * sizeof(T));
  uint4 *ring = reinterpret_cast<uint4 *>(pipe_smem);
  uint64_t *full = reinterpret_cast<uint64_t *>(ring + (int64_t)stages * 2 * nvec);
  __shared__ ACC sred[2][3 * 32];
  const int tid = threadIdx.x;
  const int64_t mine = rows_of_block(nrows);
  const ACC inv_n = ACC(1) / ACC(ncols);
  ring_init(full, stages);
  // The block's i-th row into stage i % stages (thread 0).
  auto issue = [&](int64_t i) {
    const int s = (int)(i % stages);
    const int64_t row = blockIdx.x + i * gridDim.x;
    mbar_expect(&full[s], 2 * row_bytes);
    bulk_load(ring + (int64_t)s * 2 * nvec, x + row * ncols, row_bytes, &full[s]);
    bulk_load(ring + (int64_t)s * 2 * nvec + nvec, dy + row * ncols, row_bytes, &full[s]);
  };
  if (tid == 0)
    for (int64_t i = 0; i < min((int64_t)stages, mine); ++i)
      issue(i);

  // The thread's weights in registers where they fit beside the partials (else read per row, an
  // L1 hit).
  constexpr bool W_RES = VPT * V <= 16;
  Pack<T> wr[W_RES ? VPT : 1];
  auto load_w = [&](int k) {
    Pack<T> r;
    *reinterpret_cast<uint4 *>(r.w) = __ldg(reinterpret_cast<const uint4 *>(w) + tid + k * THREADS);
    return r;
  };
  auto weights = [&](int k) {
    if constexpr (W_RES)
      return wr[k];
    else
      return load_w(k);
  };
  ACC dwa[VPT][V], dba[VPT][V];
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    if constexpr (W_RES)
      if (tid + k * THREADS < nvec && w)
        wr[k] = load_w(k);
#pragma unroll
    for (int j = 0; j < V; ++j)
      dwa[k][j] = dba[k][j] = ACC(0);
  }

  for (int64_t i = 0; i < mine; ++i) {
    const int s = (int)(i % stages);
    mbar_wait(&full[s], (uint32_t)((i / stages) & 1));
    const uint4 *xs = ring + (int64_t)s * 2 * nvec, *gs = xs + nvec;
    Pack<T> xr[RR ? 1 : VPT], gr[RR ? 1 : VPT];
    if constexpr (!RR) {
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int64_t slot = tid + k * THREADS;
        if (slot < nvec) {
          *reinterpret_cast<uint4 *>(xr[k].w) = xs[slot];
          *reinterpret_cast<uint4 *>(gr[k].w) = gs[slot];
        }
      }
    }
    // Slot k of the row's x and dy: held, or reread from the stage (RR).
    auto xv = [&](int k) {
      if constexpr (RR) {
        Pack<T> r;
        *reinterpret_cast<uint4 *>(r.w) = xs[tid + k * THREADS];
        return r;
      } else {
        return xr[k];
      }
    };
    auto gv = [&](int k) {
      if constexpr (RR) {
        Pack<T> r;
        *reinterpret_cast<uint4 *>(r.w) = gs[tid + k * THREADS];
        return r;
      } else {
        return gr[k];
      }
    };
    Pack<T> first;
    *reinterpret_cast<uint4 *>(first.w) = xs[0];
    const ACC shift = Elem<T>::get(first, 0);
    ACC m[1] = {ACC(0)};
#pragma unroll
    for (int k = 0; k < VPT; ++k)
      if (tid + k * THREADS < nvec)
#pragma unroll
        for (int j = 0; j < V; ++j)
          m[0] += Elem<T>::get(xv(k), j) - shift;
    layer_norm::row_allreduce<THREADS>(m, sred[0]);
    // Every thread has read stage s (the barrier in the reduction): refill it; RR: every thread
    // is done with the previous row's stage.
    if constexpr (RR) {
      if (tid == 0 && i >= 1 && i - 1 + stages < mine) {
        fence_async_shared();
        issue(i - 1 + stages);
      }
    } else if (tid == 0 && i + stages < mine) {
      fence_async_shared();
      issue(i + stages);
    }
    const ACC mean = m[0] * inv_n;
    ACC s3[3] = {ACC(0), ACC(0), ACC(0)};
#pragma unroll
    for (int k = 0; k < VPT; ++k)
      if (tid + k * THREADS < nvec) {
        Pack<T> wk;
        if (w)
          wk = weights(k);
        const Pack<T> xk = xv(k), gk = gv(k);
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const ACC d = (Elem<T>::get(xk, j) - shift) - mean;
          const ACC g = w ? Elem<T>::get(gk, j) * Elem<T>::get(wk, j) : Elem<T>::get(gk, j);
          s3[0] += d * d;
          s3[1] += g;
          s3[2] += g * d;
        }
      }
    layer_norm::row_allreduce<THREADS>(s3, sred[1]);
    const ACC rstd = layer_norm::ln_rstd(max(s3[0] * inv_n, ACC(0)), eps);
    const ACC mg = s3[1] * inv_n, mgx = s3[2] * rstd * inv_n;
    T *dxrow = dx + (blockIdx.x + i * gridDim.x) * ncols;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int64_t slot = tid + k * THREADS;
      if (slot >= nvec)
        continue;
      Pack<T> o, wk;
      if (w)
        wk = weights(k);
      const Pack<T> xk = xv(k), gk = gv(k);
      ACC ov[V];
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const ACC xh = ((Elem<T>::get(xk, j) - shift) - mean) * rstd;
        const ACC dv = Elem<T>::get(gk, j);
        const ACC g = w ? dv * Elem<T>::get(wk, j) : dv;
        ov[j] = rstd * (g - mg - xh * mgx);
        if constexpr (!PK)
          Elem<T>::set(o, j, ov[j]);
        dwa[k][j] += dv * xh;
        dba[k][j] += dv;
      }
      if constexpr (PK)
#pragma unroll
        for (int j = 0; j < V; j += 2)
          o.w[j / 2] = pack2<T>(ov[j], ov[j + 1]);
      reinterpret_cast<uint4 *>(dxrow)[slot] = *reinterpret_cast<const uint4 *>(o.w);
    }
  }
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int64_t slot = tid + k * THREADS;
    if (slot < nvec)
#pragma unroll
      for (int j = 0; j < V; ++j) {
        dwp[blockIdx.x * ncols + slot * V + j] = dwa[k][j];
        dbp[blockIdx.x * ncols + slot * V + j] = dba[k][j];
      }
  }
}

} // namespace pipe

// The registry's backward tiers (aligned rows: no `words` instances), as the host launches them.
template <typename T, int L, int VV, int SM, int PF, int MINB>
__global__ void __launch_bounds__(L < 128 ? 128 : L, MINB)
    k_ship(const T *x, const T *dy, const T *w, T *dx, Acc<T> *dwp, Acc<T> *dbp, int64_t nrows, int64_t ncols,
           float eps) {
  layer_norm::bwd_resident<T, L, VV, SM != 0, PF != 0, false, false, SM >= 2, SM == 3>(x, dy, w, dx, dwp, dbp,
                                                                                        nrows, ncols, eps);
}

static bool aligned_row(int64_t c, size_t elem, int off) { return off == 0 && (c * (int64_t)elem) % 16 == 0; }

// The host's tier: the first of the dtype's list whose vectors cover the row (and whose shared
// memory fits), as layer_norm_cuda.rs (bwd_smem_bytes, bwd_stage_bytes) and ln_harness.cu.
template <typename T, int L, int VV, int SM, int PF, int MINB>
static bool add_ship(std::vector<Method<T>> &out, const Prob<T> &P, const char *tag) {
  constexpr int64_t V = 16 / sizeof(T);
  const int64_t slots = (P.C + V - 1) / V;
  if ((int64_t)L * VV < slots)
    return false;
  const size_t smem = SM ? 2 * slots * V * sizeof(Acc<T>) + (SM == 3 ? 4 * slots * 16 : 0) : 0;
  if (smem > g_max_smem_optin)
    return false;
  void *f = (void *)k_ship<T, L, VV, SM, PF, MINB>;
  if (smem)
    CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  constexpr int threads = L < 128 ? 128 : L;
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, f, threads, smem));
  const int64_t rpb = threads / L;
  const int64_t parts = std::min<int64_t>({(P.R + rpb - 1) / rpb, (int64_t)g_sms * std::max(1, occ), P.nparts_max});
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, f));
  Method<T> m;
  m.name = std::string("ship ") + tag + " x" + std::to_string(occ) + " " + std::to_string(fa.numRegs) + "r";
  m.parts = parts;
  m.repeat = true;
  m.run = [=](Prob<T> &Q) {
    k_ship<T, L, VV, SM, PF, MINB><<<(unsigned)parts, threads, smem>>>(Q.dx_, Q.ddy, Q.dw_, Q.ddx, Q.dwp, Q.dbp,
                                                                       Q.R, Q.C, 1e-5f);
    CK(cudaGetLastError());
    Q.reduce(parts);
  };
  out.push_back(m);
  return true;
}

// A pipe method: THREADS x VPT vector slots, `stages` stages (0: as many as `budget` bytes of
// shared memory an SM hold for the blocks resident), where the row fills more than half of it.
template <typename T, int THREADS, int VPT, bool RR = false, int MINB = 1, bool PK = false>
static void add_pipe(std::vector<Method<T>> &out, const Prob<T> &P, int stages, size_t budget = 200 * 1024) {
  constexpr int64_t V = 16 / sizeof(T);
  const int64_t nvec = P.C / V;
  if (!aligned_row(P.C, sizeof(T), P.off) || (int64_t)THREADS * VPT < nvec || 2 * nvec <= (int64_t)THREADS * VPT)
    return;
  const size_t stage_bytes = 2 * (size_t)P.C * sizeof(T);
  void *f = (void *)pipe::k_pipe<T, THREADS, VPT, RR, MINB, PK>;
  pipe::RingLaunch rl;
  if (!pipe::ring_launch(f, THREADS, stage_bytes, stages, budget, g_max_smem_optin, rl))
    return;
  const int64_t parts = std::min<int64_t>({P.R, (int64_t)g_sms * rl.occ, P.nparts_max});
  const int nstages = rl.stages;
  const size_t smem = rl.smem;
  Method<T> m;
  m.name = "pipe t" + std::to_string(THREADS) + "v" + std::to_string(VPT) + (RR ? "rr" : "") +
           (MINB > 1 ? "m" + std::to_string(MINB) : "") + (PK ? "pk" : "") + rl.desc;
  m.parts = parts;
  m.repeat = true;
  m.run = [=](Prob<T> &Q) {
    // The attribute is the kernel's, shared by methods of other stage counts.
    CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    pipe::k_pipe<T, THREADS, VPT, RR, MINB, PK>
        <<<(unsigned)parts, THREADS, smem>>>(Q.dx_, Q.ddy, Q.dw_, Q.ddx, Q.dwp, Q.dbp, Q.R, Q.C, nstages, 1e-5f);
    CK(cudaGetLastError());
    Q.reduce(parts);
  };
  out.push_back(m);
}

template <typename T> static std::vector<Method<T>> methods(const Prob<T> &P) {
  std::vector<Method<T>> out;
  if (!aligned_row(P.C, sizeof(T), P.off))
    return out;
  // The registry's backward list for the dtype (X16 rows for 16-bit, X32 for f32), in order.
  bool done = false;
#define SHIP(TAG, L, VV, SM, PF, MINB) done = done || add_ship<T, L, VV, SM, PF, MINB>(out, P, #TAG);
#define SHIP16(...)                                                                                \
  if constexpr (sizeof(T) == 2) {                                                                  \
    SHIP(__VA_ARGS__)                                                                              \
  }
#define SHIP32(...)                                                                                \
  if constexpr (sizeof(T) == 4) {                                                                  \
    SHIP(__VA_ARGS__)                                                                              \
  }
  LAYER_NORM_BWD_TIERS(SHIP, SHIP16, SHIP32)
#undef SHIP
#undef SHIP16
#undef SHIP32
  for (int stages : {2, 4, 0}) {
    add_pipe<T, 128, 1>(out, P, stages);
    add_pipe<T, 128, 2>(out, P, stages);
    add_pipe<T, 256, 1>(out, P, stages);
    add_pipe<T, 256, 2>(out, P, stages);
    add_pipe<T, 256, 4>(out, P, stages);
    add_pipe<T, 512, 1>(out, P, stages);
    add_pipe<T, 512, 2>(out, P, stages);
    add_pipe<T, 512, 3>(out, P, stages);
    add_pipe<T, 1024, 1>(out, P, stages);
    add_pipe<T, 1024, 2>(out, P, stages);
    add_pipe<T, 512, 4>(out, P, stages);
    if constexpr (sizeof(T) == 4)
      add_pipe<T, 512, 5>(out, P, stages);
  }
  // Two blocks an SM sharing the shared memory (the `0` stages of half the budget).
  add_pipe<T, 256, 2>(out, P, 0, 100 * 1024);
  add_pipe<T, 256, 4>(out, P, 0, 100 * 1024);
  add_pipe<T, 512, 1>(out, P, 0, 100 * 1024);
  add_pipe<T, 512, 2>(out, P, 0, 100 * 1024);
  // Rereads (16-bit): the slots from the stage in each pass, S - 1 rows on their way.
  if constexpr (sizeof(T) == 2)
    for (int stages : {2, 3, 4}) {
      add_pipe<T, 256, 2, true>(out, P, stages);
      add_pipe<T, 256, 4, true>(out, P, stages);
      add_pipe<T, 512, 1, true>(out, P, stages);
      add_pipe<T, 512, 2, true>(out, P, stages);
      add_pipe<T, 512, 4, true>(out, P, stages);
      add_pipe<T, 1024, 2, true>(out, P, stages);
      // Registers capped for 32-64 warps an SM (where the ring's shared memory lets them in).
      add_pipe<T, 256, 2, true, 4>(out, P, stages);
      add_pipe<T, 256, 4, true, 3>(out, P, stages);
      add_pipe<T, 512, 1, true, 4>(out, P, stages);
      add_pipe<T, 512, 2, true, 2>(out, P, stages);
      add_pipe<T, 512, 4, true, 2>(out, P, stages);
    }
  // Packed conversions of dx (16-bit), the layouts above at S = 2.
  if constexpr (sizeof(T) == 2) {
    add_pipe<T, 128, 1, false, 1, true>(out, P, 2);
    add_pipe<T, 128, 2, false, 1, true>(out, P, 2);
    add_pipe<T, 256, 2, false, 1, true>(out, P, 2);
    add_pipe<T, 512, 2, false, 1, true>(out, P, 2);
    add_pipe<T, 512, 3, false, 1, true>(out, P, 2);
    add_pipe<T, 512, 4, false, 1, true>(out, P, 2);
    add_pipe<T, 512, 2, true, 1, true>(out, P, 3);
  }
  return out;
}

int main(int argc, char **argv) {
  const ExpArgs args(argc, argv, {1024, 1536, 2048, 3000, 4096, 6144, 8192, 10000, 12288, 16384},
                     {1024, 1536, 3000, 4096, 8192, 10000, 16384});
  exp_device_init();
  if (args.do_test) {
    // Fewer rows than blocks, many rows (several a block, uneven over the blocks).
    for (int64_t c : args.test_cols) {
      for (int64_t r : {37, 4099}) {
        if (args.has("f32"))
          test<float>(r, c, 0, methods<float>);
        if (args.has("bf16"))
          test<__nv_bfloat16>(r, c, 0, methods<__nv_bfloat16>);
        if (args.has("f16"))
          test<__half>(r, c, 0, methods<__half>);
      }
    }
    printf("tests: %d passed, %d failed\n", g_pass, g_fail);
  }
  return bench_all(args, [](auto t) { return methods<decltype(t)>; });
}
