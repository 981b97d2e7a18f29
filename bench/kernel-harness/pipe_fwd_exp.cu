// Experiment (bench only): the layer norm's forward with its rows brought into shared memory by
// bulk copies in a ring of S stages (pipe_exp.cu's pipeline, one row of x a stage), against
// the forward tier the host takes at each width (layer_norm_tiers.cuh), same process. Checks
// every method's y against a double reference first (exit code 1 on a failure). Aligned rows.
//   nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I<candle-kernels/src> pipe_fwd_exp.cu
//   ./pipe_fwd_exp [--dtypes f32,bf16,f16] [--cols 2048,..] [--test-cols 2048,..] [--no-test] [--no-bench]
#include "layer_norm_bwd.cuh"
#include "layer_norm_fwd.cuh"
#include "bwd_exp.cuh"
#include "pipe_sync.cuh"

using layer_norm::Elem;
using layer_norm::Pack;

namespace pipe {

// THREADS threads a row, thread t owning vector slots t + k * THREADS (k < VPT); block b takes
// rows b, b + gridDim.x, ..; `stages` rows of x in the ring, then `stages` mbarriers.
template <typename T, int THREADS, int VPT>
__global__ void __launch_bounds__(THREADS, 1)
    k_pipe_fwd(const T *__restrict__ x, T *__restrict__ y, const T *__restrict__ w, const T *__restrict__ b,
               int64_t nrows, int64_t ncols, int stages, float eps) {
  using ACC = Acc<T>;
  constexpr int V = Pack<T>::N;
  const int64_t nvec = ncols / V;
  const uint32_t row_bytes = (uint32_t)(ncols * sizeof(T));
  uint4 *ring = reinterpret_cast<uint4 *>(pipe_smem);
  uint64_t *full = reinterpret_cast<uint64_t *>(ring + (int64_t)stages * nvec);
  __shared__ ACC sred[2][32];
  const int tid = threadIdx.x;
  const int64_t mine = rows_of_block(nrows);
  const ACC inv_n = ACC(1) / ACC(ncols);
  ring_init(full, stages);
  auto issue = [&](int64_t i) {
    const int s = (int)(i % stages);
    mbar_expect(&full[s], row_bytes);
    bulk_load(ring + (int64_t)s * nvec, x + (blockIdx.x + i * gridDim.x) * ncols, row_bytes, &full[s]);
  };
  if (tid == 0)
    for (int64_t i = 0; i < min((int64_t)stages, mine); ++i)
      issue(i);
  for (int64_t i = 0; i < mine; ++i) {
    const int s = (int)(i % stages);
    mbar_wait(&full[s], (uint32_t)((i / stages) & 1));
    const uint4 *xs = ring + (int64_t)s * nvec;
    Pack<T> xr[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k)
      if (tid + k * THREADS < nvec)
        *reinterpret_cast<uint4 *>(xr[k].w) = xs[tid + k * THREADS];
    Pack<T> first;
    *reinterpret_cast<uint4 *>(first.w) = xs[0];
    const ACC shift = Elem<T>::get(first, 0);
    ACC m[1] = {ACC(0)};
#pragma unroll
    for (int k = 0; k < VPT; ++k)
      if (tid + k * THREADS < nvec)
#pragma unroll
        for (int j = 0; j < V; ++j)
          m[0] += Elem<T>::get(xr[k], j) - shift;
    layer_norm::row_allreduce<THREADS>(m, sred[0]);
    if (tid == 0 && i + stages < mine) {
      fence_async_shared();
      issue(i + stages);
    }
    const ACC mean = m[0] * inv_n;
    ACC v[1] = {ACC(0)};
#pragma unroll
    for (int k = 0; k < VPT; ++k)
      if (tid + k * THREADS < nvec)
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const ACC d = (Elem<T>::get(xr[k], j) - shift) - mean;
          v[0] += d * d;
        }
    layer_norm::row_allreduce<THREADS>(v, sred[1]);
    const ACC rstd = layer_norm::ln_rstd(max(v[0] * inv_n, ACC(0)), eps);
    T *yrow = y + (blockIdx.x + i * gridDim.x) * ncols;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int64_t slot = tid + k * THREADS;
      if (slot >= nvec)
        continue;
      Pack<T> o, wk, bk;
      if (w)
        *reinterpret_cast<uint4 *>(wk.w) = __ldg(reinterpret_cast<const uint4 *>(w) + slot);
      if (b)
        *reinterpret_cast<uint4 *>(bk.w) = __ldg(reinterpret_cast<const uint4 *>(b) + slot);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        ACC r = ((Elem<T>::get(xr[k], j) - shift) - mean) * rstd;
        if (w)
          r *= Elem<T>::get(wk, j);
        if (b)
          r += Elem<T>::get(bk, j);
        Elem<T>::set(o, j, r);
      }
      reinterpret_cast<uint4 *>(yrow)[slot] = *reinterpret_cast<const uint4 *>(o.w);
    }
  }
}

} // namespace pipe

