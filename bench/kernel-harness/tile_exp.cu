// Experiment (bench only): the layer norm's tile backward of narrow rows (layer_norm_bwd.cuh,
// bwd_tile) in tiers, tile sizes and register layouts other than the registry's, against the
// resident tier the host takes at each width (without the tile tiers),
// each with the parameter reduce, same process. Checks every method's dx / dw / db against a
// double reference first (exit code 1 on a failure).
//   nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I<candle-kernels/src> tile_exp.cu
//   (-DTILE_COLS adds k_tile_cols, the groups' rows then the block's columns for dw / db)
//   ./tile_exp [--dtypes f32,bf16,f16] [--cols 97,333,..] [--test-cols 97,..] [--no-test] [--no-bench]
#include "layer_norm_bwd.cuh"
#include "bwd_exp.cuh"

// The narrow tiers of the registry's backward lists (layer_norm_tiers.cuh), as the host
// launches them: max(L, 128) threads, a persistent grid.
template <typename T, int L, int VV, bool WORDS>
__global__ void __launch_bounds__(L < 128 ? 128 : L, 1)
    k_res(const T *x, const T *dy, const T *w, T *dx, Acc<T> *dwp, Acc<T> *dbp, int64_t nrows,
          int64_t ncols, float eps) {
  layer_norm::bwd_resident<T, L, VV, false, false, false, WORDS>(x, dy, w, dx, dwp, dbp, nrows, ncols, eps);
}

template <typename T, int L, int VV, bool RR>
__global__ void __launch_bounds__(layer_norm::TILE_THREADS)
    k_tile(const T *x, const T *dy, const T *w, T *dx, Acc<T> *dwp, Acc<T> *dbp, int64_t nrows,
           int64_t ncols, int tile_rows, float eps) {
  layer_norm::bwd_tile<T, L, VV, RR>(x, dy, w, dx, dwp, dbp, nrows, ncols, tile_rows, eps);
}

template <typename T> static bool words_inst(const Prob<T> &P) {
  return sizeof(T) == 2 && words_row(P);
}

// The host's tier: the first of the dtype's list whose L * VV vectors cover the row.
template <typename T, int L, int VV>
static bool add_res(std::vector<Method<T>> &out, const Prob<T> &P, const char *tag) {
  constexpr int64_t V = 16 / sizeof(T);
  if ((int64_t)L * VV * V < P.C)
    return false;
  const bool words = words_inst(P);
  void *f = words ? (void *)k_res<T, L, VV, true> : (void *)k_res<T, L, VV, false>;
  constexpr int threads = L < 128 ? 128 : L;
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, f, threads, 0));
  const int64_t rpb = threads / L;
  const int64_t parts = std::min<int64_t>({(P.R + rpb - 1) / rpb, (int64_t)g_sms * std::max(1, occ), P.nparts_max});
  Method<T> m;
  m.name = std::string(tag) + (words ? "-words" : "");
  m.parts = parts;
  m.repeat = true;
  m.run = [=](Prob<T> &Q) {
    if (words)
      k_res<T, L, VV, true><<<(unsigned)parts, threads>>>(Q.dx_, Q.ddy, Q.dw_, Q.ddx, Q.dwp, Q.dbp, Q.R, Q.C, 1e-5f);
    else
      k_res<T, L, VV, false><<<(unsigned)parts, threads>>>(Q.dx_, Q.ddy, Q.dw_, Q.ddx, Q.dwp, Q.dbp, Q.R, Q.C, 1e-5f);
    CK(cudaGetLastError());
    Q.reduce(parts);
  };
  out.push_back(m);
  return true;
}

// Rows a tile of a method whose groups have `lanes` lanes: about `tile_bytes` of x, a whole
// number of rows for every group.
template <typename T> static int tile_rows_for(int lanes, const Prob<T> &P, int64_t tile_bytes) {
  const int64_t ng = layer_norm::TILE_THREADS / lanes, group_bytes = ng * P.C * (int64_t)sizeof(T);
  return (int)(ng * std::max<int64_t>(1, (tile_bytes + group_bytes / 2) / group_bytes));
}

// How a tile kernel `f` runs: `parts` blocks (as many as are resident, at most one a tile) and
// `desc` (rows a tile, shared memory, blocks an SM, registers). False where its dynamic shared
// memory does not fit.
struct TileLaunch {
  int64_t parts = 0;
  std::string desc;
};
template <typename T>
static bool tile_launch(void *f, size_t smem, int tile_rows, const Prob<T> &P, TileLaunch &tl) {
  if (smem > g_max_smem_optin)
    return false;
  CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, f, layer_norm::TILE_THREADS, smem));
  const int64_t ntiles = (P.R + tile_rows - 1) / tile_rows;
  tl.parts = std::min<int64_t>({ntiles, (int64_t)g_sms * std::max(1, occ), P.nparts_max});
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, f));
  tl.desc = " r" + std::to_string(tile_rows) + " " + std::to_string(smem / 1024) + "K x" + std::to_string(occ) +
            " " + std::to_string(fa.numRegs) + "r" + (fa.localSizeBytes ? " LOCAL" : "");
  return true;
}

