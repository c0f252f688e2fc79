// Splitting the job's group into the mesh's tensor- and data-parallel
// groups (Mesh.h).
#include "runtime/comm/Mesh.h"

#include <fmt/format.h>

#include <vector>

namespace ferry::comm {

Mesh openMesh(Communicator &job, int tensorParallel) {
  int size = job.size();
  // Every rank must split the same way (the splits block until all ranks
  // call them): a timed collective first agrees on T, so that every rank
  // stops with the same message, or none does.
  float bounds[2] = {static_cast<float>(tensorParallel),
                     -static_cast<float>(tensorParallel)};
  job.allReduceMax(bounds, bounds, 2, "the mesh's agreement on T");
  if (bounds[0] != -bounds[1])
    throw RuntimeError(fmt::format(
        "{}the ranks disagree on execution.tensor_parallel (from {:g} to "
        "{:g}): start every rank with the same config and options",
        job.prefix(), -bounds[1], bounds[0]));
  if (tensorParallel < 1 || size % tensorParallel != 0)
    throw RuntimeError(fmt::format(
        "{}execution.tensor_parallel is {} but {} processes were started: "
        "start a multiple of {} processes (tensor_parallel × data_parallel)",
        job.prefix(), tensorParallel, size, tensorParallel));
  Mesh mesh;
  mesh.tensorParallel = tensorParallel;
  mesh.dataParallel = size / tensorParallel;
  mesh.tensorRank = job.rank() % tensorParallel;
  mesh.dataRank = job.rank() / tensorParallel;
  // The tensor group first, then the data group, on every rank: splits are
  // collective over the job.
  mesh.tensor = job.split(mesh.dataRank, mesh.tensorRank, "tensor");
  mesh.data = job.split(mesh.tensorRank, mesh.dataRank, "data");

  // Every rank learns which tensor groups span machines, so all of them
  // stop with the same message.
  char mine = mesh.tensor->onOneNode() ? 1 : 0;
  std::vector<char> onOneNode(static_cast<size_t>(size));
  job.allGather(&mine, onOneNode.data(), 1, "the mesh's placement check");
  for (int group = 0; group < mesh.dataParallel; ++group) {
    if (onOneNode[static_cast<size_t>(group * tensorParallel)])
      continue;
    int first = group * tensorParallel, last = first + tensorParallel - 1;
    throw RuntimeError(fmt::format(
        "{}execution.tensor_parallel is {}, and ranks {}..{} (tensor group "
        "{}) run on more than one machine: a tensor-parallel group is {} "
        "consecutive ranks and must share one machine, because its "
        "collectives run inside every layer. Start the same number of "
        "ranks on every machine, a multiple of {} (mpirun --map-by "
        "ppr:K:node, srun --ntasks-per-node=K), or lower "
        "execution.tensor_parallel",
        job.prefix(), tensorParallel, first, last, group, tensorParallel,
        tensorParallel));
  }
  return mesh;
}

} // namespace ferry::comm
