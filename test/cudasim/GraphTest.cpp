// Tests of the CUDA simulator's stream capture and graphs (label cuda-sim):
// a captured fork and join replays the same work as direct launches, each
// launch reading the device memory of its own time; capture runs nothing;
// what CUDA rejects under capture (an unjoined fork, a synchronising call,
// a wait on uncaptured work, queries of captured events) is rejected, and
// so is what cuBLAS and cuBLASLt would do there (allocate, set themselves
// up).
#include "runtime/cuda/Launch.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using ferry::cuda::launch;

namespace {

__global__ void scaleAddKernel(const float *x, const float *factor, float *out,
                               int n, float add) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = x[i] * factor[0] + add;
}

struct Streams {
  cudaStream_t a = nullptr, b = nullptr;
  cudaEvent_t fork = nullptr, join = nullptr;
  Streams() {
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
  }
  ~Streams() {
    cudaDeviceSynchronize();
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
  }
};

// y = x * factor + 1 on stream a; stream b (forked) copies y to pinned
// memory; z = y * factor + 2 on a, after which a waits for b (the join).
void work(Streams &s, const float *x, const float *factor, float *y, float *z,
          float *pinned, int n, bool join) {
  launch("scale_add", scaleAddKernel, dim3(1), dim3(64), 0, s.a, x, factor, y,
         n, 1.0f);
  cudaEventRecord(s.fork, s.a);
  cudaStreamWaitEvent(s.b, s.fork, 0);
  cudaMemcpyAsync(pinned, y, n * 4, cudaMemcpyDeviceToHost, s.b);
  launch("scale_add", scaleAddKernel, dim3(1), dim3(64), 0, s.a, y, factor, z,
         n, 2.0f);
  if (join) {
    cudaEventRecord(s.join, s.b);
    cudaStreamWaitEvent(s.a, s.join, 0);
  }
}

// work()'s buffers: x, y, z of n floats and the factor on the device, the
// copy of y in pinned memory.
struct Buffers {
  float *x = nullptr, *factor = nullptr, *y = nullptr, *z = nullptr,
        *pinned = nullptr;
  explicit Buffers(int n) {
    cudaMalloc(&x, n * 4);
    cudaMalloc(&factor, 4);
    cudaMalloc(&y, n * 4);
    cudaMalloc(&z, n * 4);
    cudaHostAlloc(&pinned, n * 4, 0);
  }
  ~Buffers() {
    cudaDeviceSynchronize();
    cudaFreeHost(pinned);
    for (float *p : {x, factor, y, z})
      cudaFree(p);
  }
};

TEST(CudaSimulatorGraph, ReplayEqualsDirectLaunchesAndReadsCurrentMemory) {
  const int n = 50;
  Buffers buffers(n);
  float *x = buffers.x, *factor = buffers.factor, *y = buffers.y,
        *z = buffers.z, *pinned = buffers.pinned;
  std::vector<float> hx(n);
  for (int i = 0; i < n; ++i)
    hx[i] = 0.25f * static_cast<float>(i) - 3.0f;
  cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice);
  Streams s;

  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s.a, cudaStreamCaptureModeGlobal),
            cudaSuccess);
  cudaStreamCaptureStatus status;
  ASSERT_EQ(cudaStreamIsCapturing(s.a, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  work(s, x, factor, y, z, pinned, n, true);
  ASSERT_EQ(cudaStreamEndCapture(s.a, &graph), cudaSuccess);
  ASSERT_EQ(cudaStreamIsCapturing(s.b, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone); // the fork left with it
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 3u); // two kernels and the copy; events are edges
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  cudaDeviceSynchronize();
  // Capture ran nothing: y is still the fresh allocation's NaN bytes.
  std::vector<float> hy(n);
  cudaMemcpy(hy.data(), y, n * 4, cudaMemcpyDeviceToHost);
  EXPECT_TRUE(std::isnan(hy[0]));

  for (float f : {2.0f, -0.5f, 3.0f}) {
    // Each replay reads the factor the device holds when it runs.
    cudaMemcpy(factor, &f, 4, cudaMemcpyHostToDevice);
    cudaDeviceSynchronize(); // a pageable copy returns before it lands
    ASSERT_EQ(cudaGraphLaunch(exec, s.a), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s.a), cudaSuccess);
    std::vector<float> graphZ(n), graphPinned(pinned, pinned + n);
    cudaMemcpy(graphZ.data(), z, n * 4, cudaMemcpyDeviceToHost);
    work(s, x, factor, y, z, pinned, n, true);
    cudaDeviceSynchronize();
    std::vector<float> directZ(n);
    cudaMemcpy(directZ.data(), z, n * 4, cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) {
      float expectY = hx[i] * f + 1.0f;
      ASSERT_EQ(graphPinned[i], expectY) << "factor " << f << ", element " << i;
      ASSERT_EQ(pinned[i], expectY);
      ASSERT_EQ(graphZ[i], expectY * f + 2.0f);
      ASSERT_EQ(graphZ[i], directZ[i]);
    }
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  // The fork event was last recorded in the capture: CUDA refuses to query
  // it until it is recorded again outside one.
  cudaEvent_t captured;
  cudaEventCreateWithFlags(&captured, cudaEventDisableTiming);
  cudaStreamBeginCapture(s.a, cudaStreamCaptureModeGlobal);
  launch("scale_add", scaleAddKernel, dim3(1), dim3(64), 0, s.a, x, factor, y,
         n, 1.0f);
  cudaEventRecord(captured, s.a);
  ASSERT_EQ(cudaStreamEndCapture(s.a, &graph), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(captured), cudaErrorCapturedEvent);
  EXPECT_EQ(cudaGetLastError(), cudaErrorCapturedEvent);
  cudaEventRecord(captured, s.a);
  EXPECT_EQ(cudaEventSynchronize(captured), cudaSuccess);
  cudaGraphDestroy(graph);
  cudaEventDestroy(captured);
}

TEST(CudaSimulatorGraph, AnUnjoinedForkEndsTheCaptureWithAnError) {
  const int n = 8;
  Buffers buffers(n);
  float *x = buffers.x, *factor = buffers.factor, *y = buffers.y,
        *z = buffers.z, *pinned = buffers.pinned;
  Streams s;
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s.a, cudaStreamCaptureModeGlobal),
            cudaSuccess);
  work(s, x, factor, y, z, pinned, n, false);
  EXPECT_EQ(cudaStreamEndCapture(s.a, &graph), cudaErrorStreamCaptureUnjoined);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureUnjoined);
  cudaStreamCaptureStatus status;
  cudaStreamIsCapturing(s.b, &status);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
}

