// Fused LSTM cell (candle_nn::LSTM): one kernel per time step forward and one backward instead
// of ~15 and ~55 tensor ops. `gates` is the pre-activation [b, 4h] (input, forget, cell,
// output blocks of h columns, PyTorch's layout), `c_prev` [b, h]; the forward writes h, c and
// the four activated gates ([6, b, h]), the backward reads them back (no recomputation) and
// writes the gradient of `gates` ([b, 4h]) then that of `c_prev` ([b, h]).
#include "cuda_utils.cuh"
#include <stdint.h>

template <typename T> __device__ __forceinline__ T sigmoid_t(T x) {
  return T(1) / (T(1) + expg(-x));
}

template <typename T>
__device__ void lstm_cell_fwd(const T *gates, const T *c_prev, T *out, const size_t b,
                              const size_t h) {
  const size_t n = b * h;
  for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
       idx += (size_t)blockDim.x * gridDim.x) {
    const size_t row = idx / h, j = idx % h;
    const T *g = gates + row * 4 * h + j;
    const T i = sigmoid_t(g[0]), f = sigmoid_t(g[h]), gg = tanhg(g[2 * h]),
            o = sigmoid_t(g[3 * h]);
    const T c = f * c_prev[idx] + i * gg;
    out[idx] = o * tanhg(c);
    out[n + idx] = c;
    out[2 * n + idx] = i;
    out[3 * n + idx] = f;
    out[4 * n + idx] = gg;
    out[5 * n + idx] = o;
  }
}

// out: the forward's [6, b, h]; grad: [6, b, h], only the h and c slices are read.
// d_out: [b, 4h] then [b, h].
template <typename T>
__device__ void lstm_cell_bwd(const T *out, const T *c_prev, const T *grad, T *d_out,
                              const size_t b, const size_t h) {
  const size_t n = b * h;
  for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
       idx += (size_t)blockDim.x * gridDim.x) {
    const size_t row = idx / h, j = idx % h;
    const T c = out[n + idx], i = out[2 * n + idx], f = out[3 * n + idx];
    const T gg = out[4 * n + idx], o = out[5 * n + idx];
    const T tc = tanhg(c);
    const T dh = grad[idx];
    const T dc = grad[n + idx] + dh * o * (T(1) - tc * tc);
    T *dg = d_out + row * 4 * h + j;
    dg[0] = dc * gg * i * (T(1) - i);
    dg[h] = dc * c_prev[idx] * f * (T(1) - f);
    dg[2 * h] = dc * i * (T(1) - gg * gg);
    dg[3 * h] = dh * tc * o * (T(1) - o);
    d_out[4 * n + idx] = dc * f;
  }
}

#define LSTM_OPS(T, SUFFIX)                                                                     \
  extern "C" __global__ void lstm_cell_fwd_##SUFFIX(const T *gates, const T *c_prev, T *out,   \
                                                    const size_t b, const size_t h) {          \
    lstm_cell_fwd(gates, c_prev, out, b, h);                                                    \
  }                                                                                             \
  extern "C" __global__ void lstm_cell_bwd_##SUFFIX(const T *out, const T *c_prev,             \
                                                    const T *grad, T *d_out, const size_t b,   \
                                                    const size_t h) {                          \
    lstm_cell_bwd(out, c_prev, grad, d_out, b, h);                                              \
  }

LSTM_OPS(float, f32)
LSTM_OPS(double, f64)
