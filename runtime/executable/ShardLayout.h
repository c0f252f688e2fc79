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
  int64_t layers = 1;     // entries (a stacked state's leading dimension)
  int64_t entry = 0;      // elements of one whole entry
  int64_t shard = 0;      // elements of one entry's shard
  std::vector<int64_t> wholeShape;
};

// nullopt for a state that is not sharded; throws RuntimeError naming the
// state when its shard fields disagree with its shape (a damaged
// executable).
std::optional<ShardLayout> shardLayoutOf(const fxe::State *s);

} // namespace ferry
