// Experiment (bench only, not shipped): the layer-norm backward of rows past the widest tier
// on a thread-block cluster (sm_90). Measured against the split backward on an H100 on
// 2026-12-06 (bench/results/2026-12-06-cluster): 1.08-1.40x its time at rows with vectors, so
// the host keeps the split backward. Built by cluster_exp.cu only.
#pragma once
#include "layer_norm_bwd.cuh"
#include <cooperative_groups.h>

namespace layer_norm {

// Backward, rows past the widest tier on sm_90 and later: a thread-block cluster
// of CL blocks holds one row at a time, so the row is read once (the split
// backward reads x and dy twice). Block `rank` of a cluster owns the vector slots
// [rank * LANES * VECS, (rank + 1) * LANES * VECS) of the row, thread `lane` of it
// the slots lane + k * LANES of that segment. The row's sums (the mean of x - K,
// then sum d^2, sum g, sum g * d; RMS: sum x^2, sum g * x) are reduced in each
// block, and the blocks' sums exchanged through distributed shared memory and
// added in rank order: every block gets the same bits, whatever the scheduling.
// The dw / db partials of the cluster's rows stay in its threads' registers
// (SACC: in dynamic shared memory, 2 * VECS * V * LANES ACCs, each thread only
// touching its own) and are written as row `cluster index` of dw_part / db_part
// for bwd_reduce. PREFETCH: the cluster's next row is loaded while the current
// one is reduced. WORDS as in bwd_split_stats.
template <typename T, int CL, int LANES, int VECS, bool SACC, bool PREFETCH, bool RMS = false,
          bool WORDS = false>
__device__ __forceinline__ void bwd_cluster(const T *__restrict__ x, const T *__restrict__ dy,
                                            const T *__restrict__ w, T *__restrict__ dx,
                                            typename acc_type<T>::type *__restrict__ dw_part,
                                            typename acc_type<T>::type *__restrict__ db_part,
                                            int64_t nrows, int64_t ncols, float eps) {
#if __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  using ACC = typename acc_type<T>::type;
  constexpr int V = Pack<T>::N;
  static_assert(LANES > 32 && LANES % 32 == 0, "a segment per block of whole warps");
  const cg::cluster_group cluster = cg::this_cluster();
  const int64_t cid = blockIdx.x / CL;
  const int64_t nclusters = gridDim.x / CL;
  const int lane = threadIdx.x;
  const int64_t seg0 = (int64_t)cluster.block_rank() * LANES * VECS; // the segment's first slot
  const int vec = use_vec<T>(ncols, x, dy, w, dx);
  const ACC inv_n = ACC(1) / ACC(ncols);
  __shared__ ACC sred[2][3 * 32];
  // The block's sums of the current row, read by every block of the cluster: [0] the first
  // reduction's, [1..3] the second's. The layer norm has two cluster barriers a row: a block
  // writes [0] after the previous row's second barrier, which every block passed after reading
  // [0]; [1..3] after this row's first, which every block passed after reading the previous
  // row's [1..3]. The RMS norm (one barrier a row) alternates two buffers: a block writes a
  // buffer after the barrier that every block passed after reading it two rows before.
  __shared__ ACC xch[RMS ? 2 : 1][4];

  int nv[VECS];
  Pack<T> wk[VECS];
  ACC dwr[SACC ? 1 : VECS][V], dbr[SACC ? 1 : VECS][V];
  ACC *sacc = reinterpret_cast<ACC *>(ln_dyn_smem);
  // SACC: the thread's partial (k, j) at [(k * V + j) * LANES + lane] (dw), after the VECS * V *
  // LANES of dw (db): a warp's accesses are contiguous.
  auto dwa = [&](int k, int j) -> ACC & {
    return SACC ? sacc[(k * V + j) * LANES + lane] : dwr[SACC ? 0 : k][j];
  };
  auto dba = [&](int k, int j) -> ACC & {
    return SACC ? sacc[((VECS + k) * V + j) * LANES + lane] : dbr[SACC ? 0 : k][j];
  };
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    const int64_t slot = seg0 + lane + k * LANES;
    nv[k] = slot_valid<V>(slot, ncols);
    if (w)
      wk[k] = load_pack<T, WORDS>(w, slot, nv[k], vec);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      dwa(k, j) = ACC(0);
      dba(k, j) = ACC(0);
    }
  }
  Pack<T> xn[VECS], gn[VECS];
  auto load_row = [&](int64_t row) {
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      const int64_t slot = seg0 + lane + k * LANES;
      xn[k] = load_pack<T, WORDS>(x + row * ncols, slot, nv[k], vec);
      gn[k] = load_pack<T, WORDS>(dy + row * ncols, slot, nv[k], vec);
    }
  };
  if (PREFETCH && cid < nrows)
    load_row(cid);
  int parity = 0;
  for (int64_t row = cid; row < nrows; row += nclusters, parity ^= RMS) {
    ACC *xb = xch[parity];
    if (!PREFETCH)
      load_row(row);
    Pack<T> xr[VECS], gr[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      xr[k] = xn[k];
      gr[k] = gn[k];
    }
    if (PREFETCH && row + nclusters < nrows)
      load_row(row + nclusters);
    ACC shift = ACC(0), mean = ACC(0);
    if constexpr (!RMS) {
      shift = Elem<T>::get(load_pack(x + row * ncols, 0, 1, false), 0);
      ACC s[1] = {ACC(0)};
#pragma unroll
      for (int k = 0; k < VECS; ++k)
#pragma unroll
        for (int j = 0; j < V; ++j)
          if (j < nv[k])
            s[0] += Elem<T>::get(xr[k], j) - shift;
      row_allreduce<LANES>(s, sred[0]);
      if (threadIdx.x == 0)
        xb[0] = s[0];
      cluster.sync();
      ACC t = ACC(0);
#pragma unroll
      for (int r = 0; r < CL; ++r)
        t += *cluster.map_shared_rank(xb, r);
      mean = t * inv_n; // of x - shift
    }
    ACC s3[3] = {ACC(0), ACC(0), ACC(0)}; // sum d^2, sum g, sum g * d
#pragma unroll
    for (int k = 0; k < VECS; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (j < nv[k]) {
          const ACC d = (Elem<T>::get(xr[k], j) - shift) - mean;
          ACC g = Elem<T>::get(gr[k], j);
          if (w)
            g *= Elem<T>::get(wk[k], j);
          s3[0] += d * d;
          s3[1] += g;
          s3[2] += g * d;
        }
    row_allreduce<LANES>(s3, sred[1]);
    if (threadIdx.x == 0) {
      xb[1] = s3[0];
      xb[2] = s3[1];
      xb[3] = s3[2];
    }
    cluster.sync();
    ACC u[3] = {ACC(0), ACC(0), ACC(0)};
#pragma unroll
    for (int r = 0; r < CL; ++r) {
      const ACC *p = cluster.map_shared_rank(xb, r);
      u[0] += p[1];
      u[1] += p[2];
      u[2] += p[3];
    }
    const ACC rstd = ln_rstd(u[0] * inv_n, eps);
    const ACC mg = RMS ? ACC(0) : u[1] * inv_n;
    const ACC mgx = u[2] * rstd * inv_n;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      if (nv[k] == 0)
        continue;
      Pack<T> o;
      o.zero();
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const ACC xhat = ((Elem<T>::get(xr[k], j) - shift) - mean) * rstd;
        const ACC dyv = Elem<T>::get(gr[k], j);
        const ACC g = w ? dyv * Elem<T>::get(wk[k], j) : dyv;
        Elem<T>::set(o, j, rstd * (g - mg - xhat * mgx));
        if (j < nv[k]) {
          dwa(k, j) += dyv * xhat;
          dba(k, j) += dyv;
        }
      }
      store_pack<T, WORDS>(dx + row * ncols, seg0 + lane + k * LANES, nv[k], vec, o);
    }
  }
  // The blocks' shared memory must outlive the other blocks' reads of it.
  cluster.sync();
  const int64_t prow = cid * ncols;
#pragma unroll
  for (int k = 0; k < VECS; ++k)
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const int64_t col = (seg0 + lane + k * LANES) * V + j;
      if (col < ncols) {
        if (dw_part)
          dw_part[prow + col] = dwa(k, j);
        if (db_part)
          db_part[prow + col] = dba(k, j);
      }
    }
#endif
}

} // namespace layer_norm
