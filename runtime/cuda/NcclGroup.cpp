// NCCL for the CUDA backend's collectives (NcclGroup.h).
#include "runtime/cuda/NcclGroup.h"

#include "runtime/cuda/NcclLibrary.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

namespace ferry::cuda {

int selectDevice(comm::Communicator &group) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    return -1; // the backend reports the missing device
  int device = group.localRank() % count;
  if (cudaSetDevice(device) != cudaSuccess)
    throw RuntimeError(fmt::format("{}cannot use GPU {} (local rank {})",
                                   group.prefix(), device, group.localRank()));
  return device;
}

NcclGroup::NcclGroup(comm::Communicator &host) : host_(host), nccl_(nullptr) {
  // Every rank loads NCCL before any rank waits in the broadcast, so a
  // rank without it fails here, and the group's failure notices end the
  // others (Communicator.h).
  try {
    nccl_ = &ncclLibrary();
  } catch (const RuntimeError &e) {
    throw RuntimeError(host.prefix() + e.what());
  }
  ncclUniqueId id{};
  if (host.rank() == 0)
    check(nccl_->getUniqueId(&id), "ncclGetUniqueId");
  host.broadcast(&id, sizeof id, 0, "the broadcast of the NCCL unique id");
  check(nccl_->commInitRank(&comm_, host.size(), id, host.rank()),
        "ncclCommInitRank");
}

NcclGroup::~NcclGroup() {
  if (comm_ && !aborted_)
    nccl_->commDestroy(comm_);
}

void NcclGroup::abort() {
  if (comm_ && !aborted_)
    nccl_->commAbort(comm_);
  aborted_ = true;
}

void NcclGroup::check(ncclResult_t r, const std::string &what) {
  if (r == ncclSuccess || r == ncclInProgress)
    return;
  throw comm::CollectiveError(fmt::format(
      "{}NCCL {} failed: {}", host_.prefix(), what, nccl_->getErrorString(r)));
}

void NcclGroup::allReduce(const float *in, float *out, int64_t count,
                          cudaStream_t stream, const std::string &what) {
  check(nccl_->allReduce(in, out, static_cast<size_t>(count), ncclFloat32,
                         ncclSum, comm_, stream),
        what);
}

void NcclGroup::allReduceMax(const float *in, float *out, int64_t count,
                             cudaStream_t stream, const std::string &what) {
  check(nccl_->allReduce(in, out, static_cast<size_t>(count), ncclFloat32,
                         ncclMax, comm_, stream),
        what);
}

void NcclGroup::reduceScatter(const float *in, float *out, int64_t shard,
                              cudaStream_t stream, const std::string &what) {
  check(nccl_->reduceScatter(in, out, static_cast<size_t>(shard), ncclFloat32,
                             ncclSum, comm_, stream),
        what);
}

void NcclGroup::allGather(const float *in, float *out, int64_t shard,
                          cudaStream_t stream, const std::string &what) {
  check(nccl_->allGather(in, out, static_cast<size_t>(shard), ncclFloat32,
                         comm_, stream),
        what);
}

void NcclGroup::synchronize(cudaStream_t stream, const std::string &what) {
  auto start = std::chrono::steady_clock::now();
  for (int64_t polls = 0;; ++polls) {
    cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess)
      return;
    if (e != cudaErrorNotReady) {
      abort();
      throw RuntimeError(fmt::format("{}CUDA {} failed: {}", host_.prefix(),
                                     what, cudaGetErrorString(e)));
    }
    try {
      host_.checkFailures();
    } catch (...) {
      abort(); // the NCCL calls in flight will never complete
      throw;
    }
    ncclResult_t async = ncclSuccess;
    nccl_->commGetAsyncError(comm_, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      abort();
      throw comm::CollectiveError(fmt::format("{}NCCL failed in {}: {}",
                                              host_.prefix(), what,
                                              nccl_->getErrorString(async)));
    }
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (waited > host_.timeoutSeconds()) {
      abort();
      throw comm::CollectiveError(fmt::format(
          "{}{} did not complete within {:g} s "
          "(execution.collective_timeout_seconds): another rank is stalled "
          "or has died; look at the other ranks' messages, or raise the "
          "timeout if a step legitimately takes longer",
          host_.prefix(), what, host_.timeoutSeconds()));
    }
    if (polls > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

} // namespace ferry::cuda
