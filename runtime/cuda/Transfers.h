// The CUDA backend's host-link copies: the executable's load, store and
// wait instructions. Loads and stores have a stream each (the two
// directions of the link, one copy engine each, overlap); a copy starts
// after the compute stream's work up to it, and a `wait` makes the compute
// stream wait for its copy (and for every earlier copy in the other
// direction, as the CPU backend's single FIFO queue gives). Copies keep the
// executable's order wherever their bytes overlap.
//
// Under CUDA-graph capture the copy streams join the compute stream's
// capture (a fork) and rejoin it at the end; waits on events the capture
// did not record are dropped (the work they name finished before the
// program began: every run ends by synchronising), and the events recorded
// in it are retired afterwards, since CUDA refuses them outside the graph.
#pragma once

#include "runtime/cuda/KernelProfile.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace ferry::cuda {

class Transfers {
public:
  explicit Transfers(cudaStream_t compute);
  ~Transfers();
  Transfers(const Transfers &) = delete;
  Transfers &operator=(const Transfers &) = delete;

  // A load (host -> device) or a store of `bytes` bytes, completing event
  // `id` of the executable. `profile` (may be null) times it as `kernel`.
  void copy(bool load, char *host, char *device, int64_t bytes, int64_t id,
            KernelProfile *profile, uint16_t kernel);
  // The compute stream waits for event `id` (and the other direction's
  // copies issued before it).
  void wait(int64_t id);

  void beginCapture();
  void endCapture(); // before the compute stream's capture ends
  // After a failure during a capture, before the compute stream's capture
  // ends: the copy streams rejoin it (errors ignored), so that ending it
  // leaves no stream in the capture.
  void joinCapture();
  // After a capture that failed: forget its events.
  void abandonCapture();

  cudaStream_t loads() const { return loads_; }
  cudaStream_t stores() const { return stores_; }

private:
  struct InFlight {
    char *hostBegin, *hostEnd, *deviceBegin, *deviceEnd;
    bool store;
    cudaEvent_t done;
  };
  cudaEvent_t event(int64_t id);
  cudaEvent_t pooled();
  void record(int64_t id, cudaStream_t stream);
  void orderAfterOverlapping(char *h, char *d, int64_t bytes, bool store,
                             cudaStream_t stream);
  void retireCaptured();

  cudaStream_t compute_, loads_ = nullptr, stores_ = nullptr;
  std::map<int64_t, cudaEvent_t> events_;
  std::vector<InFlight> inFlight_;
  std::vector<cudaEvent_t> pool_;
  bool capturing_ = false;
  std::set<int64_t> captured_; // event ids recorded in this capture
};

} // namespace ferry::cuda
