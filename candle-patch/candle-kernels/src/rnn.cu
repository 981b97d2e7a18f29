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

// One cell element from the gate pre-activations: writes h, c, i, f, g, o to `out` at a
// stride of `plane` elements.
template <typename T>
__device__ __forceinline__ void cell_fwd(const T gi, const T gf, const T gg_pre, const T go,
                                         const T c_prev, T *out, const size_t plane) {
  const T i = sigmoid_t(gi), f = sigmoid_t(gf), gg = tanhg(gg_pre), o = sigmoid_t(go);
  const T c = f * c_prev + i * gg;
  out[0] = o * tanhg(c);
  out[plane] = c;
  out[2 * plane] = i;
  out[3 * plane] = f;
  out[4 * plane] = gg;
  out[5 * plane] = o;
}

// The backward of `cell_fwd` from its saved `out` (c, i, f, g, o at a stride of `plane`) and
// the gradients of h and c: writes the four gate gradients at a stride of `h` to `dg`,
// returns the gradient of c_prev.
template <typename T>
__device__ __forceinline__ T cell_bwd(const T *out, const size_t plane, const T c_prev,
                                      const T dh, const T dc_in, T *dg, const size_t h) {
  const T c = out[plane], i = out[2 * plane], f = out[3 * plane];
  const T gg = out[4 * plane], o = out[5 * plane];
  const T tc = tanhg(c);
  const T dc = dc_in + dh * o * (T(1) - tc * tc);
  dg[0] = dc * gg * i * (T(1) - i);
  dg[h] = dc * c_prev * f * (T(1) - f);
  dg[2 * h] = dc * i * (T(1) - gg * gg);
  dg[3 * h] = dh * tc * o * (T(1) - o);
  return dc * f;
}

template <typename T>
__device__ void lstm_cell_fwd(const T *gates, const T *c_prev, T *out, const size_t b,
                              const size_t h) {
  const size_t n = b * h;
  for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
       idx += (size_t)blockDim.x * gridDim.x) {
    const size_t row = idx / h, j = idx % h;
    const T *g = gates + row * 4 * h + j;
    cell_fwd(g[0], g[h], g[2 * h], g[3 * h], c_prev[idx], out + idx, n);
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
    d_out[4 * n + idx] =
        cell_bwd(out + idx, n, c_prev[idx], grad[idx], grad[n + idx], d_out + row * 4 * h + j, h);
  }
}

// The whole sequence (rnn::LstmSeq): the host loops over the steps, one cuBLAS gemm and one of
// these kernels each. `out` is [6, t + 1, b, h] (planes of `plane` = (t + 1) * b * h
// elements): h, c, then the activated gates; step s is at index s + 1, index 0 holds h0 and
// c0 (and zero gates). Step s reads the input projection `xg` [b, 4h] of the step, `hw` =
// h_{s-1} W_hh^T [b, 4h], and h_{s-1}, c_{s-1} (from the initial state when s = 0).
template <typename T>
__device__ void lstm_seq_fwd(const T *xg, const T *hw, const T *h_prev, const T *c_prev, T *out,
                             const size_t plane, const size_t s, const size_t b,
                             const size_t h) {
  const size_t n = b * h;
  for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
       idx += (size_t)blockDim.x * gridDim.x) {
    const size_t row = idx / h, j = idx % h;
    const T *x = xg + row * 4 * h + j, *w = hw + row * 4 * h + j;
    cell_fwd(x[0] + w[0], x[h] + w[h], x[2 * h] + w[2 * h], x[3 * h] + w[3 * h], c_prev[idx],
             out + (s + 1) * n + idx, plane);
    if (s == 0) {
      out[idx] = h_prev[idx];
      out[plane + idx] = c_prev[idx];
      for (int k = 2; k < 6; ++k)
        out[k * plane + idx] = T(0);
    }
  }
}

// Step s backward: `grad` is the gradient of `out` (only the h and c planes are read),
// `dh_rec` = dg_{s+1} W_hh (zero for the last step), `dc` the gradient of c_s carried from the
// step after (updated in place to that of c_{s-1}); writes the gradient of the step's gates
// `dg` [b, 4h].
template <typename T>
__device__ void lstm_seq_bwd(const T *out, const T *grad, const T *dh_rec, T *dc, T *dg,
                             const size_t plane, const size_t s, const size_t b,
                             const size_t h) {
  const size_t n = b * h;
  const size_t at = (s + 1) * n;
  for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n;
       idx += (size_t)blockDim.x * gridDim.x) {
    const size_t row = idx / h, j = idx % h;
    dc[idx] = cell_bwd(out + at + idx, plane, out[plane + s * n + idx], grad[at + idx] + dh_rec[idx],
                       grad[plane + at + idx] + dc[idx], dg + row * 4 * h + j, h);
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
  }                                                                                             \
  extern "C" __global__ void lstm_seq_fwd_##SUFFIX(                                             \
      const T *xg, const T *hw, const T *h_prev, const T *c_prev, T *out, const size_t plane,   \
      const size_t s, const size_t b, const size_t h) {                                         \
    lstm_seq_fwd(xg, hw, h_prev, c_prev, out, plane, s, b, h);                                  \
  }                                                                                             \
  extern "C" __global__ void lstm_seq_bwd_##SUFFIX(const T *out, const T *grad,                \
                                                   const T *dh_rec, T *dc, T *dg,               \
                                                   const size_t plane, const size_t s,          \
                                                   const size_t b, const size_t h) {            \
    lstm_seq_bwd(out, grad, dh_rec, dc, dg, plane, s, b, h);                                    \
  }

LSTM_OPS(float, f32)
LSTM_OPS(double, f64)
