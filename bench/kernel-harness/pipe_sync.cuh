// Shared by the bulk-copy pipeline experiments (pipe_exp.cu, pipe_fwd_exp.cu): the mbarrier and
// `cp.async.bulk` primitives (sm_90), the ring's dynamic shared memory, setup and launch plan.
#pragma once
#include "harness_common.cuh"

#include <algorithm>
#include <cstdint>
#include <string>

namespace pipe {

__device__ __forceinline__ uint32_t saddr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(saddr(bar)), "r"(count) : "memory");
}
// Arrives on the barrier (its one arrival) and adds `bytes` to the bytes its phase waits for.
__device__ __forceinline__ void mbar_expect(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(saddr(bar)), "r"(bytes) : "memory");
}
// Waits until the barrier's phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity) {
  uint32_t done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(saddr(bar)), "r"(parity)
                 : "memory");
}
// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to shared memory,
// completing on `bar`.
__device__ __forceinline__ void bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   saddr(dst)),
               "l"(src), "r"(bytes), "r"(saddr(bar))
               : "memory");
}
// Orders the block's earlier shared-memory accesses (generic proxy) before later bulk copies.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

extern __shared__ float4 pipe_smem[];

// The ring's `stages` full-barriers, one arrival each (thread 0), then a block barrier.
__device__ __forceinline__ void ring_init(uint64_t *full, int stages) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s)
      mbar_init(&full[s], 1);
    fence_async_shared();
  }
  __syncthreads();
}

// The rows of a persistent grid's block (rows blockIdx.x, blockIdx.x + gridDim.x, ...).
__device__ __forceinline__ int64_t rows_of_block(int64_t nrows) {
  return nrows > blockIdx.x ? (nrows - 1 - blockIdx.x) / gridDim.x + 1 : 0;
}

// How a ring kernel `f` of `threads` threads runs: `stages` stages of `stage_bytes` (0: as many
// as `budget` bytes hold, 2 to 16), its dynamic shared memory (the stages and their barriers),
// blocks an SM, and " S<stages> x<blocks> <registers>r" for a method's name. False where it does
// not fit in `max_smem` or on an SM.
struct RingLaunch {
  int stages = 0, occ = 0;
  size_t smem = 0;
  std::string desc;
};
static bool ring_launch(void *f, int threads, size_t stage_bytes, int stages, size_t budget, size_t max_smem,
                        RingLaunch &rl) {
  rl.stages = stages ? stages : (int)std::min<size_t>(16, std::max<size_t>(2, budget / stage_bytes));
  rl.smem = rl.stages * stage_bytes + rl.stages * 8;
  if (rl.smem > max_smem)
    return false;
  CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)rl.smem));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&rl.occ, f, threads, rl.smem));
  if (rl.occ == 0)
    return false;
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, f));
  rl.desc = " S" + std::to_string(rl.stages) + " x" + std::to_string(rl.occ) + " " + std::to_string(fa.numRegs) + "r" +
            (fa.localSizeBytes ? " LOCAL" : "");
  return true;
}

} // namespace pipe
