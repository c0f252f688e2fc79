// The Collective family on CUDA (dialects/rt/kernels/Collective.td): NCCL's
// sums and gathers on the compute stream, as run(Context &, const XArgs &).
// A shard that does not divide the tensor evenly goes through the padded
// workspace.
#include "runtime/Error.h"
#include "runtime/backend/Collectives.h"
#include "runtime/cuda/CudaKernelContext.h"
#include "runtime/cuda/Launch.h"
#include "runtime/cuda/NcclGroup.h"

namespace ferry::cuda {
namespace {

// The CUDA backend's NCCL communicator is the data-parallel replicas'; the
// tensor group's and the maximum come with tensor parallelism on CUDA
// (docs/parallelism.md), which the config refuses until then.
void dataGroupSumOnly(int64_t group, int64_t reduction,
                      const std::string &what) {
  if (group != 0 || reduction != 0)
    throw RuntimeError(what + ": the CUDA backend runs collectives over the "
                              "data-parallel replicas by sum only; tensor "
                              "parallelism runs on the CPU backend");
}

} // namespace

void run(Context &cx, const kernels::AllReduceArgs &a) {
  std::string what =
      cx.collectives->begin("all_reduce", a.count, 0, a.replicas, a.group,
                            a.x.data, a.out.data, nullptr);
  dataGroupSumOnly(a.group, a.reduction, what);
  cx.nccl->allReduce(a.x.data, a.out.data, a.count, cx.stream, what);
}

void run(Context &cx, const kernels::ReduceScatterArgs &a) {
  std::string what =
      cx.collectives->begin("reduce_scatter", a.count, a.shard, a.replicas,
                            a.group, a.x.data, a.out.data, a.workspace.data);
  dataGroupSumOnly(a.group, 0, what);
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
  cx.nccl->reduceScatter(whole, a.out.data, a.shard, cx.stream, what);
}

void run(Context &cx, const kernels::AllGatherArgs &a) {
  std::string what =
      cx.collectives->begin("all_gather", a.count, a.shard, a.replicas, a.group,
                            a.x.data, a.out.data, a.workspace.data);
  dataGroupSumOnly(a.group, 0, what);
  const bool padded = a.count < a.shard * a.replicas;
  cx.nccl->allGather(a.x.data, padded ? a.workspace.data : a.out.data, a.shard,
                     cx.stream, what);
  if (padded)
    checkCuda(memcpyAsync(a.out.data, a.workspace.data, a.count * 4,
                          cudaMemcpyDeviceToDevice, cx.stream),
              "all-gather unpadding");
}

void run(Context &, const kernels::PartOfGroupArgs &a) {
  dataGroupSumOnly(a.group, 0, "part_of_group");
}

} // namespace ferry::cuda