// The registry's forward tiers, as the host launches them (one block a row group; prefetch
// tiers: a grid of resident blocks).
template <typename T, int L, int VV, int PF>
__global__ void __launch_bounds__(L < 128 ? 128 : L)
    k_ship_fwd(const T *x, T *y, const T *w, const T *b, int64_t nrows, int64_t ncols, float eps) {
  layer_norm::fwd_resident<T, L, VV, PF != 0>(x, y, w, b, nrows, ncols, eps);
}

template <typename T> struct FProb {
  int64_t R, C;
  std::vector<T> x, w, b;
  T *dx_ = nullptr, *dy_ = nullptr, *dw_ = nullptr, *db_ = nullptr;
  FProb(int64_t r, int64_t c) : R(r), C(c) {
    x.resize((size_t)r * c);
    w.resize(c);
    b.resize(c);
    for (int64_t i = 0; i < r; ++i) {
      const double rowoff = 0.25 * urand();
      for (int64_t j = 0; j < c; ++j)
        x[i * c + j] = from_d<T>(0.5 + urand() * 1.7 + rowoff);
    }
    for (int64_t j = 0; j < c; ++j) {
      w[j] = from_d<T>(1.0 + 0.5 * urand());
      b[j] = from_d<T>(0.5 * urand());
    }
    auto up = [&](T *&d, const std::vector<T> *h, size_t n) {
      CK(cudaMalloc(&d, n * sizeof(T)));
      if (h)
        CK(cudaMemcpy(d, h->data(), n * sizeof(T), cudaMemcpyHostToDevice));
    };
    up(dx_, &x, x.size());
    up(dy_, nullptr, x.size());
    up(dw_, &w, c);
    up(db_, &b, c);
  }
  ~FProb() {
    cudaFree(dx_);
    cudaFree(dy_);
    cudaFree(dw_);
    cudaFree(db_);
  }
};

template <typename T> struct FMethod {
  std::string name;
  std::function<void(FProb<T> &)> run;
};

template <typename T, int L, int VV, int PF>
static bool add_ship(std::vector<FMethod<T>> &out, const FProb<T> &P, const char *tag) {
  constexpr int64_t V = 16 / sizeof(T);
  if ((int64_t)L * VV * V < P.C)
    return false;
  constexpr int threads = L < 128 ? 128 : L;
  const int64_t rpb = threads / L;
  int64_t grid = (P.R + rpb - 1) / rpb;
  if (PF) {
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k_ship_fwd<T, L, VV, PF>, threads, 0));
    grid = std::min<int64_t>(grid, (int64_t)g_sms * std::max(1, occ));
  }
  out.push_back({std::string("ship ") + tag, [=](FProb<T> &Q) {
                   k_ship_fwd<T, L, VV, PF><<<(unsigned)grid, threads>>>(Q.dx_, Q.dy_, Q.dw_, Q.db_, Q.R, Q.C, 1e-5f);
                   CK(cudaGetLastError());
                 }});
  return true;
}

template <typename T, int THREADS, int VPT>
static void add_pipe(std::vector<FMethod<T>> &out, const FProb<T> &P, int stages, size_t budget = 200 * 1024) {
  constexpr int64_t V = 16 / sizeof(T);
  const int64_t nvec = P.C / V;
  if ((P.C * (int64_t)sizeof(T)) % 16 || (int64_t)THREADS * VPT < nvec || 2 * nvec <= (int64_t)THREADS * VPT)
    return;
  const size_t stage_bytes = (size_t)P.C * sizeof(T);
  void *f = (void *)pipe::k_pipe_fwd<T, THREADS, VPT>;
  pipe::RingLaunch rl;
  if (!pipe::ring_launch(f, THREADS, stage_bytes, stages, budget, g_max_smem_optin, rl))
    return;
  const int64_t grid = std::min<int64_t>(P.R, (int64_t)g_sms * rl.occ);
  const int nstages = rl.stages;
  const size_t smem = rl.smem;
  out.push_back({"pipe t" + std::to_string(THREADS) + "v" + std::to_string(VPT) + rl.desc,
                 [=](FProb<T> &Q) {
                   // The attribute is the kernel's, shared by methods of other stage counts.
                   CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
                   pipe::k_pipe_fwd<T, THREADS, VPT>
                       <<<(unsigned)grid, THREADS, smem>>>(Q.dx_, Q.dy_, Q.dw_, Q.db_, Q.R, Q.C, nstages, 1e-5f);
                   CK(cudaGetLastError());
                 }});
}

