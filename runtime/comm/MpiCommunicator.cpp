// The MPI implementation of Communicator: the CPU backend's collectives, and
// the bootstrap of NCCL on the CUDA backend (the ncclUniqueId travels by
// broadcast).
//
// Every collective is MPI's non-blocking form (MPI_Iallreduce, ...) waited
// on by polling, so that a wait can end: after timeoutSeconds() it throws
// CollectiveError, and while it waits it watches for a failure notice from
// another rank (a message on kFailureTag that every rank keeps a receive
// posted for). A rank that fails sends that notice to all the others, then
// takes the job down with MPI_Abort: the others print which rank failed and
// why instead of dying silently or waiting forever.
//
// Subgroups (split: the mesh's tensor- and data-parallel groups) run their
// collectives on communicators of their own and share the job's: notices
// travel, and the job is aborted, on one duplicate of MPI_COMM_WORLD, so a
// rank waiting in any group hears of a failure anywhere.
#include "runtime/comm/Communicator.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace ferry::comm {
namespace {

constexpr int kFailureTag = 7701;
constexpr int kNoticeBytes = 2048;

// What every group of one job shares: the job's own communicator (a
// duplicate of MPI_COMM_WORLD), on which failure notices travel and the job
// is aborted, and whether ferry started MPI (and so finalises it, once the
// last group is gone).
struct Job {
  MPI_Comm world = MPI_COMM_NULL;
  int rank = 0, size = 1, localRank = 0;
  // leaked: a group was destroyed with a collective still in flight, so
  // MPI_Finalize (which would wait for it) is skipped.
  bool ownsMpi = false, aborted = false, leaked = false;
  std::string notice;
  MPI_Request noticeRequest = MPI_REQUEST_NULL;

  Job() {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      int provided = 0;
      // Only the main thread calls MPI (the CPU backend's copy thread never
      // does).
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) !=
          MPI_SUCCESS)
        throw RuntimeError("MPI_Init_thread failed: the MPI launcher's "
                           "environment is broken; start ferry with mpirun "
                           "or srun as the docs show (docs/replicas.md)");
      ownsMpi = true;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    MPI_Comm node;
    MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                        &node);
    MPI_Comm_rank(node, &localRank);
    MPI_Comm_free(&node);
    notice.assign(kNoticeBytes, '\0');
    MPI_Irecv(notice.data(), kNoticeBytes, MPI_CHAR, MPI_ANY_SOURCE,
              kFailureTag, world, &noticeRequest);
  }
  ~Job() {
    if (aborted)
      return;
    if (noticeRequest != MPI_REQUEST_NULL) {
      MPI_Cancel(&noticeRequest);
      MPI_Request_free(&noticeRequest);
    }
    MPI_Comm_free(&world);
    if (ownsMpi && !leaked)
      MPI_Finalize();
  }
  Job(const Job &) = delete;
  Job &operator=(const Job &) = delete;
};

