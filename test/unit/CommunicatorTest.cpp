// Unit tests of the replica group and the mesh (runtime/comm): run alone,
// the one-process group; run under `mpirun -np N` (ctest comm.mpi3 and
// comm.mpi4), the MPI group of N ranks and its subgroups. Each rank contributes
// random values drawn from its own seed, so every rank can compute the expected
// sum, shard or gather itself; float sums are compared with a tolerance of 1e-6
// relative (MPI may sum in any order), copies bit for bit.
#include "runtime/comm/Communicator.h"
#include "runtime/comm/Mesh.h"

#include <gtest/gtest.h>

#include <algorithm>
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
    ASSERT_NEAR(got[i], want[offset + i],
                1e-6 * (1 + std::abs(want[offset + i])))
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
  group->reduceScatterSum(mine.data(), out.data(), shard,
                          "test reduce-scatter");
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

TEST(Communicator, AllReduceMaxTakesEveryRanksLargest) {
  const size_t n = 513;
  std::vector<float> mine = valuesOf(group->rank(), n), out(n, -1.0f);
  group->allReduceMax(mine.data(), out.data(), n, "test all-reduce max");
  for (size_t i = 0; i < n; ++i) {
    float want = valuesOf(0, n)[i];
    for (int r = 1; r < group->size(); ++r)
      want = std::max(want, valuesOf(r, n)[i]);
    ASSERT_EQ(out[i], want) << "element " << i; // a max is exact
  }
  group->allReduceMax(mine.data(), mine.data(), n, "test all-reduce max");
  EXPECT_EQ(mine, out);
}

TEST(Communicator, SplitGroupsCollectOverTheirOwnRanks) {
  // Even and odd ranks, each ordered from the highest rank down.
  int color = group->rank() % 2;
  std::unique_ptr<Communicator> half =
      group->split(color, -group->rank(), "parity");
  std::vector<int> members;
  for (int r = group->size() - 1; r >= 0; --r)
    if (r % 2 == color)
      members.push_back(r);
  ASSERT_EQ(half->size(), static_cast<int>(members.size()));
  EXPECT_EQ(members[static_cast<size_t>(half->rank())], group->rank());
  EXPECT_TRUE(half->onOneNode());
  EXPECT_EQ(half->timeoutSeconds(), group->timeoutSeconds());
  double mine = group->rank() + 1, sum = 0;
  half->allReduceSum(&mine, &sum, 1, "test subgroup sum");
  double want = 0;
  for (int r : members)
    want += r + 1;
  EXPECT_EQ(sum, want);
  std::vector<std::string> texts = ferry::comm::gatherText(
      *half, std::to_string(group->rank()), "test subgroup gather");
  for (size_t i = 0; i < members.size(); ++i)
    EXPECT_EQ(texts[i], std::to_string(members[i]));
  if (group->size() > 1) {
    EXPECT_NE(half->prefix().find("(parity "), std::string::npos)
        << half->prefix();
  }
}

TEST(Communicator, MeshOfTwoByHalfTheRanks) {
  if (group->size() % 2 != 0)
    GTEST_SKIP() << "needs an even number of ranks (comm.mpi4)";
  ferry::comm::Mesh mesh = ferry::comm::openMesh(*group, 2);
  EXPECT_EQ(mesh.tensorParallel, 2);
  EXPECT_EQ(mesh.dataParallel, group->size() / 2);
  EXPECT_EQ(mesh.tensorRank, group->rank() % 2);
  EXPECT_EQ(mesh.dataRank, group->rank() / 2);
  EXPECT_EQ(mesh.tensor->rank(), mesh.tensorRank);
  EXPECT_EQ(mesh.data->rank(), mesh.dataRank);
  // Sums over each group name exactly its ranks: the tensor group's are
  // consecutive, the data group's share the tensor rank.
  const size_t n = 97;
  std::vector<float> mine = valuesOf(group->rank(), n), sum(n);
  mesh.tensor->allReduceSum(mine.data(), sum.data(), n, "test tensor sum");
  for (size_t i = 0; i < n; ++i) {
    double want = valuesOf(2 * mesh.dataRank, n)[i] +
                  double(valuesOf(2 * mesh.dataRank + 1, n)[i]);
    ASSERT_NEAR(sum[i], want, 1e-6 * (1 + std::abs(want))) << i;
  }
  mesh.data->allReduceSum(mine.data(), sum.data(), n, "test data sum");
  for (size_t i = 0; i < n; ++i) {
    double want = 0;
    for (int d = 0; d < mesh.dataParallel; ++d)
      want += valuesOf(2 * d + mesh.tensorRank, n)[i];
    ASSERT_NEAR(sum[i], want, 1e-6 * (1 + std::abs(want))) << i;
  }
}

