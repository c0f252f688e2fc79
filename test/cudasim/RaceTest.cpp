// Tests of the simulator's race checker (Race.h; label cuda-sim), on small
// planted kernels, compiled, like the kernels, with the checker's
// instrumentation: a shared tile read without its __syncthreads and a
// cross-block write to one word of device memory are errors naming the
// kernel, the memory and the two threads; the same tile behind its barrier,
// a warp-synchronous shared-memory reduction ordered by __syncwarp and a
// shuffle reduction stay clean; and with the checks off, the scheduler's
// warp running ahead makes the missing barrier show as a wrong answer under
// some seed.
#include "runtime/cuda/Launch.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

using ferry::cuda::launch;

namespace {

constexpr int kThreads = 64; // two warps

// Each thread writes its word of a shared tile (base + t), then reads the
// word of a lane in the other warp: without the barrier that read races
// the write. The warp-level syncs around the write let the scheduler run
// one warp ahead through it.
template <bool Barrier> __global__ void tileKernel(int *out, int base) {
  __shared__ int tile[kThreads];
  int t = threadIdx.x;
  int partner = __shfl_xor_sync(0xffffffffu, t, 1);
  tile[t] = base + t;
  partner = __shfl_xor_sync(0xffffffffu, partner, 1) ^ 1;
  if (Barrier)
    __syncthreads();
  out[t] = tile[(partner + 32) % kThreads];
}

__global__ void crossBlockKernel(int *out) {
  if (threadIdx.x == 0)
    out[0] = static_cast<int>(blockIdx.x);
}

// Warp-synchronous: each step's reads follow the other lanes' writes
// through __syncwarp, as the CUDA Programming Guide requires since Volta.
__global__ void warpReduceKernel(const float *in, float *out) {
  __shared__ float sums[32];
  int lane = threadIdx.x;
  sums[lane] = in[lane];
  __syncwarp();
  for (int half = 16; half > 0; half /= 2) {
    float other = lane < half ? sums[lane + half] : 0.0f;
    __syncwarp();
    if (lane < half)
      sums[lane] += other;
    __syncwarp();
  }
  float v = in[lane];
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_down_sync(0xffffffffu, v, offset);
  if (lane == 0) {
    out[0] = sums[0];
    out[1] = v;
  }
}

template <typename T> T *deviceBuffer(size_t n) {
  T *p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
  cudaMemset(p, 0, n * sizeof(T));
  return p;
}

template <typename T> std::vector<T> hostCopy(const T *p, size_t n) {
  std::vector<T> v(n);
  cudaDeviceSynchronize();
  cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
  return v;
}

bool tileIsRight(const std::vector<int> &got, int base) {
  for (int t = 0; t < kThreads; ++t)
    if (got[t] != base + ((t ^ 1) + 32) % kThreads)
      return false;
  return true;
}

} // namespace

TEST(CudaSimulatorRace, TheCheckerIsOnForInstrumentedKernels) {
  int *out = deviceBuffer<int>(kThreads);
  launch("tile", tileKernel<true>, dim3(1), dim3(kThreads), 0, nullptr, out, 1);
  cudaDeviceSynchronize();
  EXPECT_TRUE(cudaSimRaceChecksEnabled())
      << "the kernels of this binary are not instrumented";
  cudaFree(out);
}

TEST(CudaSimulatorRace, ATileBehindItsBarrierIsClean) {
  int *out = deviceBuffer<int>(kThreads);
  for (int run = 0; run < 8; ++run) {
    launch("tile", tileKernel<true>, dim3(1), dim3(kThreads), 0, nullptr, out,
           1000 * run);
    EXPECT_TRUE(tileIsRight(hostCopy(out, kThreads), 1000 * run)) << run;
  }
  cudaFree(out);
}

TEST(CudaSimulatorRace, AWarpSynchronousReductionIsClean) {
  std::vector<float> in(32);
  for (int i = 0; i < 32; ++i)
    in[i] = 0.25f * static_cast<float>(i * i % 7) - 0.5f;
  float *x = deviceBuffer<float>(32), *out = deviceBuffer<float>(2);
  cudaMemcpy(x, in.data(), sizeof(float) * 32, cudaMemcpyHostToDevice);
  launch("warp_reduce", warpReduceKernel, dim3(1), dim3(32), 0, nullptr, x,
         out);
  std::vector<float> got = hostCopy(out, 2);
  float want = 0;
  for (float v : in)
    want += v;
  EXPECT_NEAR(got[0], want, 1e-5);
  EXPECT_NEAR(got[1], want, 1e-5);
  cudaFree(x);
  cudaFree(out);
}

TEST(CudaSimulatorRaceDeathTest, ASharedTileReadWithoutItsBarrier) {
  EXPECT_DEATH(
      {
        int *out = deviceBuffer<int>(kThreads);
        launch("tile_without_barrier", tileKernel<false>, dim3(1),
               dim3(kThreads), 0, nullptr, out, 1);
        cudaDeviceSynchronize();
      },
      "race \\((read after write|write after read)\\) in kernel "
      "tile_without_barrier on shared memory at byte [0-9]+ above.*block "
      "\\(0,0,0\\) thread "
      "\\([0-9]+,0,0\\).*and block \\(0,0,0\\) thread \\([0-9]+,0,0\\).*"
      "without a __syncthreads");
}

TEST(CudaSimulatorRaceDeathTest, ACrossBlockWriteToDeviceMemory) {
  EXPECT_DEATH(
      {
        int *out = deviceBuffer<int>(1);
        launch("cross_block", crossBlockKernel, dim3(2), dim3(32), 0, nullptr,
               out);
        cudaDeviceSynchronize();
      },
      "race \\(write after write\\) in kernel cross_block on device memory "
      "at byte 0 of the allocation.*nothing orders across blocks");
}

// The checks off, the same missing barrier gives a wrong answer under some
// seeds: the warp that runs ahead reads the other warp's words before they
// are written.
TEST(CudaSimulatorRace, AWarpRunningAheadShowsTheMissingBarrier) {
  cudaSimSetRaceChecks(false);
  int *out = deviceBuffer<int>(kThreads);
  int wrong = 0;
  for (int run = 0; run < 16; ++run) {
    cudaMemset(out, 0, kThreads * sizeof(int));
    launch("tile_without_barrier", tileKernel<false>, dim3(1), dim3(kThreads),
           0, nullptr, out, 1000 * run);
    wrong += !tileIsRight(hostCopy(out, kThreads), 1000 * run);
  }
  cudaSimSetRaceChecks(true);
  EXPECT_GT(wrong, 0) << "16 launches never ran a warp ahead of the other";
  cudaFree(out);
}
