// Experiment (bench only): the cluster backward of wide rows (layer_norm_bwd.cuh,
// bwd_cluster) in tiers and cluster sizes other than the registry's, against the split
// backward (two kernels) and the widest resident tier, each with the parameter reduce, same
// process. Checks every kernel's dx / dw / db against a double reference first (exit code 1
// on a failure).
//   nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I<candle-kernels/src> cluster_exp.cu
//   ./cluster_exp [--dtypes f32,bf16,f16] [--cols 16384,20000,..] [--test-cols 20000,..]
//                 [--no-test] [--no-bench]
#include "ln_cluster.cuh"
#include "bwd_exp.cuh"

// SACC: partials in shared memory, and at least MINB blocks an SM.
template <typename T, int CL, int L, int VV, bool PF, bool WORDS, bool SACC = false, int MINB = 1>
__global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(L, MINB)
    k_cluster(const T *x, const T *dy, const T *w, T *dx, Acc<T> *dwp, Acc<T> *dbp, int64_t nrows,
              int64_t ncols, float eps) {
  layer_norm::bwd_cluster<T, CL, L, VV, SACC, PF, false, WORDS>(x, dy, w, dx, dwp, dbp, nrows, ncols, eps);
}
// The shipped split tiers (layer_norm_tiers.cuh: stats l256v4, dx l256v2).
template <typename T, bool WORDS>
__global__ void __launch_bounds__(256)
    k_split_stats(const T *x, const T *dy, const T *w, Acc<T> *st, int64_t nrows, int64_t ncols) {
  layer_norm::bwd_split_stats<T, 256, 4, false, WORDS>(x, dy, w, st, nrows, ncols);
}
template <typename T, bool WORDS>
__global__ void __launch_bounds__(256)
    k_split_dx(const T *x, const T *dy, const T *w, const Acc<T> *st, T *dx, Acc<T> *dwp, Acc<T> *dbp,
               int64_t nrows, int64_t ncols, float eps) {
  layer_norm::bwd_split_dx<T, 256, 2, 1024, false, WORDS>(x, dy, w, st, dx, dwp, dbp, nrows, ncols, eps);
}
// The widest resident tier, l1024v4s (vector rows only here).
template <typename T>
__global__ void __launch_bounds__(1024, 1)
    k_l1024v4s(const T *x, const T *dy, const T *w, T *dx, Acc<T> *dwp, Acc<T> *dbp, int64_t nrows,
               int64_t ncols, float eps) {
  layer_norm::bwd_resident<T, 1024, 4, true, false>(x, dy, w, dx, dwp, dbp, nrows, ncols, eps);
}
template <typename T, int CL, int L, int VV, bool PF, bool SACC = false, int MINB = 1>
static void add_cluster(std::vector<Method<T>> &out, const Prob<T> &P, const char *tag) {
  constexpr int64_t V = 16 / sizeof(T);
  if ((int64_t)CL * L * VV * V < P.C || (int64_t)(CL / 2) * L * VV * V >= P.C)
    return; // the smallest cluster of this tier that holds the row
  const bool words = words_row(P);
  auto f = words ? (void *)k_cluster<T, CL, L, VV, PF, true, SACC, MINB>
                 : (void *)k_cluster<T, CL, L, VV, PF, false, SACC, MINB>;
  const size_t smem = SACC ? 2 * (size_t)VV * V * L * sizeof(Acc<T>) : 0;
  if (smem)
    CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(CL * 64);
  cfg.blockDim = dim3(L);
  cfg.dynamicSmemBytes = smem;
  int ncl = 0;
  CK(cudaOccupancyMaxActiveClusters(&ncl, f, &cfg));
  const int64_t nclusters = std::max<int64_t>(1, std::min<int64_t>({(int64_t)ncl, P.R, (int64_t)P.nparts_max}));
  Method<T> m;
  m.name = std::string(tag) + (SACC ? "s" : "") + (PF ? "p" : "") + (MINB > 1 ? "m" + std::to_string(MINB) : "") + (words ? "-words" : "") + " c" + std::to_string(CL) +
           " x" + std::to_string(ncl);
  m.parts = nclusters;
  m.repeat = true;
  m.run = [=](Prob<T> &Q) {
    if (words)
      k_cluster<T, CL, L, VV, PF, true, SACC, MINB><<<(unsigned)(CL * nclusters), L, smem>>>(
          Q.dx_, Q.ddy, Q.dw_, Q.ddx, Q.dwp, Q.dbp, Q.R, Q.C, 1e-5f);
    else
      k_cluster<T, CL, L, VV, PF, false, SACC, MINB><<<(unsigned)(CL * nclusters), L, smem>>>(
          Q.dx_, Q.ddy, Q.dw_, Q.ddx, Q.dwp, Q.dbp, Q.R, Q.C, 1e-5f);
    CK(cudaGetLastError());
    Q.reduce(nclusters);
  };
  out.push_back(m);
}

