// The layouts of a state that holds part of a tensor: replicated tensor
// sharding's flat shards over the data-parallel replicas, and tensor
// parallelism's split of one dimension over the tensor group.
//
// Replicated tensor sharding's layout of one state (Executable.fbs:
// State.shard_of, State.shard_replicas): per layer entry (stacked) or for
// the whole tensor, replica r holds elements [r * shard, (r + 1) * shard) of
// the entry flattened, shard = ceil(entry / replicas), zeros past the end.
// Initialisation and checkpoints use it to map the whole tensor's elements
// to this replica's bytes.
#pragma once

#include "runtime/executable/ExecutableFile.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace ferry {

struct ShardLayout {
  int64_t replicas = 1;
  int64_t layers = 1; // entries (a stacked state's leading dimension)
  int64_t entry = 0;  // elements of one whole entry
  int64_t shard = 0;  // elements of one entry's shard
  std::vector<int64_t> wholeShape;
};

// nullopt for a state that is not sharded; throws RuntimeError naming the
// state when its shard fields disagree with its shape (a damaged
// executable).
std::optional<ShardLayout> shardLayoutOf(const fxe::State *s);

// Tensor parallelism's layout of one state (Executable.fbs: State.split_dim,
// State.split_parts): tensor rank t holds part t of dimension `dim` of the
// whole tensor, in the row-major order of its own shape.
struct SplitLayout {
  int64_t parts = 1;
  int64_t dim = 0;
  std::vector<int64_t> wholeShape;
  int64_t elements = 0; // of this rank's part
  int64_t block = 0;    // contiguous elements of a part: its dim x inner
  // The whole tensor's flat index of element `local` of rank `rank`'s part.
  int64_t wholeIndex(int64_t local, int64_t rank) const {
    return (local / block) * block * parts + rank * block + local % block;
  }
};

// nullopt for a state that is not split; throws RuntimeError naming the
// state when its split fields disagree with its shape (a damaged
// executable).
std::optional<SplitLayout> splitLayoutOf(const fxe::State *s);

} // namespace ferry
