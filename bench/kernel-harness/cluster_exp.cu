// Experiment (bench only): the cluster backward of wide rows (layer_norm_bwd.cuh,
// bwd_cluster) in tiers and cluster sizes other than the registry's, against the split
// backward (two kernels) and the widest resident tier, each with the parameter reduce, same
// process. Checks every kernel's dx / dw / db against a double reference first (exit code 1
// on a failure).
//   nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I<candle-kernels/src> cluster_exp.cu
//   ./cluster_exp [--dtypes f32,bf16,f16] [--cols 16384,20000,..] [--test-cols 20000,..]
//                 [--no-test] [--no-bench]
#include "ln_cluster.cuh"
#include "harness_common.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using layer_norm::acc_type;
template <typename T> using Acc = typename acc_type<T>::type;

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
template <typename T>
__global__ void __launch_bounds__(1024)
    k_reduce(const Acc<T> *dwp, const Acc<T> *dbp, T *dw, T *db, int64_t nparts, int64_t ncols) {
  layer_norm::bwd_reduce<T>(dwp, dbp, dw, db, nparts, ncols);
}

static int g_sms = 0, g_fail = 0, g_pass = 0;
static size_t g_max_smem_optin = 0;
template <typename T> static const char *dname();
template <> const char *dname<float>() { return "f32"; }
template <> const char *dname<__half>() { return "f16"; }
template <> const char *dname<__nv_bfloat16>() { return "bf16"; }

template <typename T> struct Prob {
  int64_t R, C;
  int off;
  std::vector<T> x, dy, w;
  T *dx_ = nullptr, *ddy = nullptr, *dw_ = nullptr, *ddx = nullptr, *ddw = nullptr, *ddb = nullptr;
  Acc<T> *dwp = nullptr, *dbp = nullptr, *st = nullptr;
  // Room for the partial rows of every method (at most 1 GiB a buffer).
  int64_t nparts_max;
  Prob(int64_t r, int64_t c, int o)
      : R(r), C(c), off(o), nparts_max(std::min<int64_t>(4096, ((int64_t)1 << 28) / std::max<int64_t>(1, c))) {
    const size_t N = (size_t)r * c;
    x.resize(N);
    dy.resize(N);
    w.resize(c);
    for (int64_t i = 0; i < r; ++i) {
      const double rowoff = 0.25 * urand();
      for (int64_t j = 0; j < c; ++j) {
        x[i * c + j] = from_d<T>(0.5 + urand() * 1.7 + rowoff);
        dy[i * c + j] = from_d<T>(urand());
      }
    }
    for (int64_t j = 0; j < c; ++j)
      w[j] = from_d<T>(1.0 + 0.5 * urand());
    auto up = [&](T *&d, const std::vector<T> *h, size_t n) {
      CK(cudaMalloc(&d, (n + 2) * sizeof(T)));
      d += off;
      if (h)
        CK(cudaMemcpy(d, h->data(), n * sizeof(T), cudaMemcpyHostToDevice));
    };
    up(dx_, &x, N);
    up(ddy, &dy, N);
    up(dw_, &w, c);
    up(ddx, nullptr, N);
    up(ddw, nullptr, c);
    up(ddb, nullptr, c);
    CK(cudaMalloc(&dwp, nparts_max * c * sizeof(Acc<T>)));
    CK(cudaMalloc(&dbp, nparts_max * c * sizeof(Acc<T>)));
    CK(cudaMalloc(&st, (size_t)std::max<int64_t>(1, r * ((c + 8191) / 1024 + 1)) * 4 * sizeof(Acc<T>)));
  }
  ~Prob() {
    cudaFree(dx_ - off);
    cudaFree(ddy - off);
    cudaFree(dw_ - off);
    cudaFree(ddx - off);
    cudaFree(ddw - off);
    cudaFree(ddb - off);
    cudaFree(dwp);
    cudaFree(dbp);
    cudaFree(st);
  }
  void reduce(int64_t parts) {
    const int64_t rgrid = parts <= LAYER_NORM_BWD_REDUCE_COLUMN_PARTS ? (C + 1023) / 1024 : (C + 31) / 32;
    k_reduce<T><<<(unsigned)rgrid, 1024>>>(dwp, dbp, ddw, ddb, parts, C);
    CK(cudaGetLastError());
  }
};

// A way to run the backward (kernels + reduce) of a problem.
template <typename T> struct Method {
  std::string name;
  int64_t parts = 0;
  std::function<void(Prob<T> &)> run;
};

