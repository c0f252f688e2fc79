// What the collective kernels' bodies (dialects/rt/kernels/Collective.td)
// share on every backend: the checks of a call against the replica group,
// the count of the bytes it moves, and its name in timeout messages. A
// backend hands one to the bodies through its kernel context, for the
// running program.
#pragma once

#include "runtime/comm/Communicator.h"

#include <cstdint>
#include <string>

namespace ferry {

class Collectives {
public:
  // `bytes` counts what the program's collectives move (the backend's
  // collectiveBytes); `program` names the running program.
  Collectives(comm::Communicator &group, uint64_t &bytes, const char *program)
      : group_(group), bytes_(bytes), program_(program) {}

  comm::Communicator &group() const { return group_; }

  // Checks a collective call before it runs and counts its bytes: the
  // replica count against the group's size (the message says how to start
  // the run or recompile), an all-reduce's x and out (the same range or
  // disjoint), a padded reduce-scatter's or all-gather's workspace (present).
  // `shard` is 0 for an all-reduce. Returns the call's name in messages:
  // "all_reduce of 4096 elements in train_step".
  std::string begin(const char *kernel, int64_t count, int64_t shard,
                    int64_t replicas, const void *x, const void *out,
                    const void *workspace) const;

private:
  comm::Communicator &group_;
  uint64_t &bytes_;
  const char *program_;
};

} // namespace ferry
