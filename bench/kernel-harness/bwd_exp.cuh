// Shared by the backward experiments beside the kernel harness (cluster_exp.cu, tile_exp.cu):
// a problem's buffers, the ways to run it (kernels + parameter reduce), the check of each way
// against a double reference and the bench loop (rows for a 32 MiB tensor).
#pragma once
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
  bool repeat = false; // check that a second run gives the same bits
};

template <typename T> static bool words_row(const Prob<T> &P) {
  const int64_t V = 16 / sizeof(T);
  return P.C % V != 0 || P.off != 0;
}

// Every method's dx, dw, db against the double reference; methods with `repeat` also run twice
// (bit-for-bit the same). methods(P): the ways to run problem P.
template <typename T, typename M> static void test(int64_t R, int64_t C, int off, M methods) {
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
    if (m.repeat) {
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

// GB/s of a device copy moving `bytes` (half read, half written): the ceiling of "% copy".
static double same_bytes_copy_gbps(double bytes) {
  const size_t half = (size_t)(bytes / 2);
  char *a, *b;
  CK(cudaMalloc(&a, half));
  CK(cudaMalloc(&b, half));
  CK(cudaMemset(a, 1, half));
  const double us = time_us([&] { CK(cudaMemcpyAsync(b, a, half, cudaMemcpyDeviceToDevice)); });
  CK(cudaFree(a));
  CK(cudaFree(b));
  return bytes / (us * 1e-6) / 1e9;
}

// Each method at C columns, rows for a 32 MiB tensor.
template <typename T, typename M> static void bench(int64_t C, M methods) {
  const int64_t R = ((int64_t)32 << 20) / ((int64_t)C * (int64_t)sizeof(T)) +
                    (((int64_t)32 << 20) % ((int64_t)C * (int64_t)sizeof(T)) != 0);
  Prob<T> P(R, C, 0);
  const double bytes = 3.0 * R * C * sizeof(T);
  const double copy_gbps = same_bytes_copy_gbps(bytes);
  for (auto &m : methods(P)) {
    const double us = time_us([&] { m.run(P); });
    const double gbps = bytes / (us * 1e-6) / 1e9;
    printf("bench %-4s %5lldx%-6lld %-26s parts %5lld %8.1f us %6.0f GB/s %5.1f%% copy\n", dname<T>(),
           (long long)R, (long long)C, m.name.c_str(), (long long)m.parts, us, gbps, 100.0 * gbps / copy_gbps);
  }
}


// The experiments' command line: --dtypes f32,bf16,f16 --cols C,.. --test-cols C,..
// --no-test --no-bench (the defaults are each experiment's).
struct ExpArgs {
  std::string dtypes = ",f32,bf16,f16,";
  std::vector<int64_t> cols, test_cols;
  bool do_test = true, do_bench = true, default_tests = true;
  ExpArgs(int argc, char **argv, std::vector<int64_t> cols_, std::vector<int64_t> test_cols_)
      : cols(std::move(cols_)), test_cols(std::move(test_cols_)) {
    auto list = [](char *arg) {
      std::vector<int64_t> v;
      for (char *t = strtok(arg, ","); t; t = strtok(nullptr, ","))
        v.push_back(atoll(t));
      return v;
    };
    for (int i = 1; i < argc; ++i) {
      if (!strcmp(argv[i], "--dtypes") && i + 1 < argc)
        dtypes = std::string(",") + argv[++i] + ",";
      else if (!strcmp(argv[i], "--cols") && i + 1 < argc)
        cols = list(argv[++i]);
      else if (!strcmp(argv[i], "--test-cols") && i + 1 < argc) {
        test_cols = list(argv[++i]);
        default_tests = false;
      } else if (!strcmp(argv[i], "--no-test"))
        do_test = false;
      else if (!strcmp(argv[i], "--no-bench"))
        do_bench = false;
    }
  }
  bool has(const char *dtype) const { return dtypes.find(std::string(",") + dtype + ",") != std::string::npos; }
};

// Each method at each of args.cols for each dtype asked (methods_of(T{}) gives an experiment's
// methods<T>), then the exit code: 1 after a failed test.
template <typename F> static int bench_all(const ExpArgs &args, F methods_of) {
  for (int64_t c : args.do_bench ? args.cols : std::vector<int64_t>{}) {
    if (args.has("f32"))
      bench<float>(c, methods_of(float{}));
    if (args.has("bf16"))
      bench<__nv_bfloat16>(c, methods_of(__nv_bfloat16{}));
    if (args.has("f16"))
      bench<__half>(c, methods_of(__half{}));
  }
  return g_fail ? 1 : 0;
}

// The device's SM count and opt-in shared memory into g_sms / g_max_smem_optin, printed.
static void exp_device_init() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  g_sms = prop.multiProcessorCount;
  g_max_smem_optin = prop.sharedMemPerBlockOptin;
  printf("device %s, %d SMs\n", prop.name, g_sms);
}
