// The Collective family on CUDA (dialects/rt/kernels/Collective.td): NCCL's
// sums, maxima and gathers on the compute stream, over the data group's
// communicator or the tensor group's, as run(Context &, const XArgs &).
// A shard that does not divide the tensor evenly goes through the padded
// workspace.
#include "runtime/Error.h"
#include "runtime/backend/Collectives.h"
#include "runtime/cuda/CudaKernelContext.h"
#include "runtime/cuda/Launch.h"
#include "runtime/cuda/NcclGroup.h"

namespace ferry::cuda {
namespace {

// The NCCL communicator of the group a call names (Collective.td: 0 the
// data-parallel replicas, 1 the tensor-parallel group).
NcclGroup &ncclOf(const Context &cx, int64_t group, const std::string &what) {
  NcclGroup *nccl = group == 1 ? cx.tensorNccl : cx.nccl;
  if (!nccl)
    throw RuntimeError(what + ": the CUDA backend has no NCCL communicator "
                              "for this group; the executable's collectives "
                              "and this run's groups disagree: train it with "
                              "the config it was compiled from");
  return *nccl;
}

} // namespace

void run(Context &cx, const kernels::AllReduceArgs &a) {
  std::string what =
      cx.collectives->begin("all_reduce", a.count, 0, a.replicas, a.group,
                            a.x.data, a.out.data, nullptr);
  NcclGroup &nccl = ncclOf(cx, a.group, what);
  if (a.reduction == 1)
    nccl.allReduceMax(a.x.data, a.out.data, a.count, cx.stream, what);
  else
    nccl.allReduce(a.x.data, a.out.data, a.count, cx.stream, what);
}

void run(Context &cx, const kernels::ReduceScatterArgs &a) {
  std::string what =
      cx.collectives->begin("reduce_scatter", a.count, a.shard, a.replicas,
                            a.group, a.x.data, a.out.data, a.workspace.data);
  const float *whole = a.x.data;
  const int64_t padded = a.shard * a.replicas;
  if (a.count < padded) { // padded with zeros in the workspace
    checkCuda(memcpyAsync(a.workspace.data, a.x.data, a.count * 4,
                          cudaMemcpyDeviceToDevice, cx.stream),
              "reduce-scatter padding");
    checkCuda(memsetAsync(a.workspace.data + a.count, 0, (padded - a.count) * 4,
                          cx.stream),
              "reduce-scatter padding");
    whole = a.workspace.data;
  }
  ncclOf(cx, a.group, what)
      .reduceScatter(whole, a.out.data, a.shard, cx.stream, what);
}

void run(Context &cx, const kernels::AllGatherArgs &a) {
  std::string what =
      cx.collectives->begin("all_gather", a.count, a.shard, a.replicas, a.group,
                            a.x.data, a.out.data, a.workspace.data);
  const bool padded = a.count < a.shard * a.replicas;
  ncclOf(cx, a.group, what)
      .allGather(a.x.data, padded ? a.workspace.data : a.out.data, a.shard,
                 cx.stream, what);
  if (padded)
    checkCuda(memcpyAsync(a.out.data, a.workspace.data, a.count * 4,
                          cudaMemcpyDeviceToDevice, cx.stream),
              "all-gather unpadding");
}

// No rank communicates: a copy of this rank's part.
void run(Context &cx, const kernels::PartOfGroupArgs &a) {
  int rank = cx.collectives->partIndex(a.replicas, a.group);
  checkCuda(memcpyAsync(a.out.data, a.x.data + rank * a.count, a.count * 4,
                        cudaMemcpyDeviceToDevice, cx.stream),
            "part_of_group");
}

} // namespace ferry::cuda
