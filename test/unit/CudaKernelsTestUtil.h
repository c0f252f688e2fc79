// The fixture of the CUDA kernel tests (CudaKernelsTest.cpp,
// CudaDeterminismTest.cpp): device buffers freed after each test, random
// inputs, and the comparison against the CPU kernels' results. The tests
// skip, with the CUDA runtime's reason, without a device; under the
// simulator the device is always there.
#pragma once

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cuda/DeviceQuery.h"
#include "runtime/cuda/LtGemm.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace ferry;

namespace {

class CudaKernels : public ::testing::Test {
protected:
  void SetUp() override {
    CudaDeviceReport report = queryCudaDevices();
#ifdef FERRY_CUDA_SIM // the simulator is a device: nothing skips there
    ASSERT_FALSE(report.devices.empty()) << report.reason;
#else
    if (report.devices.empty())
      GTEST_SKIP() << "no CUDA device: " << report.reason;
#endif
    ASSERT_EQ(cublasCreate(&cublas.handle), CUBLAS_STATUS_SUCCESS);
    // Its own workspace, as the backend gives it (cuda::Cublas).
    cublas.workspaceBytes = 4 << 20;
    ASSERT_EQ(cudaMalloc(&cublas.workspace, cublas.workspaceBytes),
              cudaSuccess);
    allocations.push_back(cublas.workspace);
  }
  void TearDown() override {
    for (void *p : allocations)
      cudaFree(p);
    if (cublas.handle)
      cublasDestroy(cublas.handle);
  }
  template <typename T> T *device(const std::vector<T> &host) {
    T *p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, host.size() * sizeof(T) + 4), cudaSuccess);
    cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
    allocations.push_back(p);
    return p;
  }
  template <typename T> std::vector<T> host(const T *p, size_t n) {
    std::vector<T> out(n);
    cudaDeviceSynchronize();
    cudaMemcpy(out.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return out;
  }
  std::vector<float> random(size_t n, float lo = -2.0f, float hi = 2.0f) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float &x : v)
      x = d(rng);
    return v;
  }
  std::vector<int32_t> randomInts(size_t n, int32_t limit) {
    std::uniform_int_distribution<int32_t> d(0, limit - 1);
    std::vector<int32_t> v(n);
    for (int32_t &x : v)
      x = d(rng);
    return v;
  }
  // Relative L2 over the whole tensor within `tol`, and every element
  // within max(1e-3, 100 tol) of its reference (relative to max(1, |ref|)):
  // a few wrong elements or columns cannot hide in a large tensor's norm.
  static void expectClose(const std::vector<float> &got,
                          const std::vector<float> &want, double tol,
                          const char *what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    double diff = 0, norm = 0, elementTol = std::max(1e-3, 100 * tol);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_FALSE(std::isnan(got[i])) << what << " NaN at " << i;
      double d = std::abs(double(got[i]) - want[i]);
      ASSERT_LE(d, elementTol * std::max(1.0, std::abs(double(want[i]))))
          << what << ": element " << i << " is " << got[i] << ", want "
          << want[i];
      diff += d * d;
      norm += double(want[i]) * want[i];
    }
    ASSERT_GT(norm, 0.0) << what << ": the reference is all zeros";
    EXPECT_LE(std::sqrt(diff / norm), tol) << what;
  }

  // Scratch the kernels take from the backend (cuda::kScratchDoubles).
  double *scratch() {
    double *p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, cuda::kScratchDoubles * sizeof(double)),
              cudaSuccess);
    allocations.push_back(p);
    return p;
  }
  // `n` doubles of device workspace (the losses' per-row sums).
  double *doubles(size_t n) {
    double *p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, n * sizeof(double)), cudaSuccess);
    allocations.push_back(p);
    return p;
  }
  // embedding_grad's workspace for `rows` ids (its kernel record).
  int32_t *sortWorkspace(int64_t rows) {
    return device(std::vector<int32_t>(
        static_cast<size_t>(rows + cuda::sortRowsWorkspace(rows))));
  }

  cuda::Cublas cublas;
  cudaStream_t stream = nullptr; // the default stream
  std::vector<void *> allocations;
  std::mt19937 rng{1234};
};

} // namespace
