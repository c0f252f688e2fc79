// Tests of the CUDA simulator itself (label cuda-sim): what it must catch
// (barriers not every thread reaches, warp-shuffle misuse, launch limits,
// out-of-bounds device reads inside a fiber, uninitialised memory, missing
// stream waits, pageable asynchronous copies, cuBLASLt constraints, WMMA's
// alignment and convergence rules, code that assumes a WMMA fragment layout)
// and what it must reproduce exactly (bf16/fp16 rounding, the last-error
// rules, WMMA products).
#include "NvidiaHalf.h"
#include "runtime/cuda/Launch.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using ferry::cuda::launch;

namespace {

template <typename T> T *deviceArray(size_t n) {
  void *p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
  return static_cast<T *>(p);
}
template <typename T> std::vector<T> toHost(const T *p, size_t n) {
  std::vector<T> out(n);
  EXPECT_EQ(cudaMemcpy(out.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return out;
}

// Each thread writes its index to shared memory; after the barrier each
// reads its neighbour's.
__global__ void neighbourKernel(int *out) {
  __shared__ int values[64];
  values[threadIdx.x] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = values[(threadIdx.x + 1) % blockDim.x];
}

// The same without the barrier: a race.
__global__ void racyNeighbourKernel(int *out) {
  __shared__ int values[64];
  values[threadIdx.x] = static_cast<int>(threadIdx.x) + 1000 * blockIdx.x;
  out[blockIdx.x * blockDim.x + threadIdx.x] =
      values[(threadIdx.x + 1) % blockDim.x];
}

__global__ void earlyExitBarrierKernel(int *out) {
  if (threadIdx.x < 16)
    return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void twoBarriersKernel(int *out) {
  if (threadIdx.x % 2)
    __syncthreads();
  else
    __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void warpSumKernel(float *out) {
  float v = static_cast<float>(threadIdx.x);
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  out[threadIdx.x] = v;
}

__global__ void readPastEndKernel(const float *x, float *out, int n) {
  out[threadIdx.x] = x[n + threadIdx.x]; // x has n elements
}

// The upper half-warp exits; the lower half exchanges with `laneMask`.
__global__ void halfWarpExitsKernel(int *out, int laneMask) {
  if (threadIdx.x >= 16)
    return;
  out[threadIdx.x] =
      __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), laneMask);
}

// Width 8: lanes exchange inside their group of 8; an xor reaching a later
// group returns the lane's own value (CUDA's __shfl_xor_sync).
__global__ void segmentedXorKernel(int *out, int laneMask) {
  out[threadIdx.x] =
      __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), laneMask, 8);
}

__global__ void fillKernel(float *out, int n, float value) {
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    out[i] = value;
}


// One warp: c = a b + c through WMMA, a row-major and b read transposed
// (col_major: element (k, n) at b[n * 16 + k]); `offset` misaligns a.
__global__ void wmmaKernel(const __nv_bfloat16 *a, const __nv_bfloat16 *b,
                           float *c, int offset, int skippingLane) {
  using namespace nvcuda;
  __shared__ __align__(32) __nv_bfloat16 sa[256 + 16], sb[256];
  __shared__ __align__(32) float sc[256];
  for (int i = threadIdx.x; i < 256; i += 32) {
    sa[i + offset] = a[i];
    sb[i] = b[i];
    sc[i] = c[i];
  }
  __syncwarp();
  if (static_cast<int>(threadIdx.x) == skippingLane)
    return;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major>
      fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major>
      fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::load_matrix_sync(fa, sa + offset, 16);
  wmma::load_matrix_sync(fb, sb, 16);
  wmma::load_matrix_sync(fc, sc, 16, wmma::mem_row_major);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(sc, fc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int i = threadIdx.x; i < 256; i += 32)
    c[i] = sc[i];
}

// A layout assumption: lane l's x[e] taken as element (l / 2, (l % 2) * 8 +
// e) of the accumulator, as if the lanes held consecutive row halves.
__global__ void assumesLayoutKernel(const float *c, float *out) {
  using namespace nvcuda;
  __shared__ __align__(32) float sc[256];
  for (int i = threadIdx.x; i < 256; i += 32)
    sc[i] = c[i];
  __syncwarp();
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::load_matrix_sync(fc, sc, 16, wmma::mem_row_major);
  for (int e = 0; e < fc.num_elements; ++e)
    out[(threadIdx.x / 2) * 16 + (threadIdx.x % 2) * 8 + e] = fc.x[e];
}

void runWmma(const std::vector<float> &a, const std::vector<float> &b,
             std::vector<float> &c, int offset, int skippingLane) {
  std::vector<__nv_bfloat16> ha(256), hb(256);
  for (int i = 0; i < 256; ++i) {
    ha[i] = __float2bfloat16_rn(a[i]);
    hb[i] = __float2bfloat16_rn(b[i]);
  }
  __nv_bfloat16 *da = deviceArray<__nv_bfloat16>(256),
                *db = deviceArray<__nv_bfloat16>(256);
  float *dc = deviceArray<float>(256);
  cudaMemcpy(da, ha.data(), 512, cudaMemcpyHostToDevice);
  cudaMemcpy(db, hb.data(), 512, cudaMemcpyHostToDevice);
  cudaMemcpy(dc, c.data(), 1024, cudaMemcpyHostToDevice);
  launch("wmma", wmmaKernel, dim3(1), dim3(32), 0, nullptr,
         static_cast<const __nv_bfloat16 *>(da),
         static_cast<const __nv_bfloat16 *>(db), dc, offset, skippingLane);
  c = toHost(dc, 256);
}
} // namespace

