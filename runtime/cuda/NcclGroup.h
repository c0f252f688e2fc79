// The CUDA backend's replica group: an NCCL communicator over the ranks of
// the host group (comm::Communicator, MPI: the whole job, or one of the
// mesh's groups), which carries its ncclUniqueId from the group's rank 0 to
// the others. Every rank of the job makes its groups in the same order. The
// collective kernels (all_reduce, reduce_scatter, all_gather) run as NCCL calls
// on device buffers on the compute stream. One GPU per process: selectDevice
// picks it from the local rank before anything else touches the device.
//
// NCCL itself is opened when the first group is made (NcclLibrary.h).
//
// NCCL calls are asynchronous, and a peer that dies leaves them waiting on
// the GPU. synchronize() therefore waits by polling, watching NCCL's
// asynchronous error and the host group's failure notices, and after the
// group's timeout aborts the communicator and throws CollectiveError.
#pragma once

#include "runtime/comm/Communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <string>

namespace ferry::cuda {

// Makes GPU (local rank mod device count) current; returns it.
int selectDevice(comm::Communicator &group);

class NcclGroup {
public:
  explicit NcclGroup(comm::Communicator &host);
  ~NcclGroup();
  NcclGroup(const NcclGroup &) = delete;
  NcclGroup &operator=(const NcclGroup &) = delete;

  void allReduce(const float *in, float *out, int64_t count,
                 cudaStream_t stream, const std::string &what);
  // The element-wise maximum over the group.
  void allReduceMax(const float *in, float *out, int64_t count,
                    cudaStream_t stream, const std::string &what);
  // `in` holds size() * shard elements.
  void reduceScatter(const float *in, float *out, int64_t shard,
                     cudaStream_t stream, const std::string &what);
  // `out` holds size() * shard elements.
  void allGather(const float *in, float *out, int64_t shard,
                 cudaStream_t stream, const std::string &what);
  // Waits for `stream` (see above); `what` names the program.
  void synchronize(cudaStream_t stream, const std::string &what);

  // Aborts the communicator (its calls in flight never complete); the
  // group is unusable afterwards.
  void abort();

private:
  void check(ncclResult_t r, const std::string &what);

  comm::Communicator &host_;
  const struct NcclLibrary *nccl_; // NcclLibrary.h: opened on first use
  ncclComm_t comm_ = nullptr;
  bool aborted_ = false;
};

} // namespace ferry::cuda
