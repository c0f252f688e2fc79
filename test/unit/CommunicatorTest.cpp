// Unit tests of the replica group (runtime/comm): run alone, the
// one-process group; run under `mpirun -np N` (ctest comm.mpi3), the MPI
// group of N ranks. Each rank contributes random values drawn from its own
// seed, so every rank can compute the expected sum, shard or gather itself;
// float sums are compared with a tolerance of 1e-6 relative (MPI may sum in
// any order), copies bit for bit.
#include "runtime/comm/Communicator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

using ferry::comm::Communicator;

namespace {

Communicator *group = nullptr;

std::vector<float> valuesOf(int rank, size_t n) {
  std::mt19937 gen(1000 + rank);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float &x : v)
    x = normal(gen);
  return v;
}

// Sum over the ranks of valuesOf(r, n)[i], in double.
std::vector<double> expectedSum(size_t n) {
  std::vector<double> sum(n, 0.0);
  for (int r = 0; r < group->size(); ++r) {
    std::vector<float> v = valuesOf(r, n);
    for (size_t i = 0; i < n; ++i)
      sum[i] += v[i];
  }
  return sum;
}

void expectNear(const std::vector<float> &got, const std::vector<double> &want,
                size_t offset = 0) {
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[offset + i], 1e-6 * (1 + std::abs(want[offset + i])))
        << "element " << i;
}

} // namespace

TEST(Communicator, RankAndSize) {
  EXPECT_GE(group->size(), 1);
  EXPECT_GE(group->rank(), 0);
  EXPECT_LT(group->rank(), group->size());
  EXPECT_GE(group->localRank(), 0);
  EXPECT_EQ(group->prefix().empty(), group->size() == 1);
}

TEST(Communicator, AllReduceSumsEveryRank) {
  const size_t n = 1001;
  std::vector<float> mine = valuesOf(group->rank(), n), out(n, -1.0f);
  group->allReduceSum(mine.data(), out.data(), n, "test all-reduce");
  expectNear(out, expectedSum(n));
  // In place.
  group->allReduceSum(mine.data(), mine.data(), n, "test all-reduce");
  expectNear(mine, expectedSum(n));
  double d = group->rank() + 0.5, sum = 0;
  group->allReduceSum(&d, &sum, 1, "test all-reduce");
  int n2 = group->size();
  EXPECT_EQ(sum, n2 * (n2 - 1) / 2.0 + 0.5 * n2);
}

TEST(Communicator, ReduceScatterGivesEachRankItsShard) {
  const size_t shard = 333, n = shard * static_cast<size_t>(group->size());
  std::vector<float> mine = valuesOf(group->rank(), n), out(shard, -1.0f);
  group->reduceScatterSum(mine.data(), out.data(), shard, "test reduce-scatter");
  expectNear(out, expectedSum(n), shard * static_cast<size_t>(group->rank()));
}

TEST(Communicator, AllGatherConcatenatesInRankOrder) {
  const size_t n = 77;
  std::vector<float> mine = valuesOf(group->rank(), n);
  std::vector<float> all(n * static_cast<size_t>(group->size()));
  group->allGather(mine.data(), all.data(), n * 4, "test all-gather");
  for (int r = 0; r < group->size(); ++r) {
    std::vector<float> want = valuesOf(r, n);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), all.begin() + r * n))
        << "rank " << r;
  }
}

TEST(Communicator, BroadcastAndGatherText) {
  int value = group->rank() == 0 ? 4242 : -1;
  group->broadcast(&value, sizeof value, 0, "test broadcast");
  EXPECT_EQ(value, 4242);
  std::vector<std::string> texts = ferry::comm::gatherText(
      *group, "rank " + std::to_string(group->rank()), "test gather");
  ASSERT_EQ(texts.size(), static_cast<size_t>(group->size()));
  for (int r = 0; r < group->size(); ++r)
    EXPECT_EQ(texts[r], "rank " + std::to_string(r));
}

TEST(Communicator, DetectLaunchReadsTheLaunchersEnvironment) {
  // Under mpirun too: the launcher's variables are set aside and restored
  // (the group is open already, so nothing else reads them meanwhile).
  const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE",
                        "SLURM_NTASKS", "SLURM_PROCID", "PMIX_RANK"};
  std::vector<std::pair<const char *, std::string>> saved;
  for (const char *v : vars) {
    if (const char *value = std::getenv(v))
      saved.push_back({v, value});
    unsetenv(v);
  }
  EXPECT_FALSE(ferry::comm::detectLaunch().underLauncher);
  // Inside a Slurm allocation but not a task of srun: not launched.
  setenv("SLURM_NTASKS", "4", 1);
  EXPECT_FALSE(ferry::comm::detectLaunch().underLauncher);
  setenv("SLURM_PROCID", "2", 1);
  ferry::comm::Launch slurm = ferry::comm::detectLaunch();
  EXPECT_TRUE(slurm.underLauncher);
  EXPECT_EQ(slurm.worldSize, 4);
  EXPECT_EQ(slurm.launcher, "srun (Slurm)");
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  ferry::comm::Launch ompi = ferry::comm::detectLaunch();
  EXPECT_EQ(ompi.worldSize, 3);
  EXPECT_EQ(ompi.launcher, "mpirun (Open MPI)");
  for (const char *v : vars)
    unsetenv(v);
  for (const auto &[name, value] : saved)
    setenv(name, value.c_str(), 1);
}

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<Communicator> owned = ferry::comm::openReplicaGroup();
  owned->setTimeoutSeconds(60);
  group = owned.get();
  // Only rank 0 prints; any rank's failure fails every rank's exit code.
  if (group->rank() != 0) {
    ::testing::TestEventListeners &listeners =
        ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  double failed = RUN_ALL_TESTS() != 0 ? 1 : 0, anyFailed = 0;
  group->allReduceSum(&failed, &anyFailed, 1, "the test results");
  owned.reset(); // MPI_Finalize before exit
  return anyFailed > 0 ? 1 : 0;
}
