// ferry's CUDA simulator, internal: the pieces the runtime, the grid runner
// and the BLAS reference share. Test-only.
#pragma once

#include "cuda_runtime.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace cudasim {

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

} // namespace cudasim
