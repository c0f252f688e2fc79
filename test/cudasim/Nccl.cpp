// The simulated NCCL (include/nccl.h): collectives queued on streams and
// carried by MPI between the simulated ranks when the device reaches them.
// Misuse NCCL would reject (a unique id that was not broadcast, a buffer
// outside device memory, a rank past the count) stops the process.
//
// Communicators over part of the job (the mesh's tensor and data groups):
// ncclCommInitRank splits MPI_COMM_WORLD by the unique id's nonce, so the
// ranks that share an id form one MPI communicator. MPI_Comm_split is
// collective over the world, so every rank of the job must create its
// communicators in the same order (as ferry does: one per group, in the
// mesh's order); a real NCCL has no such rule, but ferry keeps it anyway
// so that collectives of different groups are issued in one order.
#include "Sim.h"
#include "nccl.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>

#ifdef FERRY_HAVE_MPI
#include <mpi.h>
#endif

struct ncclComm {
  int rank = 0, nranks = 1;
  ncclUniqueId id{};
#ifdef FERRY_HAVE_MPI
  MPI_Comm mpi = MPI_COMM_NULL;
#endif
};

namespace {

using cudasim::fail;

constexpr char kMagic[] = "ferry-cudasim-nccl";

ncclResult_t checkComm(ncclComm_t comm, const char *what) {
  if (!comm)
    fail(std::string(what) + " on a null communicator");
  return ncclSuccess;
}

// Queues a collective on `stream` after checking its buffers are device
// memory: a copy for one rank, else `mpi` (the matching MPI collective)
// when the device reaches it.
ncclResult_t enqueueCollective(ncclComm_t comm, cudaStream_t stream,
                               const char *name, const void *send,
                               size_t sendBytes, void *recv, size_t recvBytes,
                               std::function<void()> mpi) {
  checkComm(comm, name);
  cudasim::requireDevice(send, sendBytes, (std::string(name) + " send buffer").c_str());
  cudasim::requireDevice(recv, recvBytes, (std::string(name) + " receive buffer").c_str());
  size_t copy = std::min(sendBytes, recvBytes);
  cudasim::enqueue(stream, name, [=] {
    if (comm->nranks == 1) {
      if (send != recv)
        std::memmove(recv, send, copy);
      return;
    }
    mpi();
  });
  return ncclSuccess;
}

} // namespace

// The simulated NCCL presents itself as the version ferry's replicated runs
// are written for (collectives captured into CUDA graphs: 2.9 and later).
ncclResult_t ncclGetVersion(int *version) {
  if (!version)
    return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
  switch (r) {
  case ncclSuccess:
    return "no error";
  case ncclInvalidArgument:
    return "invalid argument";
  case ncclInvalidUsage:
    return "invalid usage";
  case ncclSystemError:
    return "system error";
  default:
    return "internal error";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  std::memset(id, 0, sizeof *id);
  std::memcpy(id->internal, kMagic, sizeof kMagic);
  uint64_t nonce = std::random_device{}();
  std::memcpy(id->internal + 64, &nonce, sizeof nonce);
  // The maker's rank in the MPI job: the communicator's colour, distinct
  // for the groups made at once (each is made by its own rank 0).
  int32_t maker = 0;
#ifdef FERRY_HAVE_MPI
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised)
    MPI_Comm_rank(MPI_COMM_WORLD, &maker);
#endif
  std::memcpy(id->internal + 72, &maker, sizeof maker);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id,
                              int rank) {
  if (std::memcmp(id.internal, kMagic, sizeof kMagic) != 0)
    fail("ncclCommInitRank with a unique id that ncclGetUniqueId did not "
         "make (was it broadcast from rank 0?)");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    fail("ncclCommInitRank: rank " + std::to_string(rank) + " of " +
         std::to_string(nranks));
  auto *c = new ncclComm;
  c->rank = rank;
  c->nranks = nranks;
  c->id = id;
#ifdef FERRY_HAVE_MPI
  int initialised = 0;
  MPI_Initialized(&initialised);
  // Under MPI every communicator splits the job, one rank or many, so that
  // every rank takes part in every split.
  if (initialised) {
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (nranks > size)
      fail("ncclCommInitRank with " + std::to_string(nranks) +
           " ranks in an MPI job of " + std::to_string(size));
    int32_t maker = 0;
    std::memcpy(&maker, id.internal + 72, sizeof maker);
    MPI_Comm_split(MPI_COMM_WORLD, maker, rank, &c->mpi);
    int members = 0, position = 0;
    MPI_Comm_size(c->mpi, &members);
    MPI_Comm_rank(c->mpi, &position);
    if (members != nranks || position != rank)
      fail("ncclCommInitRank: " + std::to_string(members) +
           " ranks share this unique id (rank " + std::to_string(position) +
           " among them), but the call says rank " + std::to_string(rank) +
           " of " + std::to_string(nranks) +
           " (was the id broadcast within the group, and do all ranks "
           "create their communicators in the same order?)");
  } else if (nranks > 1) {
    fail("the simulated NCCL carries collectives over MPI, which is not "
         "initialised");
  }
#else
  if (nranks > 1)
    fail("the simulated NCCL needs MPI for more than one rank");
#endif
  *out = c;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  checkComm(comm, "ncclCommDestroy");
#ifdef FERRY_HAVE_MPI
  if (comm->mpi != MPI_COMM_NULL)
    MPI_Comm_free(&comm->mpi);
#endif
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  checkComm(comm, "ncclCommAbort");
  // Collectives still queued on streams hold the communicator, and the job
  // is being taken down: it is left allocated (a real abort frees it
  // asynchronously too).
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *error) {
  checkComm(comm, "ncclCommGetAsyncError");
  *error = ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  if (type != ncclFloat32 || (op != ncclSum && op != ncclMax))
    return ncclInvalidArgument;
  return enqueueCollective(comm, stream, "ncclAllReduce", send, count * 4,
                           recv, count * 4, [=] {
#ifdef FERRY_HAVE_MPI
    MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv,
                  static_cast<int>(count), MPI_FLOAT,
                  op == ncclMax ? MPI_MAX : MPI_SUM, comm->mpi);
#endif
  });
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count,
                               ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  if (type != ncclFloat32 || op != ncclSum)
    return ncclInvalidArgument;
  size_t ranks = comm ? static_cast<size_t>(comm->nranks) : 1;
  return enqueueCollective(comm, stream, "ncclReduceScatter", send,
                           ranks * count * 4, recv, count * 4, [=] {
#ifdef FERRY_HAVE_MPI
    MPI_Reduce_scatter_block(send, recv, static_cast<int>(count), MPI_FLOAT,
                             MPI_SUM, comm->mpi);
#endif
  });
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  if (type != ncclFloat32)
    return ncclInvalidArgument;
  size_t ranks = comm ? static_cast<size_t>(comm->nranks) : 1;
  return enqueueCollective(comm, stream, "ncclAllGather", send, count * 4,
                           recv, ranks * count * 4, [=] {
#ifdef FERRY_HAVE_MPI
    MPI_Allgather(send, static_cast<int>(count), MPI_FLOAT, recv,
                  static_cast<int>(count), MPI_FLOAT, comm->mpi);
#endif
  });
}
