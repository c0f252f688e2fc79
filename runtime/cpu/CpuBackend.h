// The CPU backend: replays a program of an executable on host memory. The
// "device" is one arena of executable.arena_bytes, allocated once and
// accounted as device memory: execution.device_memory_limit is enforced
// against it and the peak of bytes the program touched is measured.
#pragma once

#include "runtime/executable/ExecutableFile.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ferry {

class RuntimeError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class CpuBackend {
public:
  // Checks every instruction (kernel index, buffer and parameter counts) and
  // allocates the arena; throws RuntimeError when it exceeds `limitBytes`.
  CpuBackend(const fxe::Executable &executable,
             std::optional<uint64_t> limitBytes);
  ~CpuBackend();
  CpuBackend(const CpuBackend &) = delete;
  CpuBackend &operator=(const CpuBackend &) = delete;

  // Initialises every state as its `init` says: normal(0, std) keyed by
  // (seed, name, layer entry, element) for weights, zeros, ones.
  void initialiseStates(uint64_t seed);

  // Runs a program with its input registers (e.g. {step} for train_step).
  void run(const std::string &program, const std::vector<int64_t> &inputs);

  const fxe::State *state(const std::string &name) const;
  float *f32(const fxe::State *s) {
    return reinterpret_cast<float *>(arena_ + s->offset());
  }
  int32_t *i32(const fxe::State *s) {
    return reinterpret_cast<int32_t *>(arena_ + s->offset());
  }
  uint64_t arenaBytes() const { return arenaBytes_; }
  // The highest arena byte any executed kernel touched.
  uint64_t peakBytes() const { return peakBytes_; }

  // Per-kernel wall time (for `ferry train --profile`): off by default.
  void setProfiling(bool on) { profiling_ = on; }
  // "kernel  calls  seconds  share" lines, slowest first.
  std::string profileReport() const;

private:
  void runInstrs(const flatbuffers::Vector<flatbuffers::Offset<fxe::Instr>> &v,
                 size_t begin, size_t end, std::vector<int64_t> &registers);
  void execute(const fxe::Instr &instr, const std::vector<int64_t> &registers);
  void checkExtents(const fxe::Instr &instr,
                    const std::vector<int64_t> &registers);
  static void checkIndices(const char *what, const int32_t *values,
                           int64_t count, int64_t limit);

  const fxe::Executable &exe_;
  char *arena_ = nullptr;
  uint64_t arenaBytes_ = 0, peakBytes_ = 0;
  bool profiling_ = false;
  std::vector<double> kernelSeconds_;
  std::vector<int64_t> kernelCalls_;
};

} // namespace ferry