class MpiCommunicator : public Communicator {
public:
  // The group of `comm` (owned), in `job`; `name` is "" for the whole job.
  MpiCommunicator(std::shared_ptr<Job> job, MPI_Comm comm, std::string name)
      : job_(std::move(job)), comm_(comm), name_(std::move(name)) {
    // Errors come back as codes (and become RuntimeErrors) instead of
    // aborting inside MPI with a generic message.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm node;
    MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL,
                        &node);
    int nodeSize = 0;
    MPI_Comm_size(node, &nodeSize);
    onOneNode_ = nodeSize == size_;
    MPI_Comm_free(&node);
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string v(version, static_cast<size_t>(length));
    kind_ = "MPI (" + v.substr(0, v.find_first_of(",\n")) + ")";
  }

  ~MpiCommunicator() override {
    if (job_->aborted)
      return;
    // A collective abandoned by a throw (a timeout, another rank's failure)
    // may still be in flight: the communicator is freed only once it has
    // completed (Open MPI must not progress it on a freed communicator).
    // If it does not complete within a few seconds, the communicator is
    // left allocated and the job is not finalised (MPI_Finalize would wait
    // for it). ferry itself aborts the job on any collective error, so
    // this concerns tests that go on after one (Communicator.h).
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::duration<double>(
                     std::min(timeoutSeconds_, kAbandonedWaitSeconds));
    for (;;) {
      int done = 1;
      if (!abandoned_.empty())
        MPI_Testall(static_cast<int>(abandoned_.size()), abandoned_.data(),
                    &done, MPI_STATUSES_IGNORE);
      if (done) {
        MPI_Comm_free(&comm_);
        return;
      }
      if (std::chrono::steady_clock::now() > until) {
        job_->leaked = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  static constexpr double kAbandonedWaitSeconds = 5;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // The job's: it picks the GPU, whatever group this is.
  int localRank() const override { return job_->localRank; }
  std::string kind() const override { return kind_; }

  // MPI counts are ints: larger buffers go in pieces of kPiece elements
  // (bytes for gathers and broadcasts).
  static constexpr int64_t kPiece = int64_t{1} << 30;

  void allReduceSum(const float *in, float *out, int64_t count,
                    const std::string &what) override {
    allReduce(in, out, count, MPI_FLOAT, MPI_SUM, what);
  }
  void allReduceSum(const double *in, double *out, int64_t count,
                    const std::string &what) override {
    allReduce(in, out, count, MPI_DOUBLE, MPI_SUM, what);
  }
  void allReduceMax(const float *in, float *out, int64_t count,
                    const std::string &what) override {
    allReduce(in, out, count, MPI_FLOAT, MPI_MAX, what);
  }

  std::unique_ptr<Communicator> split(int color, int key,
                                      const std::string &name) override {
    MPI_Comm sub = MPI_COMM_NULL;
    check(MPI_Comm_split(comm_, color, key, &sub), "split into " + name);
    auto group = std::make_unique<MpiCommunicator>(job_, sub, name);
    group->setTimeoutSeconds(timeoutSeconds_);
    return group;
  }
  bool onOneNode() const override { return onOneNode_; }

  std::string prefix() const override {
    if (name_.empty())
      return Communicator::prefix();
    return fmt::format("rank {}/{} ({} {}/{}): ", job_->rank, job_->size, name_,
                       rank_, size_);
  }
  void reduceScatterSum(const float *in, float *out, int64_t count,
                        const std::string &what) override {
    if (count <= kPiece) {
      MPI_Request r;
      check(MPI_Ireduce_scatter_block(in, out, static_cast<int>(count),
                                      MPI_FLOAT, MPI_SUM, comm_, &r),
            what);
      wait(r, what);
      return;
    }
    // Piece by piece: each rank's part of the piece, gathered contiguous.
    // A member, so that a collective abandoned by a throw never writes
    // into freed memory.
    std::vector<float> &piece = floatPiece_;
    piece.resize(static_cast<size_t>(kPiece * size_));
    for (int64_t at = 0; at < count; at += kPiece) {
      int64_t n = std::min(kPiece, count - at);
      for (int r = 0; r < size_; ++r)
        std::copy_n(in + r * count + at, n, piece.begin() + r * n);
      MPI_Request q;
      check(MPI_Ireduce_scatter_block(piece.data(), out + at,
                                      static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                                      comm_, &q),
            what);
      wait(q, what);
    }
  }
  void allGather(const void *in, void *out, int64_t bytes,
                 const std::string &what) override {
    if (bytes <= kPiece) {
      MPI_Request r;
      check(MPI_Iallgather(in, static_cast<int>(bytes), MPI_BYTE, out,
                           static_cast<int>(bytes), MPI_BYTE, comm_, &r),
            what);
      wait(r, what);
      return;
    }
    std::vector<char> &piece = bytePiece_; // a member, as above
    piece.resize(static_cast<size_t>(kPiece * size_));
    auto *src = static_cast<const char *>(in);
    auto *dst = static_cast<char *>(out);
    for (int64_t at = 0; at < bytes; at += kPiece) {
      int64_t n = std::min(kPiece, bytes - at);
      MPI_Request q;
      check(MPI_Iallgather(src + at, static_cast<int>(n), MPI_BYTE,
                           piece.data(), static_cast<int>(n), MPI_BYTE, comm_,
                           &q),
            what);
      wait(q, what);
      for (int r = 0; r < size_; ++r)
        std::copy_n(piece.begin() + r * n, n, dst + r * bytes + at);
    }
  }
  void broadcast(void *data, int64_t bytes, int root,
                 const std::string &what) override {
    for (int64_t at = 0; at < bytes || at == 0; at += kPiece) {
      int64_t n = std::min(kPiece, bytes - at);
      MPI_Request r;
      check(MPI_Ibcast(static_cast<char *>(data) + at, static_cast<int>(n),
                       MPI_BYTE, root, comm_, &r),
            what);
      wait(r, what);
      if (bytes == 0)
        break;
    }
  }

  void notifyFailure(const std::string &message) override {
    std::string text = message.substr(0, kNoticeBytes - 1);
    std::vector<MPI_Request> sent;
    for (int r = 0; r < job_->size; ++r) {
      if (r == job_->rank)
        continue;
      MPI_Request q;
      if (MPI_Isend(text.c_str(), static_cast<int>(text.size() + 1), MPI_CHAR,
                    r, kFailureTag, job_->world, &q) == MPI_SUCCESS)
        sent.push_back(q);
    }
    // Long enough for ranks waiting in a collective to read it and print;
    // a rank that is computing reads it at its next collective, if MPI_Abort
    // has not ended it first.
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < until) {
      int done = 0;
      MPI_Testall(static_cast<int>(sent.size()), sent.data(), &done,
                  MPI_STATUSES_IGNORE);
      if (done)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }

  void checkFailures() override { checkNotice(); }

  void abortJob(int code) override {
    job_->aborted = true;
    MPI_Abort(job_->world, code);
  }

private:
  template <typename T>
  void allReduce(const T *in, T *out, int64_t count, MPI_Datatype type,
                 MPI_Op op, const std::string &what) {
    for (int64_t at = 0; at < count; at += kPiece) {
      int64_t n = std::min(kPiece, count - at);
      MPI_Request r;
      check(MPI_Iallreduce(in == out ? MPI_IN_PLACE : in + at, out + at,
                           static_cast<int>(n), type, op, comm_, &r),
            what);
      wait(r, what);
    }
  }

  void check(int code, const std::string &what) const {
    if (code == MPI_SUCCESS)
      return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw CollectiveError(fmt::format("{}MPI {} failed: {}", prefix(), what,
                                      std::string(text, length)));
  }

  // Polls `r` until it completes, a failure notice arrives or the timeout
  // passes. Spins briefly, then sleeps in growing steps up to 1 ms (polling
  // also drives Open MPI's progress).
  void wait(MPI_Request &r, const std::string &what) {
    auto start = std::chrono::steady_clock::now();
    int64_t polls = 0;
    for (;;) {
      int done = 0;
      check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), what);
      if (done)
        return;
      try {
        checkNotice();
      } catch (...) {
        abandoned_.push_back(r);
        throw;
      }
      double waited = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      if (waited > timeoutSeconds_) {
        abandoned_.push_back(r);
        throw CollectiveError(fmt::format(
            "{}{} did not complete within {:g} s "
            "(execution.collective_timeout_seconds): another rank is stalled "
            "or has died; look at the other ranks' messages, or raise the "
            "timeout if a step legitimately takes longer",
            prefix(), what, timeoutSeconds_));
      }
      if (++polls > 2000)
        std::this_thread::sleep_for(std::chrono::microseconds(
            std::min<int64_t>(1000, (polls - 2000) * 10)));
    }
  }

  void checkNotice() {
    if (job_->noticeRequest == MPI_REQUEST_NULL)
      return;
    int arrived = 0;
    MPI_Status status;
    MPI_Test(&job_->noticeRequest, &arrived, &status);
    if (!arrived)
      return;
    job_->noticeRequest = MPI_REQUEST_NULL;
    job_->notice.back() = '\0';
    throw PeerFailedError(fmt::format("{}stopping because rank {} failed: {}",
                                      prefix(), status.MPI_SOURCE,
                                      job_->notice.c_str()));
  }

  std::shared_ptr<Job> job_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::string name_;
  int rank_ = 0, size_ = 1;
  bool onOneNode_ = true;
  std::string kind_;
  std::vector<MPI_Request> abandoned_; // collectives left by a throw
  std::vector<float> floatPiece_;      // chunked collectives' staging
  std::vector<char> bytePiece_;
};

} // namespace

std::unique_ptr<Communicator> openMpi() {
  auto job = std::make_shared<Job>();
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(job->world, &comm);
  return std::make_unique<MpiCommunicator>(job, comm, "");
}

} // namespace ferry::comm
