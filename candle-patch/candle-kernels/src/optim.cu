// Fused AdamW (candle_nn::AdamW): two passes over a parameter tensor per step instead of ~15
// tensor ops. `mv` holds the first moment, then the second one (2 * n elements). The scalars
// come from the host in the parameter's dtype and the arithmetic is that of the tensor ops,
// one rounding per op (no contraction into fma), so both give the same values.
#include "cuda_utils.cuh"
#include <stdint.h>

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }

// m = m * b1 + g * c1, v = v * b2 + g^2 * c2 (c = 1 - b, rounded on the host like the ops do).
template <typename T>
__device__ void adamw_moments(T *mv, const T *g, const size_t n, const T b1, const T c1,
                              const T b2, const T c2) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)blockDim.x * gridDim.x) {
    const T gi = g[i];
    mv[i] = add_rn(mul_rn(mv[i], b1), mul_rn(gi, c1));
    mv[n + i] = add_rn(mul_rn(mv[n + i], b2), mul_rn(mul_rn(gi, gi), c2));
  }
}

// p = p * decay - (m * sm / (sqrt(v * sv) + eps)) * lr, decay = 1 - lr * weight_decay and
// sm, sv the bias corrections 1 / (1 - beta^t).
template <typename T>
__device__ void adamw_update(T *p, const T *mv, const size_t n, const T decay, const T lr,
                             const T sm, const T sv, const T eps) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)blockDim.x * gridDim.x) {
    const T step = mul_rn(mv[i], sm) / add_rn(sqrtg(mul_rn(mv[n + i], sv)), eps);
    p[i] = sub_rn(mul_rn(p[i], decay), mul_rn(step, lr));
  }
}

#define ADAMW_OPS(T, SUFFIX)                                                                    \
  extern "C" __global__ void adamw_moments_##SUFFIX(T *mv, const T *g, const size_t n,         \
                                                    const T b1, const T c1, const T b2,        \
                                                    const T c2) {                              \
    adamw_moments(mv, g, n, b1, c1, b2, c2);                                                    \
  }                                                                                             \
  extern "C" __global__ void adamw_update_##SUFFIX(T *p, const T *mv, const size_t n,          \
                                                   const T decay, const T lr, const T sm,      \
                                                   const T sv, const T eps) {                  \
    adamw_update(p, mv, n, decay, lr, sm, sv, eps);                                             \
  }

ADAMW_OPS(float, f32)
ADAMW_OPS(double, f64)
