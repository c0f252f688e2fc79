// GPU test (ctest label `gpu`) of the CUDA backend's NCCL group with one
// rank, as the single-GPU machines ferry is tried on allow (no mpirun
// there), and its simulated twin (label `cuda-sim`, never skipped): the
// ncclUniqueId round trip through the host group, and all-reduce,
// reduce-scatter and all-gather on device buffers of random values, each
// equal to the one-rank result (a copy) bit for bit, with the stream
// synchronised through the group's timeout watch. Several ranks are tested
// by whole training runs under mpirun (CudaTraining.DataParallel*).
#include "runtime/comm/Communicator.h"
#include "runtime/cuda/DeviceQuery.h"
#include "runtime/cuda/NcclGroup.h"
#include "runtime/cuda/NcclLibrary.h"
#include "runtime/Error.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace {

std::vector<float> randomValues(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float &x : v)
    x = normal(gen);
  return v;
}

} // namespace

TEST(NcclGroup, OneRankCollectivesOnDeviceBuffers) {
  ferry::CudaDeviceReport report = ferry::queryCudaDevices();
#ifdef FERRY_CUDA_SIM
  ASSERT_FALSE(report.devices.empty()) << report.reason;
#else
  if (report.devices.empty())
    GTEST_SKIP() << "no CUDA device: " << report.reason;
#endif
  auto host = ferry::comm::singleProcess();
  host->setTimeoutSeconds(60);
  ferry::cuda::NcclGroup group(*host);
  const size_t n = 1000;
  std::vector<float> values = randomValues(n, 7);
  float *in = nullptr, *out = nullptr;
  ASSERT_EQ(cudaMalloc(&in, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, n * 4), cudaSuccess);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(in, values.data(), n * 4, cudaMemcpyHostToDevice),
            cudaSuccess);
  std::vector<float> got(n);
  auto fetch = [&](float *from) {
    group.synchronize(stream, "the test's collectives");
    ASSERT_EQ(cudaMemcpy(got.data(), from, n * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
  };
  ASSERT_EQ(cudaMemset(out, 0, n * 4), cudaSuccess);
  group.allReduce(in, out, n, stream, "all-reduce");
  fetch(out);
  EXPECT_EQ(got, values);
  group.allReduce(in, in, n, stream, "all-reduce in place");
  fetch(in);
  EXPECT_EQ(got, values);
  ASSERT_EQ(cudaMemset(out, 0, n * 4), cudaSuccess);
  group.reduceScatter(in, out, n, stream, "reduce-scatter");
  fetch(out);
  EXPECT_EQ(got, values);
  ASSERT_EQ(cudaMemset(out, 0, n * 4), cudaSuccess);
  group.allGather(in, out, n, stream, "all-gather");
  fetch(out);
  EXPECT_EQ(got, values);
  cudaStreamDestroy(stream);
  cudaFree(in);
  cudaFree(out);
}

// NCCL is opened on first use (NcclLibrary.h), so the CUDA backend loads
// without it; a library that is missing, or is not NCCL, is named with the
// fix. No device needed.
TEST(NcclLibrary, AMissingLibraryIsNamedWithTheFix) {
  try {
    ferry::cuda::openNcclLibrary("/nonexistent/libnccl.so.2");
    FAIL() << "opened a library that does not exist";
  } catch (const ferry::RuntimeError &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("needs NCCL, and /nonexistent/libnccl.so.2 could not be "
                     "loaded"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("set FERRY_NCCL_LIBRARY"), std::string::npos) << m;
  }
}

TEST(NcclLibrary, ALibraryThatIsNotNcclIsNamed) {
  try {
    ferry::cuda::openNcclLibrary("libm.so.6");
    FAIL() << "took libm for NCCL";
  } catch (const ferry::RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("libm.so.6 has no ncclGetVersion"),
              std::string::npos)
        << e.what();
  }
}

TEST(NcclLibrary, VersionStrings) {
  EXPECT_EQ(ferry::cuda::ncclVersionString(22809), "2.28.9");
  EXPECT_EQ(ferry::cuda::ncclVersionString(20900), "2.9.0");
  EXPECT_EQ(ferry::cuda::ncclVersionString(2708), "2.7.8");
}
