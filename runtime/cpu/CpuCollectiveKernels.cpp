// The Collective family on the CPU backend (dialects/rt/kernels/
// Collective.td): sums, maxima, gathers and parts over the group a call
// names (the data-parallel replicas or the tensor-parallel group; comm/: one
// process alone, or MPI), as run(Context &, const XArgs &). A shard that does
// not divide the tensor evenly goes through the padded workspace.
#include "runtime/backend/Collectives.h"
#include "runtime/cpu/CpuKernelContext.h"

#include <algorithm>
#include <cstring>

namespace ferry::cpu {

void run(Context &cx, const kernels::AllReduceArgs &a) {
  std::string what =
      cx.collectives->begin("all_reduce", a.count, 0, a.replicas, a.group,
                            a.x.data, a.out.data, nullptr);
  comm::Communicator &group = cx.collectives->group(a.group);
  if (a.reduction == 1)
    group.allReduceMax(a.x.data, a.out.data, a.count, what);
  else
    group.allReduceSum(a.x.data, a.out.data, a.count, what);
}

void run(Context &cx, const kernels::ReduceScatterArgs &a) {
  std::string what =
      cx.collectives->begin("reduce_scatter", a.count, a.shard, a.replicas,
                            a.group, a.x.data, a.out.data, a.workspace.data);
  const float *whole = a.x.data;
  const int64_t padded = a.shard * a.replicas;
  if (a.count < padded) { // pad with zeros in the workspace
    std::memcpy(a.workspace.data, a.x.data, static_cast<size_t>(a.count) * 4);
    std::fill(a.workspace.data + a.count, a.workspace.data + padded, 0.0f);
    whole = a.workspace.data;
  }
  cx.collectives->group(a.group).reduceScatterSum(whole, a.out.data, a.shard,
                                                  what);
}

void run(Context &cx, const kernels::AllGatherArgs &a) {
  std::string what =
      cx.collectives->begin("all_gather", a.count, a.shard, a.replicas, a.group,
                            a.x.data, a.out.data, a.workspace.data);
  const bool padded = a.count < a.shard * a.replicas;
  cx.collectives->group(a.group).allGather(
      a.x.data, padded ? a.workspace.data : a.out.data, a.shard * 4, what);
  if (padded)
    std::memcpy(a.out.data, a.workspace.data, static_cast<size_t>(a.count) * 4);
}

void run(Context &cx, const kernels::PartOfGroupArgs &a) {
  int rank = cx.collectives->partIndex(a.replicas, a.group);
  std::memcpy(a.out.data, a.x.data + rank * a.count,
              static_cast<size_t>(a.count) * 4);
}

} // namespace ferry::cpu
