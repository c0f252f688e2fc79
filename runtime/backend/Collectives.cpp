// The checks and accounting of a collective kernel call (Collectives.h).
#include "runtime/backend/Collectives.h"

#include "runtime/Error.h"

#include <fmt/format.h>

namespace ferry {

comm::Communicator &Collectives::group(int64_t group) const {
  if (group == 0)
    return data_;
  if (!tensor_)
    throw RuntimeError(fmt::format(
        "{}the executable was compiled for tensor parallelism (its "
        "collectives run over a tensor-parallel group), but this run has "
        "none; train it with `mpirun -np N ferry train` (N = "
        "execution.tensor_parallel x execution.data_parallel) and the config "
        "it was compiled from",
        data_.prefix()));
  return *tensor_;
}

std::string Collectives::begin(const char *kernel, int64_t count, int64_t shard,
                               int64_t replicas, int64_t groupIndex,
                               const void *x, const void *out,
                               const void *workspace) const {
  const bool allReduce = shard == 0;
  if (allReduce) {
    auto *in = static_cast<const char *>(x);
    auto *result = static_cast<const char *>(out);
    int64_t bytes = count * 4;
    if (in != result && in < result + bytes && result < in + bytes)
      throw RuntimeError(fmt::format(
          "{}: its input and output overlap without being the same range; "
          "the executable is damaged: recompile it",
          kernel));
  } else if (count < shard * replicas && workspace == nullptr) {
    throw RuntimeError(fmt::format(
        "{} of {} elements in shards of {} over {} replicas needs its padding "
        "workspace, which the call lacks; the executable is damaged: "
        "recompile it",
        kernel, count, shard, replicas));
  }
  comm::Communicator &g = checkedGroup(replicas, groupIndex);
  int64_t n = g.size();
  // The bytes a ring moves per replica: an all-reduce twice its tensor.
  double whole = static_cast<double>(allReduce ? count : shard * replicas);
  double factor = allReduce ? 2.0 : 1.0;
  bytes_ +=
      static_cast<uint64_t>(factor * 4.0 * whole * static_cast<double>(n - 1) /
                            static_cast<double>(n));
  return fmt::format("{} of {} elements in {}", kernel, count, program_);
}

uint64_t Collectives::tensorKeyOffset(int64_t stride,
                                      const PackedDropoutKeys &keys,
                                      const char *kernel) const {
  if (stride != 0 && !tensor_)
    group(1); // throws: the executable is tensor-parallel, this run is not
  if (stride != 0 && keys.packed() &&
      keys.layout != PackedDropoutKeys::Attention)
    throw RuntimeError(std::string(kernel) +
                       ": packed rows' keys of a tensor-parallel part of "
                       "each token's elements are not built (only the "
                       "attention probabilities' heads are split)");
  return static_cast<uint64_t>(stride) * static_cast<uint64_t>(tensorRank());
}

int Collectives::partIndex(int64_t replicas, int64_t groupIndex) const {
  return checkedGroup(replicas, groupIndex).rank();
}

comm::Communicator &Collectives::checkedGroup(int64_t replicas,
                                              int64_t groupIndex) const {
  comm::Communicator &g = group(groupIndex);
  int64_t n = g.size();
  if (replicas != n && groupIndex == 0)
    throw RuntimeError(fmt::format(
        "{}the executable was compiled for execution.data_parallel {}, but "
        "this run has {} process{}; start it with `mpirun -np {}` or "
        "recompile with --set execution.data_parallel={}",
        g.prefix(), replicas, n, n == 1 ? "" : "es", replicas, n));
  if (replicas != n)
    throw RuntimeError(fmt::format(
        "{}the executable was compiled for execution.tensor_parallel {}, but "
        "this run's tensor-parallel groups have {} rank{}; train it with the "
        "config it was compiled from, or recompile with --set "
        "execution.tensor_parallel={}",
        g.prefix(), replicas, n, n == 1 ? "" : "s", n));
  return g;
}

} // namespace ferry