TEST(CudaSimulator, BarrierMakesSharedWritesVisible) {
  int *out = deviceArray<int>(64);
  launch("neighbour", neighbourKernel, dim3(1), dim3(64), 0, nullptr, out);
  std::vector<int> got = toHost(out, 64);
  for (int i = 0; i < 64; ++i)
    ASSERT_EQ(got[i], (i + 1) % 64);
  cudaFree(out);
}

TEST(CudaSimulator, MissingBarrierShowsUnderSomeThreadOrder) {
  // Without the barrier a thread may read its neighbour's slot before the
  // neighbour wrote it: over several blocks (each a fresh thread order) the
  // simulator must produce at least one stale read.
  int blocks = 8;
  int *out = deviceArray<int>(64 * blocks);
  launch("racy", racyNeighbourKernel, dim3(blocks), dim3(64), 0, nullptr, out);
  std::vector<int> got = toHost(out, 64 * blocks);
  int stale = 0;
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < 64; ++t)
      stale += got[b * 64 + t] != (t + 1) % 64 + 1000 * b;
  EXPECT_GT(stale, 0);
  cudaFree(out);
}

TEST(CudaSimulatorDeathTest, BarrierNotReachedByEveryThread) {
  EXPECT_DEATH(
      {
        int *out = deviceArray<int>(32);
        launch("early exit", earlyExitBarrierKernel, dim3(1), dim3(32), 0,
               nullptr, out);
        cudaDeviceSynchronize();
      },
      "__syncthreads at .*SimulatorTest.cpp.* is not reached by every thread");
}

TEST(CudaSimulatorDeathTest, ThreadsAtDifferentBarriers) {
  EXPECT_DEATH(
      {
        int *out = deviceArray<int>(32);
        launch("two barriers", twoBarriersKernel, dim3(1), dim3(32), 0, nullptr,
               out);
        cudaDeviceSynchronize();
      },
      "wait at different __syncthreads");
}

TEST(CudaSimulator, WarpShuffleExchangesAmongLanes) {
  float *out = deviceArray<float>(64);
  launch("warp sum", warpSumKernel, dim3(1), dim3(64), 0, nullptr, out);
  std::vector<float> got = toHost(out, 64);
  for (int t = 0; t < 64; ++t) // each warp sums its own lanes' indices
    ASSERT_EQ(got[t], t < 32 ? 496.0f : 1520.0f) << t;
  cudaFree(out);
}

TEST(CudaSimulatorDeathTest, PartialWarpWithFullMask) {
  EXPECT_DEATH(
      {
        float *out = deviceArray<float>(48);
        launch("partial warp", warpSumKernel, dim3(1), dim3(48), 0, nullptr,
               out);
        cudaDeviceSynchronize();
      },
      "names lane 16 of a warp of 16 threads");
}

