// The device mesh of a run (docs/parallelism.md): T × D processes, tensor
// parallelism of T inside data parallelism of D. Rank r of the job is
// tensor rank r mod T of data rank r div T: a tensor-parallel group is T
// consecutive ranks, which must share one machine (its collectives run
// inside every layer), and a data-parallel group is the D ranks with the
// same tensor rank.
#pragma once

#include "runtime/comm/Communicator.h"

#include <memory>

namespace ferry::comm {

struct Mesh {
  int tensorParallel = 1, dataParallel = 1;
  int tensorRank = 0, dataRank = 0;
  // Subgroups of the job's group; collectives over each run on its own
  // communicator.
  std::unique_ptr<Communicator> tensor, data;
};

// Splits `job` into the mesh with tensor groups of `tensorParallel` ranks.
// Every rank of `job` calls it. Throws RuntimeError on every rank when the
// job's size is not a multiple of tensorParallel, or when a tensor group
// spans machines (naming its ranks and how to place them).
Mesh openMesh(Communicator &job, int tensorParallel);

} // namespace ferry::comm