template <typename T> static bool words_row(const Prob<T> &P) {
  const int64_t V = 16 / sizeof(T);
  return P.C % V != 0 || P.off != 0;
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

// Every method's dx, dw, db against the double reference; the cluster methods also run twice
// (bit-for-bit the same).
template <typename T> static void test(int64_t R, int64_t C, int off) {
  Prob<T> P(R, C, off);
  std::vector<double> rdx((size_t)R * C), rdw(C, 0.0), rdb(C, 0.0);
  for (int64_t i = 0; i < R; ++i) {
    const T *xr = &P.x[i * C], *gr = &P.dy[i * C];
    double m = 0, v = 0, mg = 0, mgx = 0;
    for (int64_t j = 0; j < C; ++j)
      m += to_d(xr[j]);
    m /= C;
    for (int64_t j = 0; j < C; ++j)
      v += (to_d(xr[j]) - m) * (to_d(xr[j]) - m);
    const double rstd = 1.0 / std::sqrt(v / C + 1e-5);
    for (int64_t j = 0; j < C; ++j) {
      const double g = to_d(gr[j]) * to_d(P.w[j]), xh = (to_d(xr[j]) - m) * rstd;
      mg += g;
      mgx += g * xh;
      rdw[j] += to_d(gr[j]) * xh;
      rdb[j] += to_d(gr[j]);
    }
    mg /= C;
    mgx /= C;
    for (int64_t j = 0; j < C; ++j) {
      const double g = to_d(gr[j]) * to_d(P.w[j]), xh = (to_d(xr[j]) - m) * rstd;
      rdx[i * C + j] = rstd * (g - mg - xh * mgx);
    }
  }
  // The harness's tolerances (harness_common.cuh), here on |err| / (1 + |ref|).
  auto err = [](const std::vector<T> &got, const std::vector<double> &ref) {
    double e = 0;
    for (size_t i = 0; i < ref.size(); ++i)
      e = std::max(e, std::fabs(to_d(got[i]) - ref[i]) / (1.0 + std::fabs(ref[i])));
    return e;
  };
  for (auto &m : methods(P)) {
    CK(cudaMemset(P.ddx, 0, (size_t)R * C * sizeof(T)));
    m.run(P);
    CK(cudaDeviceSynchronize());
    const auto dx = fetch(P.ddx, (size_t)R * C), dw = fetch(P.ddw, C), db = fetch(P.ddb, C);
    const double ex = err(dx, rdx), ew = err(dw, rdw), eb = err(db, rdb);
    bool same = true;
    if (m.name.find(" c") != std::string::npos) {
      CK(cudaMemset(P.dwp, 0xff, P.nparts_max * C * sizeof(Acc<T>)));
      m.run(P);
      CK(cudaDeviceSynchronize());
      same = fetch(P.ddx, (size_t)R * C) == dx && fetch(P.ddw, C) == dw && fetch(P.ddb, C) == db;
    }
    const bool ok = ex <= tol<T>() && ew <= tol<T>() && eb <= tol<T>() && same;
    (ok ? g_pass : g_fail)++;
    printf("test %-4s %5lldx%-6lld off %d %-26s parts %5lld dx %.2e dw %.2e db %.2e%s %s\n", dname<T>(),
           (long long)R, (long long)C, off, m.name.c_str(), (long long)m.parts, ex, ew, eb,
           same ? "" : " NOT DETERMINISTIC", ok ? "ok" : "FAIL");
  }
}

template <typename T> static void bench(int64_t C) {
  const int64_t R = ((int64_t)32 << 20) / ((int64_t)C * (int64_t)sizeof(T)) +
                    (((int64_t)32 << 20) % ((int64_t)C * (int64_t)sizeof(T)) != 0);
  Prob<T> P(R, C, 0);
  const double bytes = 3.0 * R * C * sizeof(T);
  for (auto &m : methods(P)) {
    const double us = time_us([&] { m.run(P); });
    printf("bench %-4s %5lldx%-6lld %-26s parts %5lld %8.1f us %6.0f GB/s\n", dname<T>(), (long long)R,
           (long long)C, m.name.c_str(), (long long)m.parts, us, bytes / (us * 1e-6) / 1e9);
  }
}

int main(int argc, char **argv) {
  std::string dtypes = ",f32,bf16,f16,";
  std::vector<int64_t> cols = {10000, 12288, 15001, 16384, 20000, 24576, 30001, 32768, 40000, 49152, 50000, 65535, 65536};
  std::vector<int64_t> test_cols = {20000, 30001, 65536};
  bool do_test = true, do_bench = true, default_tests = true;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--dtypes") && i + 1 < argc)
      dtypes = std::string(",") + argv[++i] + ",";
    else if (!strcmp(argv[i], "--cols") && i + 1 < argc) {
      cols.clear();
      for (char *t = strtok(argv[++i], ","); t; t = strtok(nullptr, ","))
        cols.push_back(atoll(t));
    } else if (!strcmp(argv[i], "--test-cols") && i + 1 < argc) {
      test_cols.clear();
      default_tests = false;
      for (char *t = strtok(argv[++i], ","); t; t = strtok(nullptr, ","))
        test_cols.push_back(atoll(t));
    } else if (!strcmp(argv[i], "--no-test"))
      do_test = false;
    else if (!strcmp(argv[i], "--no-bench"))
      do_bench = false;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  g_sms = prop.multiProcessorCount;
  g_max_smem_optin = prop.sharedMemPerBlockOptin;
  printf("device %s, %d SMs\n", prop.name, g_sms);
  if (do_test) {
    for (int64_t c : test_cols) {
      if (dtypes.find(",f32,") != std::string::npos)
        test<float>(37, c, 0);
      if (dtypes.find(",bf16,") != std::string::npos)
        test<__nv_bfloat16>(37, c, 0);
      if (dtypes.find(",f16,") != std::string::npos)
        test<__half>(37, c, c % 2 ? 1 : 0);
    }
    if (default_tests) {
      test<__nv_bfloat16>(300, 16384, 1);
      test<float>(1, 49152, 0);
    }
    printf("tests: %d passed, %d failed\n", g_pass, g_fail);
  }
  for (int64_t c : do_bench ? cols : std::vector<int64_t>{}) {
    if (dtypes.find(",f32,") != std::string::npos)
      bench<float>(c);
    if (dtypes.find(",bf16,") != std::string::npos)
      bench<__nv_bfloat16>(c);
    if (dtypes.find(",f16,") != std::string::npos)
      bench<__half>(c);
  }
  return g_fail ? 1 : 0;
}
