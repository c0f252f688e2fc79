// The Collective family on the CPU backend (dialects/rt/kernels/
// Collective.td): sums and gathers over the replica group (comm/: one
// process alone, or MPI), as run(Context &, const XArgs &). A shard that
// does not divide the tensor evenly goes through the padded workspace.
#include "runtime/backend/Collectives.h"
#include "runtime/cpu/CpuKernelContext.h"

#include <algorithm>
#include <cstring>

namespace ferry::cpu {

void run(Context &cx, const kernels::AllReduceArgs &a) {
  std::string what = cx.collectives->begin("all_reduce", a.count, 0, a.replicas,
                                           a.x.data, a.out.data, nullptr);
  cx.collectives->group().allReduceSum(a.x.data, a.out.data, a.count, what);
}

void run(Context &cx, const kernels::ReduceScatterArgs &a) {
  std::string what =
      cx.collectives->begin("reduce_scatter", a.count, a.shard, a.replicas,
                            a.x.data, a.out.data, a.workspace.data);
  const float *whole = a.x.data;
  const int64_t padded = a.shard * a.replicas;
  if (a.count < padded) { // pad with zeros in the workspace
    std::memcpy(a.workspace.data, a.x.data, static_cast<size_t>(a.count) * 4);
    std::fill(a.workspace.data + a.count, a.workspace.data + padded, 0.0f);
    whole = a.workspace.data;
  }
  cx.collectives->group().reduceScatterSum(whole, a.out.data, a.shard, what);
}

void run(Context &cx, const kernels::AllGatherArgs &a) {
  std::string what =
      cx.collectives->begin("all_gather", a.count, a.shard, a.replicas,
                            a.x.data, a.out.data, a.workspace.data);
  const bool padded = a.count < a.shard * a.replicas;
  cx.collectives->group().allGather(
      a.x.data, padded ? a.workspace.data : a.out.data, a.shard * 4, what);
  if (padded)
    std::memcpy(a.out.data, a.workspace.data, static_cast<size_t>(a.count) * 4);
}

} // namespace ferry::cpu
