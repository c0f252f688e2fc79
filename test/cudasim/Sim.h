// ferry's CUDA simulator, internal: the pieces the runtime, the grid runner
// and the BLAS reference share. Test-only.
#pragma once

#include "cuda_runtime.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cudasim {

// A piece of queued work: it may run once every flag in `after` is true.
struct Work {
  std::string what;
  std::function<void()> run;
  std::vector<std::shared_ptr<bool>> after;
  std::shared_ptr<bool> done = std::make_shared<bool>(false);
};

// Stream capture (Graph.cpp): work queued on a capturing stream becomes a
// node of the graph instead of running; `deps` are the nodes it waits for
// (indices of earlier nodes), `lane` the captured stream it came from.
struct GraphNode {
  std::string what;
  std::function<void()> run;
  std::vector<size_t> deps;
  size_t lane = 0;
};
struct Capture {
  bool active = true;
  CUstream_st *origin = nullptr;
  std::vector<CUstream_st *> lanes; // origin first, then the forked streams
  std::vector<GraphNode> nodes;
};

// Reports misuse the real device or library would reject or leave
// undefined, naming what was wrong, and stops the process (a kernel cannot
// throw, and a test must not pass over it).
[[noreturn]] void fail(const std::string &message);

// The simulator's seeded choices: block order, thread order, which ready
// stream runs next. FERRY_CUDA_SIM_SEED sets the seed (default 1).
// SplitMix64: the simulator draws a number per thread per round, where
// mt19937_64 showed in profiles.
struct Random {
  using result_type = uint64_t;
  uint64_t state;
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return ~uint64_t(0); }
  uint64_t operator()() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};
Random &rng();

// Runs a grid on this OS thread, block after block in a seeded order.
void runGrid(const dim3 &grid, const dim3 &block,
             const std::function<void()> &body, const std::string &kernel);

// Device memory: the allocation holding [p, p + bytes), or null.
struct Allocation {
  char *base;
  size_t bytes;
  enum Kind { Device, Pinned } kind;
};
const Allocation *findAllocation(const void *p, size_t bytes);
// Fails unless [p, p + bytes) lies in device memory.
void requireDevice(const void *p, size_t bytes, const char *what);

// Queues work on a stream (null: the legacy default stream), in order,
// after the stream's earlier work; it runs when the device reaches it.
// `alsoAfter` (may be null): a completion flag it must also wait for.
void enqueue(cudaStream_t stream, const char *what, std::function<void()> run,
             std::shared_ptr<bool> alsoAfter = nullptr);
void enqueue(cudaStream_t stream, const char *what, std::function<void()> run,
             std::vector<std::shared_ptr<bool>> alsoAfter);

// The thread's last error: records `e` unless it is cudaSuccess.
cudaError_t result(cudaError_t e);
// The stream a handle names (null: the legacy default stream), whether a
// handle is a live stream / event, and every stream in creation order
// (the simulator's own included).
CUstream_st *streamOf(cudaStream_t s);
bool knownStream(cudaStream_t s);
bool knownEvent(cudaEvent_t e);
std::vector<CUstream_st *> &allStreams();

// Stream capture, for Runtime.cpp: queue work as a node of the stream's
// capture; fail if a capture is under way (`what` is a call CUDA forbids
// during one); the event-record and event-wait rules under capture (true:
// handled, the caller does nothing more).
void captureWork(CUstream_st *s, const char *what, std::function<void()> run);
void refuseDuringCapture(const char *what);
void captureRecord(cudaEvent_t e, CUstream_st *s);
bool captureWait(CUstream_st *s, cudaEvent_t e, cudaError_t &status);

} // namespace cudasim

struct CUstream_st {
  bool legacy = false, blocking = true;
  bool destroyed = false; // its handle is gone; its queued work still runs
  // Work queued, and how much of it the host has seen finish (by waiting
  // on the stream or the device): what is ordered for the host.
  uint64_t issued = 0, observed = 0;
  std::deque<cudasim::Work> queue;
  std::shared_ptr<bool> lastDone; // the most recent work's completion
  // While capturing: the capture, and the nodes the next node waits for.
  std::shared_ptr<cudasim::Capture> capture;
  std::vector<size_t> frontier;
};
struct CUevent_st {
  std::shared_ptr<bool> recorded; // null: never recorded
  bool timing = true;             // not created with cudaEventDisableTiming
  // When the device reached the most recent record (host clock, seconds).
  std::shared_ptr<double> time;
  // Last recorded on a capturing stream: that capture and its nodes then.
  std::shared_ptr<cudasim::Capture> capture;
  std::vector<size_t> nodes;
};
