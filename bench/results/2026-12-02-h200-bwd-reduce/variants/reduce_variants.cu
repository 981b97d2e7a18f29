// Device call 5 experiment: which part of the new parameter reduce costs time at 132-1188
// partials? Five variants of the f32 reduce over [nparts x ncols] partials, timed alone:
//   old:  pin 0052 (32 columns x 32 slices, unroll-4 loop per gradient, thread (c, 0) adds
//         the 32 slice sums serially, padded shared memory)
//   new:  this change (slices from reduce_slices, 8 predicated loads per gradient, tree)
//   newS: new loads, old final sum (serial by thread (c, 0), one barrier)
//   oldT: old loads, new tree
//   oldR: old loads and serial sum, with the new choice of slices
// Build: nvcc -O3 -arch=sm_90 reduce_variants.cu -o rv
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cmath>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s\n", cudaGetErrorString(e)); return 1; } } while (0)

constexpr int RT = 1024;

template <bool NEWLOADS, bool TREE>
__global__ void __launch_bounds__(RT, 2) red(const float *__restrict__ dwp, const float *__restrict__ dbp,
                                              float *__restrict__ dw, float *__restrict__ db, int64_t nparts,
                                              int64_t ncols, int slices) {
  __shared__ float sw[RT + RT / 8], sb[RT + RT / 8]; // room for the padded layout at 128 slices
  const int cols = RT / slices;
  const int tx = threadIdx.x % cols, ty = threadIdx.x / cols;
  const int ld = cols + 1; // padded row of the serial sum's layout
  for (int64_t c0 = (int64_t)blockIdx.x * cols; c0 < ncols; c0 += (int64_t)gridDim.x * cols) {
    const int64_t col = c0 + tx;
    float aw = 0.f, ab = 0.f;
    if (col < ncols) {
      if (NEWLOADS) {
        for (int64_t p = ty; p < nparts; p += 8LL * slices) {
          float vw[8], vb[8];
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            const int64_t q = p + (int64_t)i * slices;
            vw[i] = q < nparts ? dwp[q * ncols + col] : 0.f;
            vb[i] = q < nparts ? dbp[q * ncols + col] : 0.f;
          }
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            aw += vw[i];
            ab += vb[i];
          }
        }
      } else {
#pragma unroll 4
        for (int64_t p = ty; p < nparts; p += slices)
          aw += dwp[p * ncols + col];
#pragma unroll 4
        for (int64_t p = ty; p < nparts; p += slices)
          ab += dbp[p * ncols + col];
      }
    }
    __syncthreads();
    if (TREE) {
      sw[threadIdx.x] = aw;
      sb[threadIdx.x] = ab;
      __syncthreads();
      for (int h = slices / 2; h > 0; h /= 2) {
        if (ty < h) {
          sw[threadIdx.x] += sw[threadIdx.x + h * cols];
          sb[threadIdx.x] += sb[threadIdx.x + h * cols];
        }
        __syncthreads();
      }
      if (ty == 0 && col < ncols) {
        dw[col] = sw[tx];
        db[col] = sb[tx];
      }
    } else {
      sw[ty * ld + tx] = aw;
      sb[ty * ld + tx] = ab;
      __syncthreads();
      if (ty == 0 && col < ncols) {
        float tw = sw[tx], tb = sb[tx];
        for (int i = 1; i < slices; ++i) {
          tw += sw[i * ld + tx];
          tb += sb[i * ld + tx];
        }
        dw[col] = tw;
        db[col] = tb;
      }
    }
  }
}

typedef void (*K)(const float *, const float *, float *, float *, int64_t, int64_t, int);

static int rule(int64_t nparts, int64_t ncols) {
  const int max = ncols <= 512 ? RT / 8 : 32;
  int s = 4;
  while (s < max && (nparts + s - 1) / s > 8)
    s *= 2;
  return s;
}

int main() {
  const int64_t shapes[][2] = {{1188, 97}, {792, 201}, {1188, 64}, {512, 64}, {792, 1024}, {924, 1024},
                               {396, 2500}, {792, 3001}, {264, 3001}, {528, 4096}, {264, 7777},
                               {132, 15001}, {18, 30001}, {11, 50257}, {17, 65535}, {9, 65535}};
  size_t maxn = 0;
  for (auto &s : shapes)
    maxn = std::max(maxn, (size_t)(s[0] * s[1]));
  float *a, *b, *dw, *db;
  CK(cudaMalloc(&a, maxn * 4));
  CK(cudaMalloc(&b, maxn * 4));
  CK(cudaMalloc(&dw, 65536 * 4));
  CK(cudaMalloc(&db, 65536 * 4));
  std::vector<float> h(maxn);
  for (size_t i = 0; i < maxn; ++i)
    h[i] = (float)((i * 2654435761u) % 1000) / 1000.f - 0.5f;
  CK(cudaMemcpy(a, h.data(), maxn * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b, h.data(), maxn * 4, cudaMemcpyHostToDevice));
  struct V { const char *name; K k; bool rule; };
  const V vs[] = {{"old", red<false, false>, false}, {"new", red<true, true>, true},
                  {"newS", red<true, false>, true}, {"oldT", red<false, true>, false},
                  {"oldR", red<false, false>, true}};
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ref(65536), got(65536);
  for (int round = 0; round < 2; ++round)
    for (auto &s : shapes) {
      const int64_t np = s[0], nc = s[1];
      printf("round %d parts %5lld cols %6lld", round, (long long)np, (long long)nc);
      for (int v = 0; v < 5; ++v) {
        const int slices = vs[v].rule ? rule(np, nc) : 32;
        const int cols = RT / slices;
        const unsigned grid = (unsigned)((nc + cols - 1) / cols);
        for (int i = 0; i < 10; ++i)
          vs[v].k<<<grid, RT>>>(a, b, dw, db, np, nc, slices);
        CK(cudaGetLastError());
        const int it = 200;
        CK(cudaEventRecord(e0));
        for (int i = 0; i < it; ++i)
          vs[v].k<<<grid, RT>>>(a, b, dw, db, np, nc, slices);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        CK(cudaMemcpy(got.data(), dw, nc * 4, cudaMemcpyDeviceToHost));
        if (v == 0)
          ref = got;
        double maxd = 0;
        for (int64_t c = 0; c < nc; ++c)
          maxd = std::max(maxd, (double)std::abs(got[c] - ref[c]));
        printf(" | %-4s s%-3d %6.2f us (max |d| %.1e)", vs[v].name, slices, ms * 1000 / it, maxd);
      }
      printf("\n");
    }
  return 0;
}