template <typename T, int L, int VV, bool PF, bool SACC = false, int MINB = 1>
static void add_cluster_family(std::vector<Method<T>> &out, const Prob<T> &P, const char *tag) {
  add_cluster<T, 2, L, VV, PF, SACC, MINB>(out, P, tag);
  add_cluster<T, 4, L, VV, PF, SACC, MINB>(out, P, tag);
  add_cluster<T, 8, L, VV, PF, SACC, MINB>(out, P, tag);
}

template <typename T> static std::vector<Method<T>> methods(const Prob<T> &P) {
  constexpr int64_t V = 16 / sizeof(T);
  std::vector<Method<T>> out;
  const bool words = words_row(P);
  const int64_t nvec = (P.C + V - 1) / V;
  // The split backward, with the host's grid (layer_norm_cuda.rs, bwd_split).
  {
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &occ, words ? (void *)k_split_dx<T, true> : (void *)k_split_dx<T, false>, 256, 0));
    const int64_t ncb = (nvec + 511) / 512, nseg = (nvec + 1023) / 1024, tile = 256 / 32;
    const int64_t resident = (int64_t)g_sms * std::max(1, occ);
    const int64_t parts = std::max<int64_t>(
        1, std::min<int64_t>({(resident + ncb - 1) / ncb, (P.R + tile - 1) / tile, P.nparts_max}));
    Method<T> m;
    m.name = std::string("split") + (words ? "-words" : "");
    m.parts = parts;
    m.run = [=](Prob<T> &Q) {
      const dim3 sg((unsigned)nseg, (unsigned)std::min<int64_t>(Q.R, 65535));
      const dim3 dg((unsigned)ncb, (unsigned)parts);
      if (words) {
        k_split_stats<T, true><<<sg, 256>>>(Q.dx_, Q.ddy, Q.dw_, Q.st, Q.R, Q.C);
        k_split_dx<T, true><<<dg, 256>>>(Q.dx_, Q.ddy, Q.dw_, Q.st, Q.ddx, Q.dwp, Q.dbp, Q.R, Q.C, 1e-5f);
      } else {
        k_split_stats<T, false><<<sg, 256>>>(Q.dx_, Q.ddy, Q.dw_, Q.st, Q.R, Q.C);
        k_split_dx<T, false><<<dg, 256>>>(Q.dx_, Q.ddy, Q.dw_, Q.st, Q.ddx, Q.dwp, Q.dbp, Q.R, Q.C, 1e-5f);
      }
      CK(cudaGetLastError());
      Q.reduce(parts);
    };
    out.push_back(m);
  }
  // l1024v4s where the host could take it: its partials fit the opt-in shared memory.
  const size_t smem = 2 * (size_t)nvec * V * sizeof(Acc<T>);
  if (!words && nvec <= 4096 && smem <= g_max_smem_optin) {
    CK(cudaFuncSetAttribute((void *)k_l1024v4s<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, (void *)k_l1024v4s<T>, 1024, smem));
    const int64_t parts = std::min<int64_t>(P.R, (int64_t)g_sms * std::max(1, occ));
    Method<T> m;
    m.name = "l1024v4s";
    m.parts = parts;
    m.run = [=](Prob<T> &Q) {
      k_l1024v4s<T><<<(unsigned)parts, 1024, smem>>>(Q.dx_, Q.ddy, Q.dw_, Q.ddx, Q.dwp, Q.dbp, Q.R, Q.C, 1e-5f);
      CK(cudaGetLastError());
      Q.reduce(parts);
    };
    out.push_back(m);
  }
  add_cluster_family<T, 512, 2, false>(out, P, "l512v2");
  add_cluster_family<T, 512, 2, true>(out, P, "l512v2");
  add_cluster_family<T, 256, 4, false>(out, P, "l256v4");
  add_cluster_family<T, 256, 2, true>(out, P, "l256v2");
  add_cluster_family<T, 1024, 1, true>(out, P, "l1024v1");
  add_cluster_family<T, 512, 4, false>(out, P, "l512v4");
  add_cluster_family<T, 512, 2, true, true, 2>(out, P, "l512v2");
  add_cluster_family<T, 256, 2, true, true, 3>(out, P, "l256v2");
  add_cluster_family<T, 256, 4, true, true, 2>(out, P, "l256v4");
  return out;
}

int main(int argc, char **argv) {
  const ExpArgs args(argc, argv,
                     {10000, 12288, 15001, 16384, 20000, 24576, 30001, 32768, 40000, 49152, 50000, 65535, 65536},
                     {20000, 30001, 65536});
  exp_device_init();
  if (args.do_test) {
    for (int64_t c : args.test_cols) {
      if (args.has("f32"))
        test<float>(37, c, 0, methods<float>);
      if (args.has("bf16"))
        test<__nv_bfloat16>(37, c, 0, methods<__nv_bfloat16>);
      if (args.has("f16"))
        test<__half>(37, c, c % 2 ? 1 : 0, methods<__half>);
    }
    if (args.default_tests) {
      test<__nv_bfloat16>(300, 16384, 1, methods<__nv_bfloat16>);
      test<float>(1, 49152, 0, methods<float>);
    }
    printf("tests: %d passed, %d failed\n", g_pass, g_fail);
  }
  return bench_all(args, [](auto t) { return methods<decltype(t)>; });
}