// A tile method: groups of L lanes, VV vectors' worth of columns a lane, tiles of about
// `tile_bytes` of x (the registry's LAYER_NORM_BWD_TILE_BYTES in the shipped tiers), RR: rereads.
template <typename T, int L, int VV, bool RR>
static void add_tile(std::vector<Method<T>> &out, const Prob<T> &P, int64_t tile_bytes) {
  constexpr int64_t V = 16 / sizeof(T);
  if ((int64_t)L * VV * V < P.C || (int64_t)L * VV * V / 2 >= P.C)
    return;
  constexpr int THREADS = layer_norm::TILE_THREADS;
  const int tile_rows = tile_rows_for(L, P, tile_bytes);
  const size_t smem = (size_t)layer_norm::tile_smem_bytes<T>(L, RR, tile_rows, P.C);
  TileLaunch tl;
  if (!tile_launch(reinterpret_cast<void *>(k_tile<T, L, VV, RR>), smem, tile_rows, P, tl))
    return;
  const int64_t parts = tl.parts;
  Method<T> m_;
  m_.name = "tile l" + std::to_string(L) + "v" + std::to_string(VV) + (RR ? "rr" : "") + tl.desc;
  m_.parts = parts;
  m_.repeat = true;
  m_.run = [=](Prob<T> &Q) {
    k_tile<T, L, VV, RR><<<(unsigned)parts, THREADS, smem>>>(Q.dx_, Q.ddy, Q.dw_, Q.ddx, Q.dwp, Q.dbp, Q.R, Q.C,
                                                             tile_rows, 1e-5f);
    CK(cudaGetLastError());
    Q.reduce(parts);
  };
  out.push_back(m_);
}

