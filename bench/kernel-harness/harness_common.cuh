// Shared by the kernel harness (ln_harness.cu) and the bench experiments beside it: the CUDA
// error check, the test data's generator and conversions, the tolerances and the timer.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      printf("CUDA error %s at %s:%d (%s)\n", cudaGetErrorString(e_), __FILE__, __LINE__, #x);     \
      exit(2);                                                                                     \
    }                                                                                              \
  } while (0)

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double urand() { // [-1, 1)
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

static double to_d(float v) { return v; }
static double to_d(double v) { return v; }
static double to_d(__half v) { return (double)__half2float(v); }
static double to_d(__nv_bfloat16 v) { return (double)__bfloat162float(v); }
template <typename T> static T from_d(double v);
template <> float from_d<float>(double v) { return (float)v; }
template <> double from_d<double>(double v) { return v; }
template <> __half from_d<__half>(double v) { return __float2half((float)v); }
template <> __nv_bfloat16 from_d<__nv_bfloat16>(double v) { return __float2bfloat16((float)v); }

template <typename T> static double tol() { return 1e-4; }
template <> double tol<double>() { return 1e-10; }
template <> double tol<__half>() { return 3e-3; }
template <> double tol<__nv_bfloat16>() { return 2e-2; }

template <typename T> static std::vector<T> fetch(const T *p, size_t n) {
  std::vector<T> h(n);
  if (n)
    CK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// Median over 7 batches of the mean time of 20 back-to-back launches (the
// way the candle benchmark times ops: launch gaps hidden, as in a model).
template <typename F> static double time_us(F fn) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 5; ++i)
    fn();
  std::vector<float> ts;
  const int iters = 20;
  for (int rep = 0; rep < 7; ++rep) {
    CK(cudaEventRecord(a));
    for (int i = 0; i < iters; ++i)
      fn();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    ts.push_back(ms * 1e3f / iters);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(ts.begin(), ts.end());
  return (double)ts[ts.size() / 2];
}