TEST(Communicator, MeshRefusesARankCountThatIsNotAMultiple) {
  int tensor = group->size() + 1;
  try {
    ferry::comm::openMesh(*group, tensor);
    FAIL() << "expected an error";
  } catch (const ferry::RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("execution.tensor_parallel is " +
                                         std::to_string(tensor) + " but " +
                                         std::to_string(group->size()) +
                                         " processes were started"),
              std::string::npos)
        << e.what();
  }
}

TEST(Communicator, MeshRefusesRanksThatDisagreeOnT) {
  if (group->size() < 2)
    GTEST_SKIP() << "needs several ranks";
  try {
    ferry::comm::openMesh(*group, group->rank() == 0 ? 1 : 2);
    FAIL() << "expected an error";
  } catch (const ferry::RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "the ranks disagree on execution.tensor_parallel (from 1 "
                  "to 2)"),
              std::string::npos)
        << e.what();
  }
}

namespace {
// One rank whose groups say they span machines: the placement check's
// message, which one machine cannot produce for real.
class SpreadOut : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int localRank() const override { return 0; }
  std::string kind() const override { return "test"; }
  void allReduceSum(const float *in, float *out, int64_t n,
                    const std::string &) override {
    std::copy_n(in, n, out);
  }
  void allReduceSum(const double *in, double *out, int64_t n,
                    const std::string &) override {
    std::copy_n(in, n, out);
  }
  void allReduceMax(const float *in, float *out, int64_t n,
                    const std::string &) override {
    std::copy_n(in, n, out);
  }
  void reduceScatterSum(const float *in, float *out, int64_t n,
                        const std::string &) override {
    std::copy_n(in, n, out);
  }
  void allGather(const void *in, void *out, int64_t bytes,
                 const std::string &) override {
    std::copy_n(static_cast<const char *>(in), bytes, static_cast<char *>(out));
  }
  void broadcast(void *, int64_t, int, const std::string &) override {}
  std::unique_ptr<Communicator> split(int, int, const std::string &) override {
    return std::make_unique<SpreadOut>();
  }
  bool onOneNode() const override { return false; }
  void notifyFailure(const std::string &) override {}
  void abortJob(int) override {}
};
} // namespace

TEST(Communicator, MeshRefusesATensorGroupAcrossMachines) {
  SpreadOut job;
  try {
    ferry::comm::openMesh(job, 1);
    FAIL() << "expected an error";
  } catch (const ferry::RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "execution.tensor_parallel is 1, and ranks 0..0 (tensor "
                  "group 0) run on more than one machine"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--map-by ppr:K:node"),
              std::string::npos)
        << e.what();
  }
}

TEST(Communicator, DetectLaunchReadsTheLaunchersEnvironment) {
  // Under mpirun too: the launcher's variables are set aside and restored
  // (the group is open already, so nothing else reads them meanwhile).
  const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE",    "PMI_SIZE",
                        "SLURM_NTASKS",         "SLURM_PROCID", "PMIX_RANK"};
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

// Last, because a notice is heard once per job: the job's last rank says it
// failed while the others wait in a subgroup's collective it has not joined
// yet; they hear of it there. Then it joins, so the collective they left
// completes and the job ends cleanly.
TEST(Communicator, ZLastAFailureNoticeReachesASubgroupWait) {
  if (group->size() < 2)
    GTEST_SKIP() << "needs several ranks";
  // Ordered from the last rank down, so the subgroup's ranks are not the
  // job's.
  std::unique_ptr<Communicator> all = group->split(0, -group->rank(), "all");
  // The abandoned collective's buffers outlive the test (the group's
  // destructor waits for the collective to complete).
  static double mine = 1, sum = 0;
  int last = group->size() - 1;
  if (group->rank() == last) {
    all->notifyFailure("a test failure");
    all->allReduceSum(&mine, &sum, 1, "test subgroup sum");
    return;
  }
  try {
    all->allReduceSum(&mine, &sum, 1, "test subgroup sum");
    FAIL() << "expected the failure notice";
  } catch (const ferry::comm::PeerFailedError &e) {
    EXPECT_NE(std::string(e.what()).find("stopping because rank " +
                                         std::to_string(last) +
                                         " failed: a test failure"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("(all "), std::string::npos)
        << e.what();
  }
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
