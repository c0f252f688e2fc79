// The CPU backend: replays a program of an executable on host memory. The
// "device" is one arena of executable.arena_bytes, allocated once and
// accounted as device memory: execution.device_memory_limit is enforced
// against it and the peak of bytes the program touched is measured. Remote
// buffers of phased execution live in a separate host allocation
// (executable.host_bytes); load/store instructions copy between the two on a
// copy thread (CopyQueue), counted as host-link bytes.
#pragma once

#include "runtime/backend/Backend.h"
#include "runtime/cpu/Bf16Staging.h"
#include "runtime/cpu/CopyQueue.h"
#include "runtime/executable/ExecutableFile.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ferry {

class CpuBackend : public Backend {
public:
  // Validates the executable (runtime/executable/Validate.h) and allocates
  // the arena; throws RuntimeError when it exceeds `limitBytes`.
  CpuBackend(const fxe::Executable &executable,
             std::optional<uint64_t> limitBytes,
             comm::Communicator *group = nullptr);
  ~CpuBackend() override;

  void initialiseStates(uint64_t seed) override;
  void run(const std::string &program,
           const std::vector<int64_t> &inputs) override;
  void read(const fxe::State *s, int64_t offset, void *dst,
            int64_t bytes) override;
  void write(const fxe::State *s, int64_t offset, const void *src,
             int64_t bytes) override;
  std::string name() const override { return "cpu"; }

  // A state's memory, on the device or (a remote buffer) in host memory.
  char *data(const fxe::State *s) {
    return (s->host() ? host_ : arena_) + s->offset();
  }
  float *f32(const fxe::State *s) { return reinterpret_cast<float *>(data(s)); }
  int32_t *i32(const fxe::State *s) {
    return reinterpret_cast<int32_t *>(data(s));
  }
  uint64_t arenaBytes() const override { return arenaBytes_; }
  uint64_t hostBytes() const override { return hostBytes_; }
  // Bytes moved between host memory and the device so far.
  uint64_t hostLinkBytes() const override { return hostLinkBytes_; }
  // The highest arena byte any executed kernel touched.
  uint64_t peakBytes() const override { return peakBytes_; }

  // Per-kernel wall time (for `ferry train --profile`): off by default.
  void setProfiling(bool on) override { profiling_ = on; }
  // "kernel  calls  seconds  share" lines, slowest first.
  std::string profileReport() const override;
  // Measured time per phase (by name) while profiling: calls and seconds.
  struct PhaseTime {
    int64_t calls = 0;
    double seconds = 0;
  };
  const std::map<std::string, PhaseTime> &phaseTimes() const {
    return phaseTimes_;
  }

private:
  void runInstrs(const flatbuffers::Vector<flatbuffers::Offset<fxe::Instr>> &v,
                 size_t begin, size_t end, std::vector<int64_t> &registers);
  void execute(const fxe::Instr &instr, const std::vector<int64_t> &registers);

  // The Transfer family (dialects/rt/kernels/Transfer.td), which the
  // backend carries out itself: copies on its copy queue, waits, phases.
  void transfer(const fxe::Instr &in, const std::vector<int64_t> &registers);
  void copy(const fxe::Instr &in, const std::vector<int64_t> &registers,
            bool load, int64_t bytes, int64_t event);

  char *arena_ = nullptr, *host_ = nullptr;
  uint64_t arenaBytes_ = 0, peakBytes_ = 0, hostBytes_ = 0, hostLinkBytes_ = 0;
  CopyQueue copies_;
  cpu::Bf16Staging bf16_;     // a call's bf16 buffers as fp32 copies
  std::vector<int64_t> ints_; // the running call's integers, evaluated
  std::map<int64_t, uint64_t> eventTickets_; // event -> last ticket
  const fxe::Program *current_ = nullptr;
  std::map<std::string, PhaseTime> phaseTimes_;
  std::chrono::steady_clock::time_point phaseStart_;
  bool profiling_ = false;
  std::vector<double> kernelSeconds_;
  std::vector<int64_t> kernelCalls_;
};

} // namespace ferry