#ifdef TILE_COLS
// Variant (-DTILE_COLS): the groups take the tile's rows out of shared memory as bwd_tile's
// rereading layout does (the mean, the three sums, dx) and leave each row's shift, mean and rstd
// in shared memory; then the whole block adds dw / db column by column over the tile's rows, in
// row order: a thread holds the partials of CJ columns (ncols <= CJ * THREADS) instead of a
// lane's K, so a lane may cover 32 columns (rows to 1024) without spilling. One partial row per
// block, no groups' partials to add.
template <typename T, int LANES, int K, int CJ>
__global__ void __launch_bounds__(layer_norm::TILE_THREADS)
    k_tile_cols(const T *__restrict__ x, const T *__restrict__ dy, const T *__restrict__ w, T *__restrict__ dx,
                Acc<T> *__restrict__ dw_part, Acc<T> *__restrict__ db_part, int64_t nrows, int64_t ncols,
                int tile_rows, float eps) {
  using namespace layer_norm;
  using ACC = Acc<T>;
  constexpr int THREADS = TILE_THREADS, NG = THREADS / LANES;
  uint4 *smem = reinterpret_cast<uint4 *>(ln_dyn_smem);
  const int64_t tw = tile_words<T>((int64_t)tile_rows * ncols);
  // Stage s of x and of dy, computed: an array of the stages indexed by s would live in local memory.
  auto sx = [&](int s) { return smem + 2 * tw * s; };
  auto sdy = [&](int s) { return smem + tw + 2 * tw * s; };
  uint4 *const sdx = smem + 4 * tw;
  ACC *const sw = reinterpret_cast<ACC *>(smem + 5 * tw);
  ACC *const sst = sw + ncols; // shift, mean, rstd of each row of the tile
  const int lane = threadIdx.x % LANES, grp = threadIdx.x / LANES;
  const int64_t n = nrows * ncols;
  const int64_t ntiles = (nrows + tile_rows - 1) / tile_rows;
  const ACC inv_n = ACC(1) / ACC(ncols);
  ACC dwa[CJ], dba[CJ];
#pragma unroll
  for (int j = 0; j < CJ; ++j) {
    dwa[j] = ACC(0);
    dba[j] = ACC(0);
  }
  for (int64_t c = threadIdx.x; c < ncols; c += THREADS)
    sw[c] = w ? to_acc(w[c]) : ACC(1);
  auto copy_in = [&](int64_t t, int s) {
    const int64_t e0 = t * tile_rows * ncols, e1 = min(nrows, (t + 1) * tile_rows) * ncols;
    copy_tile_in<T, THREADS>(sx(s), x, n, e0, e1);
    copy_tile_in<T, THREADS>(sdy(s), dy, n, e0, e1);
    cp_async_commit();
  };
  int64_t t = blockIdx.x;
  if (t < ntiles)
    copy_in(t, 0);
  for (int it = 0; t < ntiles; ++it, t += gridDim.x) {
    const int s = it & 1;
    if (t + gridDim.x < ntiles)
      copy_in(t + gridDim.x, s ^ 1);
    else
      cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const int64_t e0 = t * tile_rows * ncols;
    const int rows = (int)(min(nrows, (t + 1) * tile_rows) - t * tile_rows);
    const T *tx = reinterpret_cast<const T *>(sx(s)) + word_offset(x + e0);
    const T *tdy = reinterpret_cast<const T *>(sdy(s)) + word_offset(dy + e0);
    T *tdx = reinterpret_cast<T *>(sdx) + word_offset(dx + e0);
    for (int r = grp; r < tile_rows; r += NG) {
      const bool active = r < rows;
      const T *xr = tx + (int64_t)r * ncols;
      const T *gr = tdy + (int64_t)r * ncols;
      const ACC shift = active ? to_acc(xr[0]) : ACC(0);
      ACC s1[1] = {ACC(0)};
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int c = lane + LANES * k;
        if (active && c < ncols)
          s1[0] += to_acc(xr[c]) - shift;
      }
      row_allreduce<LANES>(s1, static_cast<ACC *>(nullptr));
      __syncwarp();
      const ACC mean = s1[0] * inv_n;
      ACC s3[3] = {ACC(0), ACC(0), ACC(0)};
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int c = lane + LANES * k;
        if (active && c < ncols) {
          const ACC d = to_acc(xr[c]) - shift - mean, g = to_acc(gr[c]) * sw[c];
          s3[0] += d * d;
          s3[1] += g;
          s3[2] += g * d;
        }
      }
      row_allreduce<LANES>(s3, static_cast<ACC *>(nullptr));
      __syncwarp();
      const ACC rstd = ln_rstd(max(s3[0] * inv_n, ACC(0)), eps);
      const ACC mg = s3[1] * inv_n;
      const ACC mgx = s3[2] * rstd * inv_n;
      if (active) {
        if (lane == 0) {
          sst[3 * r] = shift;
          sst[3 * r + 1] = mean;
          sst[3 * r + 2] = rstd;
        }
        T *dr = tdx + (int64_t)r * ncols;
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int c = lane + LANES * k;
          if (c < ncols) {
            const ACC xhat = (to_acc(xr[c]) - shift - mean) * rstd;
            dr[c] = from_acc<T>(rstd * (to_acc(gr[c]) * sw[c] - mg - xhat * mgx));
          }
        }
      }
    }
    __syncthreads();
    copy_tile_out<T, THREADS>(dx, sdx, e0, e0 + (int64_t)rows * ncols);
#pragma unroll
    for (int j = 0; j < CJ; ++j) {
      const int64_t c = threadIdx.x + (int64_t)THREADS * j;
      if (c < ncols) {
#pragma unroll 4
        for (int r = 0; r < rows; ++r) {
          const ACC g = to_acc(tdy[(int64_t)r * ncols + c]);
          const ACC xhat = (to_acc(tx[(int64_t)r * ncols + c]) - sst[3 * r] - sst[3 * r + 1]) * sst[3 * r + 2];
          dwa[j] += g * xhat;
          dba[j] += g;
        }
      }
    }
    __syncthreads();
  }
  cp_async_wait<0>();
#pragma unroll
  for (int j = 0; j < CJ; ++j) {
    const int64_t c = threadIdx.x + (int64_t)THREADS * j;
    if (c < ncols) {
      if (dw_part)
        dw_part[(int64_t)blockIdx.x * ncols + c] = dwa[j];
      if (db_part)
        db_part[(int64_t)blockIdx.x * ncols + c] = dba[j];
    }
  }
}