template <typename T> static std::vector<FMethod<T>> methods(const FProb<T> &P) {
  std::vector<FMethod<T>> out;
  if ((P.C * (int64_t)sizeof(T)) % 16)
    return out;
  bool done = false;
#define SHIP(TAG, L, VV, SM, PF, MINB) done = done || add_ship<T, L, VV, PF>(out, P, #TAG);
  LAYER_NORM_FWD_TIERS(SHIP)
#undef SHIP
  for (int stages : {2, 4, 0}) {
    add_pipe<T, 128, 1>(out, P, stages);
    add_pipe<T, 128, 2>(out, P, stages);
    add_pipe<T, 256, 1>(out, P, stages);
    add_pipe<T, 256, 2>(out, P, stages);
    add_pipe<T, 256, 4>(out, P, stages);
    add_pipe<T, 512, 2>(out, P, stages);
    add_pipe<T, 512, 4>(out, P, stages);
    add_pipe<T, 512, 8>(out, P, stages);
  }
  add_pipe<T, 256, 2>(out, P, 0, 100 * 1024);
  add_pipe<T, 256, 4>(out, P, 0, 100 * 1024);
  return out;
}

template <typename T> static void ftest(int64_t R, int64_t C) {
  FProb<T> P(R, C);
  std::vector<double> ref((size_t)R * C);
  for (int64_t i = 0; i < R; ++i) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < C; ++j)
      m += to_d(P.x[i * C + j]);
    m /= C;
    for (int64_t j = 0; j < C; ++j)
      v += (to_d(P.x[i * C + j]) - m) * (to_d(P.x[i * C + j]) - m);
    const double rstd = 1.0 / std::sqrt(v / C + 1e-5);
    for (int64_t j = 0; j < C; ++j)
      ref[i * C + j] = (to_d(P.x[i * C + j]) - m) * rstd * to_d(P.w[j]) + to_d(P.b[j]);
  }
  for (auto &m : methods(P)) {
    CK(cudaMemset(P.dy_, 0, (size_t)R * C * sizeof(T)));
    m.run(P);
    CK(cudaDeviceSynchronize());
    const auto y = fetch(P.dy_, (size_t)R * C);
    double e = 0;
    for (size_t i = 0; i < ref.size(); ++i)
      e = std::max(e, std::fabs(to_d(y[i]) - ref[i]) / (1.0 + std::fabs(ref[i])));
    const bool ok = e <= tol<T>();
    (ok ? g_pass : g_fail)++;
    printf("test %-4s %5lldx%-6lld %-30s y %.2e %s\n", dname<T>(), (long long)R, (long long)C, m.name.c_str(), e,
           ok ? "ok" : "FAIL");
  }
}

template <typename T> static void fbench(int64_t C) {
  const int64_t R = ((int64_t)32 << 20) / (C * (int64_t)sizeof(T));
  FProb<T> P(R, C);
  const double bytes = 2.0 * R * C * sizeof(T);
  const double copy_gbps = same_bytes_copy_gbps(bytes);
  for (auto &m : methods(P)) {
    const double us = time_us([&] { m.run(P); });
    const double gbps = bytes / (us * 1e-6) / 1e9;
    printf("bench %-4s %5lldx%-6lld %-30s %8.1f us %6.0f GB/s %5.1f%% copy\n", dname<T>(), (long long)R, (long long)C,
           m.name.c_str(), us, gbps, 100.0 * gbps / copy_gbps);
  }
}

int main(int argc, char **argv) {
  const ExpArgs args(argc, argv, {1024, 1536, 2048, 3000, 4096, 6144, 8192, 10000, 12288, 16384, 32768},
                     {1024, 3000, 8192, 16384});
  exp_device_init();
  if (args.do_test) {
    for (int64_t c : args.test_cols)
      for (int64_t r : {37, 4099}) {
        if (args.has("f32"))
          ftest<float>(r, c);
        if (args.has("bf16"))
          ftest<__nv_bfloat16>(r, c);
        if (args.has("f16"))
          ftest<__half>(r, c);
      }
    printf("tests: %d passed, %d failed\n", g_pass, g_fail);
  }
  for (int64_t c : args.do_bench ? args.cols : std::vector<int64_t>{}) {
    if (args.has("f32"))
      fbench<float>(c);
    if (args.has("bf16"))
      fbench<__nv_bfloat16>(c);
    if (args.has("f16"))
      fbench<__half>(c);
  }
  return g_fail ? 1 : 0;
}
