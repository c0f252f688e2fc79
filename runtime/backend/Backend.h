// What the trainer, checkpoints and tools need from a backend: run a program
// of an executable, initialise its states, copy a state's bytes in and out
// (the states may live on a device), and report memory and transfers. The
// CPU backend (cpu/CpuBackend) and the CUDA backend (cuda/CudaBackend)
// implement it; createBackend (backend/Registry.h) picks by the executable's
// backend.
#pragma once

#include "runtime/Error.h"
#include "runtime/executable/ExecutableFile.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ferry {

namespace comm {
class Communicator;
}

class Backend {
public:
  // `group` is the replica group the collective kernels run over (null: this
  // process alone); it must outlive the backend.
  explicit Backend(const fxe::Executable &executable,
                   comm::Communicator *group = nullptr);
  virtual ~Backend();
  Backend(const Backend &) = delete;
  Backend &operator=(const Backend &) = delete;

  // normal(0, std) keyed by (seed, name, layer entry, element) for weights,
  // zeros, ones: the same values on every backend.
  virtual void initialiseStates(uint64_t seed) = 0;
  // Runs a program with its input registers (e.g. {step} for train_step).
  virtual void run(const std::string &program,
                   const std::vector<int64_t> &inputs) = 0;
  // Copies `bytes` bytes at `offset` of a state to / from host memory.
  virtual void read(const fxe::State *s, int64_t offset, void *dst,
                    int64_t bytes) = 0;
  virtual void write(const fxe::State *s, int64_t offset, const void *src,
                     int64_t bytes) = 0;

  virtual uint64_t arenaBytes() const = 0;
  virtual uint64_t peakBytes() const = 0; // highest arena byte touched
  virtual uint64_t hostBytes() const = 0; // remote buffers
  virtual uint64_t hostLinkBytes() const = 0;
  // Bytes this replica sent in collectives so far (a ring's count:
  // all-reduce 2(N-1)/N of the buffer, reduce-scatter and all-gather
  // (N-1)/N of the whole tensor).
  uint64_t collectiveBytes() const { return collectiveBytes_; }
  comm::Communicator &group() const { return *group_; }
  // Tensor parallelism: this rank's tensor-parallel group, over which the
  // executable's group-1 collectives run and whose rank picks the part of
  // each split state; null without tensor parallelism. Set it before
  // initialiseStates; it must outlive the backend.
  // Every rank calls it right after construction (a backend may make its
  // own communicator of the group here, collectively).
  virtual void setTensorGroup(comm::Communicator *tensor) { tensor_ = tensor; }
  comm::Communicator *tensorGroup() const { return tensor_; }
  int tensorRank() const;
  // Rank 0 of the data group and of the tensor group: the rank that writes
  // for the whole job (checkpoints).
  bool firstOfMesh() const;
  virtual void setProfiling(bool on) = 0;
  // Replay each program as a CUDA graph captured on its first run
  // (execution.cuda_graphs; backends without graphs ignore it).
  virtual void setGraphReplay(bool) {}
  virtual std::string profileReport() const = 0;
  virtual std::string name() const = 0; // "cpu", "cuda"

  const fxe::State *state(const std::string &name) const;
  // The program `name` and its registers with `inputs` set (the rest 0);
  // throws RuntimeError for an unknown program or a wrong input count.
  const fxe::Program &program(const std::string &name,
                              const std::vector<int64_t> &inputs,
                              std::vector<int64_t> &registers) const;
  const fxe::Executable &executable() const { return exe_; }

  // One f32 scalar state.
  float scalar(const fxe::State *s) {
    float v = 0;
    read(s, 0, &v, 4);
    return v;
  }

protected:
  const fxe::Executable &exe_;
  comm::Communicator *group_;
  std::unique_ptr<comm::Communicator> ownGroup_; // when none was given
  comm::Communicator *tensor_ = nullptr;
  uint64_t collectiveBytes_ = 0;
};

// A state's initial bytes, as its `init` says (normal(0, std) keyed by
// (seed, name, layer entry, element), zeros, ones; padded vocabulary rows 0):
// the same on every backend.
// A sharded state (replicated tensor sharding) gets replica `rank`'s shard
// of the whole tensor's values, a split one (tensor parallelism) tensor
// rank `tensorRank`'s part, one that is both that part's shard.
void initialStateValues(const fxe::State *s, uint64_t seed, void *out,
                        int rank = 0, int tensorRank = 0);

// Replays instructions [begin, end) of a program: loops set their counter
// (and parity) registers and run their bodies; every kernel instruction goes
// to `execute(instr, registers)`. Shared by the backends.
template <typename Execute>
void replayInstrs(const flatbuffers::Vector<flatbuffers::Offset<fxe::Instr>> &v,
                  size_t begin, size_t end, std::vector<int64_t> &registers,
                  Execute &&execute) {
  for (size_t i = begin; i < end; ++i) {
    const fxe::Instr *in = v.Get(i);
    if (in->loop_count() > 0) {
      size_t bodyEnd = i + 1 + in->loop_body();
      for (int64_t k = 0; k < in->loop_count(); ++k) {
        registers[in->loop_register()] = k;
        if (in->loop_parity_register() >= 0)
          registers[in->loop_parity_register()] = k & 1;
        replayInstrs(v, i + 1, bodyEnd, registers, execute);
      }
      i = bodyEnd - 1;
      continue;
    }
    execute(*in, registers);
  }
}

} // namespace ferry