TEST(CudaSimulator, ExitedLanesNeedNotJoinAShuffle) {
  int *out = deviceArray<int>(32);
  launch("half warp", halfWarpExitsKernel, dim3(1), dim3(32), 0, nullptr, out,
         1);
  std::vector<int> got = toHost(out, 16);
  for (int t = 0; t < 16; ++t)
    EXPECT_EQ(got[t], t ^ 1);
  cudaFree(out);
}

TEST(CudaSimulatorDeathTest, ReadingAnExitedLane) {
  EXPECT_DEATH(
      {
        int *out = deviceArray<int>(32);
        launch("half warp", halfWarpExitsKernel, dim3(1), dim3(32), 0, nullptr,
               out, 16);
        cudaDeviceSynchronize();
      },
      "reads lane 16, which is not in its mask or has exited");
}

TEST(CudaSimulator, SegmentedXorKeepsLaterSegmentsOut) {
  int *out = deviceArray<int>(32);
  for (int laneMask : {3, 8}) {
    launch("segmented xor", segmentedXorKernel, dim3(1), dim3(32), 0, nullptr,
           out, laneMask);
    std::vector<int> got = toHost(out, 32);
    for (int t = 0; t < 32; ++t) {
      int j = t ^ laneMask; // a later group of 8: the lane's own value
      EXPECT_EQ(got[t], j < t / 8 * 8 + 8 ? j : t) << laneMask << " " << t;
    }
  }
  cudaFree(out);
}

TEST(CudaSimulatorDeathTest, HostPointerPassedToAKernel) {
  EXPECT_DEATH(
      {
        std::vector<float> host(32);
        launch("fill", fillKernel, dim3(1), dim3(32), 0, nullptr, host.data(),
               32, 1.0f);
      },
      "pointer argument 0 is not in device memory");
}

TEST(CudaSimulatorDeathTest, StreamOrderedMemoryUsedOutOfOrder) {
  // Memory from cudaMallocAsync on stream a, filled by a kernel on stream b
  // with no event between them: ASan reports the poisoned bytes whenever b
  // runs first, so run until some seed does.
  EXPECT_DEATH(
      {
        cudaStream_t a;
        cudaStream_t b;
        cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
        cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
        for (int i = 0; i < 64; ++i) {
          cudaStreamSynchronize(a); // a's queue holds only the allocation
          float *p = nullptr;
          cudaMallocAsync(&p, 128, a);
          launch("fill", fillKernel, dim3(1), dim3(32), 0, b, p, 32, 1.0f);
          cudaDeviceSynchronize();
          cudaFree(p);
        }
      },
      "use-after-poison");
}

TEST(CudaSimulatorDeathTest, NonBlockingWorkBehindPendingLegacyWork) {
  // A synchronous copy from pageable memory may return before it reaches
  // the device; a non-blocking stream does not wait for it.
  EXPECT_DEATH(
      {
        float *x = deviceArray<float>(32);
        std::vector<float> host(32, 1.0f);
        cudaMemcpy(x, host.data(), 128, cudaMemcpyHostToDevice);
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        launch("fill", fillKernel, dim3(1), dim3(32), 0, s, x, 32, 2.0f);
      },
      "on a non-blocking stream after work on the legacy default stream that "
      "the host has not waited for");
}