TEST(CudaSimulatorGraphDeathTest, SynchronisingDuringCaptureIsRefused) {
  EXPECT_DEATH(
      {
        cudaStream_t a;
        cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
        cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal);
        cudaDeviceSynchronize();
      },
      "cudaDeviceSynchronize while a stream is capturing");
  EXPECT_DEATH(
      {
        cudaStream_t a;
        cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
        cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal);
        void *p;
        cudaMallocAsync(&p, 64, a);
      },
      "cudaMallocAsync while a stream is capturing");
}

TEST(CudaSimulatorGraphDeathTest, WaitingOnUncapturedWorkIsRefused) {
  EXPECT_DEATH(
      {
        cudaStream_t a;
        cudaStream_t b;
        cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
        cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
        cudaEvent_t e;
        cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
        cudaEventRecord(e, b); // outside any capture
        cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal);
        cudaStreamWaitEvent(a, e, 0);
      },
      "cudaErrorStreamCaptureIsolation");
}

} // namespace

// The libraries under capture. cublasSetStream returns a cuBLAS handle to
// the default workspace pool (NVIDIA's cuBLAS documentation), which
// allocates: a GEMM captured after it, without cublasSetWorkspace again,
// is refused. And a library handle's first call sets the library up, which
// NVIDIA does not promise is capturable: a handle's first GEMM (cuBLAS) or
// matmul (cuBLASLt) under capture is refused too.
namespace {
struct GemmBuffers {
  float *a = nullptr, *b = nullptr, *c = nullptr;
  void *workspace = nullptr;
  GemmBuffers() {
    cudaMalloc(&a, 64 * sizeof(float));
    cudaMalloc(&b, 64 * sizeof(float));
    cudaMalloc(&c, 64 * sizeof(float));
    cudaMalloc(&workspace, 1 << 16);
  }
  cublasStatus_t gemm(cublasHandle_t h) {
    float one = 1, zero = 0;
    return cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8,
                                      &one, a, CUDA_R_32F, 8, 64, b, CUDA_R_32F,
                                      8, 64, &zero, c, CUDA_R_32F, 8, 64, 1,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  }
};
} // namespace

TEST(CudaSimulatorGraph, ACublasGemmWithItsOwnWorkspaceIsCaptured) {
  GemmBuffers m;
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetStream(h, s), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetWorkspace(h, m.workspace, 1 << 16), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(m.gemm(h), CUBLAS_STATUS_SUCCESS); // once, directly
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal),
            cudaSuccess);
  ASSERT_EQ(m.gemm(h), CUBLAS_STATUS_SUCCESS);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphDestroy(graph);
  cublasDestroy(h);
  cudaStreamDestroy(s);
}

TEST(CudaSimulatorGraphDeathTest,
     CublasSetStreamDropsTheWorkspaceUnderCapture) {
  EXPECT_DEATH(
      {
        GemmBuffers m;
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        cublasHandle_t h;
        cublasCreate(&h);
        cublasSetWorkspace(h, m.workspace, 1 << 16);
        m.gemm(h); // once, directly
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        cublasSetStream(h, s); // the workspace is the default pool again
        m.gemm(h);
      },
      "default workspace pool, which allocates: cublasSetStream resets");
}

TEST(CudaSimulatorGraphDeathTest, ALibraryHandlesFirstCallIsNotCaptured) {
  EXPECT_DEATH(
      {
        GemmBuffers m;
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        cublasHandle_t h;
        cublasCreate(&h);
        cublasSetStream(h, s);
        cublasSetWorkspace(h, m.workspace, 1 << 16);
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        m.gemm(h);
      },
      "a cuBLAS handle's first GEMM is under stream capture");
  EXPECT_DEATH(
      {
        GemmBuffers m;
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        cublasLtHandle_t h;
        cublasLtCreate(&h);
        cublasLtMatmulDesc_t desc;
        cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
        cublasLtMatrixLayout_t l;
        cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, 8, 8, 8);
        cublasLtMatmulPreference_t pref;
        cublasLtMatmulPreferenceCreate(&pref);
        cublasLtMatmulHeuristicResult_t r{};
        int n = 0;
        cublasLtMatmulAlgoGetHeuristic(h, desc, l, l, l, l, pref, 1, &r, &n);
        float one = 1;
        float zero = 0;
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        cublasLtMatmul(h, desc, &one, m.a, l, m.b, l, &zero, m.c, l, m.c, l,
                       &r.algo, m.workspace, 1 << 16, s);
      },
      "a cuBLASLt handle's first cublasLtMatmul is under stream capture");
}
