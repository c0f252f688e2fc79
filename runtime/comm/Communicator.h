// The replica group a run trains in: this process's rank, the group's size,
// and the collectives the runtime needs, in the spirit of IREE's HAL
// channel (iree/hal/drivers/cuda/nccl_channel). Implementations: one process
// (singleProcess), MPI (MpiCommunicator.cpp, for the CPU backend and to
// bootstrap NCCL), and NCCL on the CUDA backend's device buffers
// (runtime/cuda/NcclCommunicator).
//
// Collectives never hang: each waits at most timeoutSeconds() for the other
// ranks, and a rank that fails tells the others (notifyFailure) before it
// takes the job down, so every rank reports what happened and exits
// non-zero. `what` names the collective in those messages. A collective
// that throws may still be in flight: its buffers must stay valid until its
// group is destroyed or the job aborted (ferry aborts the job on any
// collective error).
#pragma once

#include "runtime/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ferry::comm {

// A collective that did not complete on time, or a failure another rank
// reported: the run cannot go on.
class CollectiveError : public RuntimeError {
public:
  using RuntimeError::RuntimeError;
};
// Another rank failed and said so (its message is in this one's).
class PeerFailedError : public CollectiveError {
public:
  using CollectiveError::CollectiveError;
};

class Communicator {
public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank among the job's processes on this machine (picks the GPU), for a
  // subgroup too.
  virtual int localRank() const = 0;
  // "single process", "MPI (Open MPI v4.1.4)".
  virtual std::string kind() const = 0;

  // out[i] = sum over ranks of in[i]; `in` may equal `out`.
  virtual void allReduceSum(const float *in, float *out, int64_t count,
                            const std::string &what) = 0;
  virtual void allReduceSum(const double *in, double *out, int64_t count,
                            const std::string &what) = 0;
  // out[i] = max over ranks of in[i]; `in` may equal `out` (the row maxima
  // of a cross-entropy whose classes are split over the group).
  virtual void allReduceMax(const float *in, float *out, int64_t count,
                            const std::string &what) = 0;
  // out[i] = sum over ranks r of in_r[rank() * count + i]: `in` holds
  // size() * count elements, `out` count.
  virtual void reduceScatterSum(const float *in, float *out, int64_t count,
                                const std::string &what) = 0;
  // out[r * bytes ...] = rank r's `bytes` bytes of `in`, for every rank.
  virtual void allGather(const void *in, void *out, int64_t bytes,
                         const std::string &what) = 0;
  // Rank `root`'s bytes to every rank.
  virtual void broadcast(void *data, int64_t bytes, int root,
                         const std::string &what) = 0;

  // The ranks of this group that pass the same `color`, ordered by `key`,
  // as a group of their own (MPI_Comm_split): every rank of this group calls
  // it, in the same order. The subgroup shares this group's failure notices
  // and abort (a failure anywhere in the job reaches a rank waiting in the
  // subgroup's collective) and starts with its timeout; `name` ("tensor",
  // "data") says which group it is in its messages.
  virtual std::unique_ptr<Communicator> split(int color, int key,
                                              const std::string &name) = 0;
  // Whether every rank of this group runs on this process's machine.
  virtual bool onOneNode() const = 0;

  // After an error on this rank: tells every other rank (they throw
  // CollectiveError naming this rank and `message` from their next or
  // current collective) and gives them a moment to say so.
  virtual void notifyFailure(const std::string &message) = 0;
  // Throws CollectiveError when another rank's failure notice has arrived
  // (for waits outside this class: the CUDA backend's NCCL calls).
  virtual void checkFailures() {}
  // Ends every rank of the job with `code` (MPI_Abort); returns only for a
  // single process.
  virtual void abortJob(int code) = 0;

  double timeoutSeconds() const { return timeoutSeconds_; }
  void setTimeoutSeconds(double s) { timeoutSeconds_ = s; }

  // "rank 1/4: " for messages of a multi-rank run, "" for one process; a
  // subgroup names the job's rank and its own: "rank 3/4 (tensor 1/2): ".
  virtual std::string prefix() const;

protected:
  double timeoutSeconds_ = 300;
};

// A group of one: every collective is a copy.
std::unique_ptr<Communicator> singleProcess();

// How this process was started: by mpirun/mpiexec or Slurm's srun (the
// launcher's environment says so), or directly.
struct Launch {
  bool underLauncher = false;
  std::string launcher; // "mpirun (Open MPI)", "srun (Slurm)", ""
  int worldSize = 1;    // what the launcher's environment says
};
Launch detectLaunch();

// The group this process belongs to: MPI when started by a launcher (and
// ferry was built with MPI), one process otherwise. Throws RuntimeError
// when a launcher started several processes and this build has no MPI.
std::unique_ptr<Communicator> openReplicaGroup();

// Every rank's `value` (one line of text each), rank 0 first.
std::vector<std::string> gatherText(Communicator &comm,
                                    const std::string &value,
                                    const std::string &what);

} // namespace ferry::comm