// A column-phase method: groups of L lanes, K columns a lane, tiles of about `tile_bytes` of x.
template <typename T, int L, int K>
static void add_tile_cols(std::vector<Method<T>> &out, const Prob<T> &P, int64_t tile_bytes) {
  constexpr int THREADS = layer_norm::TILE_THREADS;
  constexpr int CJ = (L * K + THREADS - 1) / THREADS;
  if ((int64_t)L * K < P.C || (int64_t)L * K / 2 >= P.C)
    return;
  const int tile_rows = tile_rows_for(L, P, tile_bytes);
  const size_t smem = (size_t)(5 * layer_norm::tile_words<T>((int64_t)tile_rows * P.C) * 16) +
                      (size_t)(P.C + 3 * tile_rows) * sizeof(Acc<T>);
  TileLaunch tl;
  if (!tile_launch(reinterpret_cast<void *>(k_tile_cols<T, L, K, CJ>), smem, tile_rows, P, tl))
    return;
  const int64_t parts = tl.parts;
  Method<T> m_;
  m_.name = "cols l" + std::to_string(L) + "k" + std::to_string(K) + tl.desc;
  m_.parts = parts;
  m_.repeat = true;
  m_.run = [=](Prob<T> &Q) {
    k_tile_cols<T, L, K, CJ><<<(unsigned)parts, THREADS, smem>>>(Q.dx_, Q.ddy, Q.dw_, Q.ddx, Q.dwp, Q.dbp, Q.R,
                                                                 Q.C, tile_rows, 1e-5f);
    CK(cudaGetLastError());
    Q.reduce(parts);
  };
  out.push_back(m_);
}
#endif

template <typename T> static std::vector<Method<T>> methods(const Prob<T> &P) {
  std::vector<Method<T>> out;
  // The registry's narrow backward tiers for the dtype, in list order.
  if (sizeof(T) == 2) {
    add_res<T, 8, 1>(out, P, "l8v1") || add_res<T, 16, 1>(out, P, "l16v1") || add_res<T, 32, 1>(out, P, "l32v1") ||
        add_res<T, 32, 2>(out, P, "l32v2") || add_res<T, 64, 2>(out, P, "l64v2");
  } else {
    add_res<T, 8, 1>(out, P, "l8v1") || add_res<T, 16, 1>(out, P, "l16v1") || add_res<T, 32, 1>(out, P, "l32v1") ||
        add_res<T, 32, 2>(out, P, "l32v2") || add_res<T, 128, 1>(out, P, "l128v1") ||
        add_res<T, 128, 2>(out, P, "l128v2");
  }
  for (int64_t tb : {8192, 16384, 32768}) {
    if (sizeof(T) == 2) {
      add_tile<T, 8, 1, false>(out, P, tb);
      add_tile<T, 16, 1, false>(out, P, tb);
      add_tile<T, 32, 1, false>(out, P, tb);
      add_tile<T, 32, 2, false>(out, P, tb);
      add_tile<T, 16, 1, true>(out, P, tb);
      add_tile<T, 32, 1, true>(out, P, tb);
      add_tile<T, 32, 2, true>(out, P, tb);
      add_tile<T, 32, 4, true>(out, P, tb);
    } else {
      add_tile<T, 16, 1, false>(out, P, tb);
      add_tile<T, 16, 2, false>(out, P, tb);
      add_tile<T, 32, 2, false>(out, P, tb);
      add_tile<T, 32, 4, false>(out, P, tb);
      add_tile<T, 32, 2, true>(out, P, tb);
      add_tile<T, 32, 4, true>(out, P, tb);
      add_tile<T, 32, 8, true>(out, P, tb);
    }
#ifdef TILE_COLS
    constexpr int V = 16 / sizeof(T);
    add_tile_cols<T, 16, V>(out, P, tb);
    add_tile_cols<T, 32, V>(out, P, tb);
    add_tile_cols<T, 32, 2 * V>(out, P, tb);
    add_tile_cols<T, 32, 4 * V>(out, P, tb);
#endif
  }
  return out;
}

int main(int argc, char **argv) {
  const ExpArgs args(argc, argv, {64, 96, 97, 128, 192, 201, 256, 333, 384, 512, 768, 1000, 1001, 1024},
                     {64, 96, 97, 201, 333, 384, 1000, 1001});
  exp_device_init();
  if (args.do_test) {
    // Few rows (one partial tile), many rows (several tiles a block, a partial last tile),
    // tensors that start one element into a word.
    for (int64_t c : args.test_cols) {
      for (auto [r, off] : {std::pair<int64_t, int>{37, 0}, {4099, 0}, {4099, 1}}) {
        if (args.has("f32"))
          test<float>(r, c, off, methods<float>);
        if (args.has("bf16"))
          test<__nv_bfloat16>(r, c, off, methods<__nv_bfloat16>);
        if (args.has("f16"))
          test<__half>(r, c, off, methods<__half>);
      }
    }
    printf("tests: %d passed, %d failed\n", g_pass, g_fail);
  }
  for (int64_t c : args.do_bench ? args.cols : std::vector<int64_t>{}) {
    if (args.has("f32"))
      bench<float>(c, methods<float>);
    if (args.has("bf16"))
      bench<__nv_bfloat16>(c, methods<__nv_bfloat16>);
    if (args.has("f16"))
      bench<__half>(c, methods<__half>);
  }
  return g_fail ? 1 : 0;
}
