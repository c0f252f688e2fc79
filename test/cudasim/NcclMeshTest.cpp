// The simulated NCCL over the mesh's groups, run as 4 ranks under mpirun
// (ctest cuda-sim.NcclMeshOfFourRanks): the job splits into tensor groups
// of 2 consecutive ranks and data groups of the ranks with the same tensor
// rank (comm::openMesh), each gets its own NCCL communicator (made in the
// same order on every rank), and sums and maxima of random device buffers
// over each group equal the values every rank computes itself (sums to
// 1e-6 relative, maxima exactly).
#include "runtime/comm/Communicator.h"
#include "runtime/comm/Mesh.h"
#include "runtime/cuda/NcclGroup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

namespace {

ferry::comm::Communicator *job = nullptr;

std::vector<float> valuesOf(int rank, size_t n) {
  std::mt19937 gen(500 + rank);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float &x : v)
    x = normal(gen);
  return v;
}

} // namespace

TEST(NcclMesh, EachGroupReducesOverItsOwnRanks) {
  ASSERT_EQ(job->size(), 4) << "run under mpirun -np 4";
  ferry::comm::Mesh mesh = ferry::comm::openMesh(*job, 2);
  ferry::cuda::selectDevice(*job);
  ferry::cuda::NcclGroup tensor(*mesh.tensor), data(*mesh.data);
  const size_t n = 777;
  std::vector<float> mine = valuesOf(job->rank(), n);
  float *in = nullptr, *out = nullptr;
  ASSERT_EQ(cudaMalloc(&in, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, n * 4), cudaSuccess);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(in, mine.data(), n * 4, cudaMemcpyHostToDevice),
            cudaSuccess);
  std::vector<float> got(n);
  auto fetch = [&](ferry::cuda::NcclGroup &group) {
    group.synchronize(stream, "the test's collectives");
    ASSERT_EQ(cudaMemcpy(got.data(), out, n * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
  };
  // Ranks of this rank's groups: tensor {2d, 2d + 1}, data {t, t + 2}.
  int d = mesh.dataRank, t = mesh.tensorRank;
  std::vector<float> a = valuesOf(2 * d, n), b = valuesOf(2 * d + 1, n);
  std::vector<float> c = valuesOf(t, n), e = valuesOf(t + 2, n);

  tensor.allReduce(in, out, n, stream, "tensor all-reduce");
  fetch(tensor);
  for (size_t i = 0; i < n; ++i) {
    double want = double(a[i]) + b[i];
    ASSERT_NEAR(got[i], want, 1e-6 * (1 + std::abs(want))) << i;
  }
  data.allReduce(in, out, n, stream, "data all-reduce");
  fetch(data);
  for (size_t i = 0; i < n; ++i) {
    double want = double(c[i]) + e[i];
    ASSERT_NEAR(got[i], want, 1e-6 * (1 + std::abs(want))) << i;
  }
  tensor.allReduceMax(in, out, n, stream, "tensor all-reduce max");
  fetch(tensor);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], std::max(a[i], b[i])) << i;
  cudaStreamDestroy(stream);
  cudaFree(in);
  cudaFree(out);
}

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<ferry::comm::Communicator> owned =
      ferry::comm::openReplicaGroup();
  owned->setTimeoutSeconds(60);
  job = owned.get();
  if (job->rank() != 0) {
    ::testing::TestEventListeners &listeners =
        ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  double failed = RUN_ALL_TESTS() != 0 ? 1 : 0, anyFailed = 0;
  job->allReduceSum(&failed, &anyFailed, 1, "the test results");
  owned.reset(); // MPI_Finalize before exit
  return anyFailed > 0 ? 1 : 0;
}