TEST(CudaSimulator, LaunchLimitsAreErrorsAndTheLastErrorIsKept) {
  float *out = deviceArray<float>(4);
  cudaLaunchConfig_t config = {};
  config.blockDim = dim3(32);
  config.gridDim = dim3(1, 65536); // y above 65535
  EXPECT_EQ(cudaLaunchKernelEx(&config, fillKernel, out, 4, 1.0f),
            cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess); // returned once, then cleared
  config.gridDim = dim3(1);
  config.blockDim = dim3(1025);
  EXPECT_EQ(cudaLaunchKernelEx(&config, fillKernel, out, 4, 1.0f),
            cudaErrorInvalidConfiguration);
  config.blockDim = dim3(1, 1, 65);
  EXPECT_EQ(cudaLaunchKernelEx(&config, fillKernel, out, 4, 1.0f),
            cudaErrorInvalidConfiguration);
  config.blockDim = dim3(32);
  config.dynamicSmemBytes = (48 << 10) + 1;
  EXPECT_EQ(cudaLaunchKernelEx(&config, fillKernel, out, 4, 1.0f),
            cudaErrorInvalidValue);
  (void)cudaGetLastError();
  // ferry's launch point throws naming the kernel, and leaves no error.
  EXPECT_THROW(launch("too wide", fillKernel, dim3(1), dim3(2048), 0, nullptr,
                      out, 4, 1.0f),
               std::runtime_error);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_THROW(
      launch("empty", fillKernel, dim3(0), dim3(32), 0, nullptr, out, 4, 1.0f),
      std::logic_error);
  cudaFree(out);
}

TEST(CudaSimulator, EventQueryNotReadyIsTheLastErrorUntilCleared) {
  float *out = deviceArray<float>(1 << 16);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t e;
  ASSERT_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
  // Queue enough work that the event cannot have completed yet (the
  // simulated device takes one step at a quarter of the runtime calls).
  for (int i = 0; i < 64; ++i)
    launch("fill", fillKernel, dim3(1), dim3(32), 0, s, out, 1 << 16, 2.0f);
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  cudaError_t q = cudaEventQuery(e);
  ASSERT_EQ(q, cudaErrorNotReady);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorNotReady);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaEventSynchronize(e), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
  cudaEventDestroy(e);
  cudaStreamDestroy(s);
  cudaFree(out);
}

TEST(CudaSimulatorDeathTest, OutOfBoundsDeviceReadInAFiberIsReported) {
  EXPECT_DEATH(
      {
        float *x = deviceArray<float>(16);
        float *out = deviceArray<float>(32);
        launch("read past end", readPastEndKernel, dim3(1), dim3(32), 0,
               nullptr, static_cast<const float *>(x), out, 16);
        cudaDeviceSynchronize();
      },
      "AddressSanitizer: heap-buffer-overflow");
}

TEST(CudaSimulator, FreshDeviceMemoryReadsAsNaN) {
  float *x = deviceArray<float>(8);
  std::vector<float> got = toHost(x, 8);
  for (float v : got)
    EXPECT_TRUE(std::isnan(v));
  int32_t *i = deviceArray<int32_t>(4);
  for (int32_t v : toHost(i, 4))
    EXPECT_EQ(v, -1);
  cudaFree(x);
  cudaFree(i);
}

TEST(CudaSimulator, MissingStreamWaitShowsUnderSomeSeed) {
  // Stream a fills a buffer; stream b copies it out. Without a wait, some
  // interleavings copy before the fill; with the event wait, none does.
  const int n = 64, trials = 24;
  float *x = deviceArray<float>(n);
  float *pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void **>(&pinned), n * 4, 0),
            cudaSuccess);
  cudaStream_t a, b;
  cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
  cudaEvent_t filled;
  cudaEventCreateWithFlags(&filled, cudaEventDisableTiming);
  int stale = 0;
  for (int t = 0; t < trials; ++t) {
    for (bool wait : {false, true}) {
      float value = static_cast<float>(2 * t + wait + 1);
      launch("fill", fillKernel, dim3(1), dim3(32), 0, a, x, n, value);
      cudaEventRecord(filled, a);
      if (wait)
        cudaStreamWaitEvent(b, filled, 0);
      cudaMemcpyAsync(pinned, x, n * 4, cudaMemcpyDeviceToHost, b);
      cudaDeviceSynchronize();
      if (wait)
        ASSERT_EQ(pinned[0], value) << "trial " << t;
      else
        stale += pinned[0] != value;
    }
  }
  EXPECT_GT(stale, 0);
  cudaEventDestroy(filled);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  cudaFreeHost(pinned);
  cudaFree(x);
}

TEST(CudaSimulatorDeathTest, AsyncCopyFromPageableMemory) {
  EXPECT_DEATH(
      {
        float *x = deviceArray<float>(8);
        std::vector<float> pageable(8, 1.0f);
        cudaMemcpyAsync(x, pageable.data(), 32, cudaMemcpyHostToDevice,
                        nullptr);
      },
      "pageable host memory");
}

