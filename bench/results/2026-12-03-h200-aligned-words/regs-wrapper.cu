// Register and spill check of eight backward and four forward `words` instances (bf16):
//   nvcc -O3 -arch=sm_90 -I<candle-kernels/src of the tree> -Xptxas -v -c regs-wrapper.cu
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "layer_norm_bwd.cuh"
#include "layer_norm_fwd.cuh"
typedef __nv_bfloat16 T;
#define BW(NAME, L, VV, SM, PF, MINB) extern "C" __global__ void __launch_bounds__((L) < 128 ? 128 : (L), MINB) NAME(const T *x, const T *dy, const T *w, T *dx, float *dwp, float *dbp, const int64_t nrows, const int64_t ncols, const float eps) { layer_norm::bwd_resident<T, L, VV, SM, PF, false, true>(x, dy, w, dx, dwp, dbp, nrows, ncols, eps); }
#define FW(NAME, L, VV, PF) extern "C" __global__ void __launch_bounds__((L) < 128 ? 128 : (L)) NAME(const T *x, T *y, const T *w, const T *b, const int64_t nrows, const int64_t ncols, const float eps) { layer_norm::fwd_resident<T, L, VV, PF, false, true>(x, y, w, b, nrows, ncols, eps); }
BW(b_l128v1, 128,1,0,0,1)
BW(b_l256v1, 256,1,0,0,1)
BW(b_l128v3s, 128,3,1,0,6)
BW(b_l256v3s, 256,3,1,0,3)
BW(b_l512v2s, 512,2,1,0,2)
BW(b_l320v4s, 320,4,1,0,2)
BW(b_l512v4sp, 512,4,1,1,1)
BW(b_l1024v4s, 1024,4,1,0,1)
FW(f_l32v4, 32,4,0)
FW(f_l128v4, 128,4,0)
FW(f_l512v8p, 512,8,1)
FW(f_l1024v8, 1024,8,0)
