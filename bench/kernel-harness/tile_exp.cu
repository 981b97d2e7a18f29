// Experiment (bench only): the layer norm's tile backward of narrow rows (layer_norm_bwd.cuh,
// bwd_tile) in tiers, tile sizes and register layouts other than the registry's, against the
// resident tier the host takes at each width (without the tile tiers),
// each with the parameter reduce, same process. Checks every method's dx / dw / db against a
// double reference first (exit code 1 on a failure).
//   nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I<candle-kernels/src> tile_exp.cu
//   (the column layout of 2026-12-06, -DTILE_COLS k_tile_cols, lost at every width on an H100
//   and was removed: commit 238317d has it)
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
  return bench_all(args, [](auto t) { return methods<decltype(t)>; });
}