// WMMA's product: bf16 inputs (values exact in bf16), fp32 accumulation.
TEST(CudaSimulator, WmmaComputesTheProduct) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> small(-8, 8);
  std::vector<float> a(256), b(256), c(256), want(256);
  for (int i = 0; i < 256; ++i)
    a[i] = small(rng) / 4.0f, b[i] = small(rng) / 4.0f, c[i] = small(rng);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) {
      float s = c[r * 16 + n];
      for (int k = 0; k < 16; ++k)
        s += a[r * 16 + k] * b[n * 16 + k]; // b is read transposed
      want[r * 16 + n] = s;
    }
  runWmma(a, b, c, 0, -1);
  EXPECT_EQ(c, want);
}

// A fragment's elements are scattered over the lanes: code that reads x[i]
// as a particular row and column gets other numbers.
TEST(CudaSimulator, WmmaFragmentLayoutIsNotAssumable) {
  std::vector<float> c(256);
  for (int i = 0; i < 256; ++i)
    c[i] = static_cast<float>(i);
  float *dc = deviceArray<float>(256), *out = deviceArray<float>(256);
  cudaMemcpy(dc, c.data(), 1024, cudaMemcpyHostToDevice);
  launch("assumes a layout", assumesLayoutKernel, dim3(1), dim3(32), 0,
         nullptr, static_cast<const float *>(dc), out);
  std::vector<float> got = toHost(out, 256);
  int same = 0;
  for (int i = 0; i < 256; ++i)
    same += got[i] == c[i];
  EXPECT_LT(same, 32) << "the accumulator layout looks like row halves";
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, c) << "every element is still held by exactly one lane";
}

TEST(CudaSimulatorDeathTest, WmmaMisalignedPointer) {
  std::vector<float> a(256, 1.0f), b(256, 1.0f), c(256, 0.0f);
  EXPECT_DEATH(runWmma(a, b, c, 1, -1), "not 256-bit aligned");
}

TEST(CudaSimulatorDeathTest, WmmaNotReachedByTheWholeWarp) {
  std::vector<float> a(256, 1.0f), b(256, 1.0f), c(256, 0.0f);
  EXPECT_DEATH(runWmma(a, b, c, 0, 5), "needs every lane of the warp");
}

TEST(CudaSimulator, HalfConversionsAreNvidiasBitForBit) {
  // Every sign, exponent and rounding boundary: a stride through all 2^32
  // patterns (with an odd step, so every low-bit pattern occurs) plus the
  // neighbourhood of each exponent's boundaries.
  auto check = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    __nv_bfloat16 b = __float2bfloat16_rn(f);
    __half h = __float2half_rn(f);
    ASSERT_EQ(b.__x, nvidia::float2bfloat16(f)) << std::hex << bits;
    ASSERT_EQ(h.__x, nvidia::float2half(f)) << std::hex << bits;
  };
  for (uint64_t bits = 0; bits < (1ull << 32); bits += 4099)
    check(static_cast<uint32_t>(bits));
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t exponent = 0; exponent < 256; ++exponent)
      for (uint32_t low = 0; low < 0x4000; ++low) {
        uint32_t base = sign | exponent << 23;
        check(base | low);
        check(base | (0x7fffffu - low));
        check(base | ((0x1000u + low - 0x2000u) & 0x7fffffu)); // fp16 ties
      }
  // And back: every 16-bit pattern widens exactly.
  for (uint32_t x = 0; x < 0x10000; ++x) {
    __half h{static_cast<uint16_t>(x)};
    float f = __half2float(h);
    if (!std::isnan(f)) {
      ASSERT_EQ(__float2half_rn(f).__x, x) << std::hex << x;
    }
    __nv_bfloat16 b{static_cast<uint16_t>(x)};
    float g = __bfloat162float(b);
    if (!std::isnan(g)) {
      ASSERT_EQ(__float2bfloat16_rn(g).__x, x) << std::hex << x;
    }
  }
}

