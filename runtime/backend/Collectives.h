// What the collective kernels' bodies (dialects/rt/kernels/Collective.td)
// share on every backend: the group a call names (0 the data-parallel
// replicas, 1 the tensor-parallel group), the checks of the call against
// it, the count of the bytes it moves, and its name in timeout messages. A
// backend hands one to the bodies through its kernel context, for the
// running program.
#pragma once

#include "runtime/comm/Communicator.h"
#include "runtime/kernels/DropoutKeys.h"

#include <cstdint>
#include <string>

namespace ferry {

class Collectives {
public:
  // `bytes` counts what the program's collectives move (the backend's
  // collectiveBytes); `program` names the running program. `tensor` is
  // null without tensor parallelism.
  Collectives(comm::Communicator &data, comm::Communicator *tensor,
              uint64_t &bytes, const char *program)
      : data_(data), tensor_(tensor), bytes_(bytes), program_(program) {}

  // The group a call names; throws RuntimeError for the tensor group in a
  // run without one (how to start the run).
  comm::Communicator &group(int64_t group) const;
  // This process's rank in the tensor-parallel group (0 without one): where
  // its part of a split tensor lies (dropout keys, a vocabulary-parallel
  // table, split classes).
  int tensorRank() const { return tensor_ ? tensor_->rank() : 0; }
  // The tensor-parallel group's size (1 without one).
  int tensorSize() const { return tensor_ ? tensor_->size() : 1; }
  // Tensor parallelism's dropout keys, on every backend: where this rank's
  // part of each sample starts among the whole sample's elements (tensor
  // rank x the call's tensor_key_stride). Packed rows' keys of the
  // attention probabilities add it to each element's (head, query, key)
  // key; throws naming `kernel` for packed keys of a token's elements,
  // whose split is not built.
  uint64_t tensorKeyOffset(int64_t stride, const PackedDropoutKeys &keys,
                           const char *kernel) const;

  // Checks a collective call before it runs and counts its bytes: the
  // replica count against the group's size (the message says how to start
  // the run or recompile), an all-reduce's x and out (the same range or
  // disjoint), a padded reduce-scatter's or all-gather's workspace (present).
  // `shard` is 0 for an all-reduce. Returns the call's name in messages:
  // "all_reduce of 4096 elements in train_step".
  std::string begin(const char *kernel, int64_t count, int64_t shard,
                    int64_t replicas, int64_t group, const void *x,
                    const void *out, const void *workspace) const;

  // Checks a part_of_group call (no bytes move: every rank holds the whole)
  // and returns this rank's part: its rank in the group.
  int partIndex(int64_t replicas, int64_t group) const;

private:
  // The group, checked to have `replicas` ranks (the message says how to
  // start the run or recompile).
  comm::Communicator &checkedGroup(int64_t replicas, int64_t group) const;

  comm::Communicator &data_;
  comm::Communicator *tensor_;
  uint64_t &bytes_;
  const char *program_;
};

} // namespace ferry
