// The one-process group, launch detection and the choice of implementation
// (Communicator.h).
#include "runtime/comm/Communicator.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

namespace ferry::comm {

#ifdef FERRY_HAVE_MPI
std::unique_ptr<Communicator> openMpi(); // MpiCommunicator.cpp
#endif

namespace {

class SingleProcess : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int localRank() const override { return 0; }
  std::string kind() const override { return "single process"; }
  void allReduceSum(const float *in, float *out, int64_t count,
                    const std::string &) override {
    if (in != out)
      std::memcpy(out, in, static_cast<size_t>(count) * sizeof(float));
  }
  void allReduceSum(const double *in, double *out, int64_t count,
                    const std::string &) override {
    if (in != out)
      std::memcpy(out, in, static_cast<size_t>(count) * sizeof(double));
  }
  void allReduceMax(const float *in, float *out, int64_t count,
                    const std::string &) override {
    if (in != out)
      std::memcpy(out, in, static_cast<size_t>(count) * sizeof(float));
  }
  void reduceScatterSum(const float *in, float *out, int64_t count,
                        const std::string &) override {
    if (in != out)
      std::memmove(out, in, static_cast<size_t>(count) * sizeof(float));
  }
  void allGather(const void *in, void *out, int64_t bytes,
                 const std::string &) override {
    if (in != out)
      std::memmove(out, in, static_cast<size_t>(bytes));
  }
  void broadcast(void *, int64_t, int, const std::string &) override {}
  std::unique_ptr<Communicator> split(int, int, const std::string &) override {
    auto group = std::make_unique<SingleProcess>();
    group->setTimeoutSeconds(timeoutSeconds());
    return group;
  }
  bool onOneNode() const override { return true; }
  void notifyFailure(const std::string &) override {}
  void abortJob(int) override {}
};

const char *env(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? v : nullptr;
}

} // namespace

std::string Communicator::prefix() const {
  return size() > 1 ? fmt::format("rank {}/{}: ", rank(), size()) : "";
}

std::unique_ptr<Communicator> singleProcess() {
  return std::make_unique<SingleProcess>();
}

Launch detectLaunch() {
  Launch l;
  // Open MPI's mpirun, then PMIx (Open MPI 5, srun --mpi=pmix), MPICH's
  // Hydra / PMI-1 and Slurm's own task count.
  struct Probe {
    const char *sizeVar, *name;
  };
  for (Probe p : {Probe{"OMPI_COMM_WORLD_SIZE", "mpirun (Open MPI)"},
                  Probe{"PMIX_SIZE", "a PMIx launcher"},
                  Probe{"PMI_SIZE", "a PMI launcher (MPICH, srun --mpi=pmi2)"},
                  Probe{"SLURM_NTASKS", "srun (Slurm)"}}) {
    if (const char *v = env(p.sizeVar)) {
      if (p.sizeVar == std::string("SLURM_NTASKS") && !env("SLURM_PROCID"))
        continue; // inside an allocation (sbatch) but not started by srun
      l.underLauncher = true;
      l.launcher = p.name;
      l.worldSize = std::max(1, std::atoi(v));
      return l;
    }
  }
  // Open MPI 4 under PMIx sets PMIX_RANK without a size.
  if (env("PMIX_RANK")) {
    l.underLauncher = true;
    l.launcher = "a PMIx launcher";
  }
  return l;
}

std::unique_ptr<Communicator> openReplicaGroup() {
  Launch l = detectLaunch();
  if (!l.underLauncher)
    return singleProcess();
#ifdef FERRY_HAVE_MPI
  return openMpi();
#else
  if (l.worldSize > 1)
    throw RuntimeError(fmt::format(
        "started by {} as one of {} processes, but this ferry was built "
        "without MPI (-DFERRY_ENABLE_MPI=OFF); rebuild it with MPI "
        "(scripts/install-deps.sh installs Open MPI) to train replicas",
        l.launcher, l.worldSize));
  return singleProcess();
#endif
}

std::vector<std::string> gatherText(Communicator &comm,
                                    const std::string &value,
                                    const std::string &what) {
  // Fixed-size slots: every rank sends the same byte count.
  constexpr size_t kSlot = 256;
  std::string mine = value.substr(0, kSlot - 1);
  mine.resize(kSlot, '\0');
  std::string all(kSlot * static_cast<size_t>(comm.size()), '\0');
  comm.allGather(mine.data(), all.data(), kSlot, what);
  std::vector<std::string> out;
  for (int r = 0; r < comm.size(); ++r)
    out.emplace_back(all.c_str() + kSlot * static_cast<size_t>(r));
  return out;
}

} // namespace ferry::comm