namespace {
struct Lt {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  Lt(cudaDataType_t in, int64_t ldA) {
    cublasLtCreate(&handle);
    cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasLtMatrixLayoutCreate(&a, in, 16, 8, ldA);
    cublasLtMatrixLayoutCreate(&b, in, 8, 4, 8);
    cublasLtMatrixLayoutCreate(&c, CUDA_R_32F, 16, 4, 16);
    cublasLtMatmulPreferenceCreate(&pref);
  }
  ~Lt() {
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(c);
    cublasLtMatmulDescDestroy(desc);
    cublasLtDestroy(handle);
  }
  cublasStatus_t heuristic(cublasLtMatmulHeuristicResult_t &r) {
    int n = 0;
    return cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, c, pref, 1, &r,
                                          &n);
  }
};
} // namespace

TEST(CudaSimulator, CublasLtRefusesWhatNvidiaDocumentsAsUnsupported) {
  cublasLtMatmulHeuristicResult_t r{};
  {
    Lt lt(CUDA_R_32F, 8); // ld 8 < 16 rows
    EXPECT_EQ(lt.heuristic(r), CUBLAS_STATUS_INVALID_VALUE);
  }
  {
    // bf16 inputs, fp32 D: a bf16 bias is not in the datatype table.
    Lt lt(CUDA_R_16BF, 16);
    cublasLtEpilogue_t bias = CUBLASLT_EPILOGUE_BIAS;
    cublasLtMatmulDescSetAttribute(lt.desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                   &bias, sizeof bias);
    cudaDataType_t bf16 = CUDA_R_16BF;
    cublasLtMatmulDescSetAttribute(lt.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                   &bf16, sizeof bf16);
    EXPECT_EQ(lt.heuristic(r), CUBLAS_STATUS_NOT_SUPPORTED);
    cudaDataType_t fp32 = CUDA_R_32F; // the documented one
    cublasLtMatmulDescSetAttribute(lt.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                   &fp32, sizeof fp32);
    EXPECT_EQ(lt.heuristic(r), CUBLAS_STATUS_SUCCESS);
    // An attribute of the wrong size is refused.
    int16_t small = 0;
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(
                  lt.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &small, sizeof small),
              CUBLAS_STATUS_INVALID_VALUE);
  }
  {
    // An algorithm chosen for 256-byte aligned pointers (the default
    // promise) fails on a less aligned one; a workspace that is not
    // 256-byte aligned or too small fails too.
    Lt lt(CUDA_R_32F, 16);
    uint64_t workspaceBytes = 4096;
    cublasLtMatmulPreferenceSetAttribute(
        lt.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes,
        sizeof workspaceBytes);
    ASSERT_EQ(lt.heuristic(r), CUBLAS_STATUS_SUCCESS);
    char *memory = deviceArray<char>(1 << 16);
    char *base = memory + (256 - reinterpret_cast<uintptr_t>(memory) % 256);
    float *A = reinterpret_cast<float *>(base);
    float *B = reinterpret_cast<float *>(base + 1024);
    float *C = reinterpret_cast<float *>(base + 2048);
    char *work = base + 8192;
    float one = 1.0f, zero = 0.0f;
    EXPECT_EQ(cublasLtMatmul(lt.handle, lt.desc, &one, A, lt.a, B, lt.b, &zero,
                             C, lt.c, C, lt.c, &r.algo, work, 4096, nullptr),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatmul(lt.handle, lt.desc, &one, A + 16, lt.a, B, lt.b,
                             &zero, C, lt.c, C, lt.c, &r.algo, work, 4096,
                             nullptr),
              CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_EQ(cublasLtMatmul(lt.handle, lt.desc, &one, A, lt.a, B, lt.b, &zero,
                             C, lt.c, C, lt.c, &r.algo, work + 64, 4096,
                             nullptr),
              CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_EQ(cublasLtMatmul(lt.handle, lt.desc, &one, A, lt.a, B, lt.b, &zero,
                             C, lt.c, C, lt.c, &r.algo, work, 1024, nullptr),
              CUBLAS_STATUS_INVALID_VALUE);
    cudaDeviceSynchronize();
    cudaFree(memory);
  }
}
