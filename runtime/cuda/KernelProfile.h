// `ferry train --profile` on the CUDA backend: each kernel and each
// host-link copy of a program is bracketed by CUDA timing events on its own
// stream; after the program the events give time per kernel class, each
// stream's busy time, and how much of the copy streams' time overlapped
// the compute stream (phased execution hides transfers behind compute).
// Also the host-side launches per program run. The events add a little
// time of their own; the figures are for finding where time goes.
// A program replayed as a CUDA graph is timed as a whole (one pair of
// events around the launch): per-kernel times need direct launches.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ferry::cuda {

enum class ProfileStream { Compute = 0, Loads = 1, Stores = 2 };

class KernelProfile {
public:
  KernelProfile() = default;
  KernelProfile(const KernelProfile &) = delete;
  KernelProfile &operator=(const KernelProfile &) = delete;
  ~KernelProfile();

  // A program starts: the reference event goes on the compute stream.
  // `graph`: it runs as one CUDA-graph launch.
  void programStart(const std::string &name, cudaStream_t compute,
                    bool graph = false);
  // After the graph's launch: its end, and its node count.
  void graphLaunched(cudaStream_t compute, size_t nodes);
  // Brackets one kernel instruction or copy on `stream`.
  void before(uint16_t kernel, ProfileStream which, cudaStream_t stream);
  void after(cudaStream_t stream);
  // After every stream of the program has synchronised.
  void programEnd();

  std::string report() const;

private:
  cudaEvent_t pooled();

  struct Pending {
    uint16_t kernel;
    ProfileStream stream;
    cudaEvent_t start, end;
  };
  // A program's runs launched directly, and those replayed as a graph (a
  // program's first run is always direct).
  struct Runs {
    int64_t runs = 0;
    uint64_t launches = 0, copies = 0;
    double seconds = 0;
  };
  struct ProgramRuns {
    Runs direct, graph;
    size_t graphNodes = 0;
  };
  std::vector<Pending> pending_;
  std::vector<cudaEvent_t> pool_, all_;
  cudaEvent_t reference_ = nullptr, graphEnd_ = nullptr;
  bool graph_ = false;
  size_t graphNodes_ = 0;
  std::string program_;
  uint64_t launchesAtStart_ = 0, copies_ = 0;
  std::vector<double> kernelSeconds_;
  std::vector<int64_t> kernelCalls_;
  double streamBusy_[3] = {0, 0, 0};
  double copySeconds_ = 0, overlapSeconds_ = 0;
  std::map<std::string, ProgramRuns> programs_;
};

} // namespace ferry::cuda
