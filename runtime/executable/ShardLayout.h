// The layouts of a state that holds part of a tensor: replicated tensor
// sharding's flat shards over the data-parallel replicas, tensor
// parallelism's split of one dimension over the tensor group, and both at
// once (a split parameter's part, sharded over the replicas).
//
// Replicated tensor sharding's layout of one state (Executable.fbs:
// State.shard_of, State.shard_replicas): per layer entry (stacked) or for
// the whole tensor, replica r holds elements [r * shard, (r + 1) * shard) of
// the entry flattened, shard = ceil(entry / replicas), zeros past the end.
// The tensor it shards is the whole one, or a tensor-parallel rank's part
// (StateLayout below composes the two); initialisation and checkpoints map
// through them.
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
  std::vector<int64_t> wholeShape; // of what is sharded: a split state's part
};

// nullopt for a state that is not sharded; throws RuntimeError naming the
// state when its shard fields disagree with its shape (a damaged
// executable).
std::optional<ShardLayout> shardLayoutOf(const fxe::State *s);

// Tensor parallelism's layout of one state (Executable.fbs: State.split_dim,
// State.split_parts): tensor rank t holds part t of dimension `dim` of the
// whole tensor, in the row-major order of the part's shape (the state's
// shape, or its shard_of when the part is also sharded).
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

// Both layouts of one state composed: the shards (if any) are of this tensor
// rank's part (if split), which is of the whole tensor. Every state has one;
// a state that is neither sharded nor split maps its elements to themselves.
struct StateLayout {
  std::optional<ShardLayout> shard; // over the data group, of the part
  std::optional<SplitLayout> split; // over the tensor group, of the whole
  std::vector<int64_t> wholeShape;
  int64_t elements = 0;      // this rank's (the state's bytes / its width)
  int64_t wholeElements = 0; // of the whole tensor
  // The whole tensor's flat index of element `local` of the rank that is
  // replica `dataRank` and tensor rank `tensorRank`, or -1 for a shard's
  // padding past the end of its entry.
  int64_t wholeIndex(int64_t local, int64_t dataRank,
                     int64_t tensorRank) const {
    int64_t part = local;
    if (shard) {
      int64_t e = dataRank * shard->shard + local % shard->shard;
      if (e >= shard->entry)
        return -1;
      part = local / shard->shard * shard->entry + e;
    }
    return split ? split->wholeIndex(part, tensorRank) : part;
  }
};

// Throws RuntimeError naming the state, as the two above do.
StateLayout stateLayoutOf(const fxe::State *s);

} // namespace ferry
