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
#include "runtime/comm/Communicator.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace ferry::comm {
namespace {

constexpr int kFailureTag = 7701;
constexpr int kNoticeBytes = 2048;

class MpiCommunicator : public Communicator {
public:
  MpiCommunicator() {
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
      ownsMpi_ = true;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    // Errors come back as codes (and become RuntimeErrors) instead of
    // aborting inside MPI with a generic message.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm node;
    MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL,
                        &node);
    MPI_Comm_rank(node, &localRank_);
    MPI_Comm_free(&node);
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string v(version, static_cast<size_t>(length));
    kind_ = "MPI (" + v.substr(0, v.find_first_of(",\n")) + ")";
    notice_.assign(kNoticeBytes, '\0');
    MPI_Irecv(notice_.data(), kNoticeBytes, MPI_CHAR, MPI_ANY_SOURCE,
              kFailureTag, comm_, &noticeRequest_);
  }

  ~MpiCommunicator() override {
    if (aborted_)
      return;
    if (noticeRequest_ != MPI_REQUEST_NULL) {
      MPI_Cancel(&noticeRequest_);
      MPI_Request_free(&noticeRequest_);
    }
    MPI_Comm_free(&comm_);
    if (ownsMpi_)
      MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const override { return localRank_; }
  std::string kind() const override { return kind_; }

  // MPI counts are ints: larger buffers go in pieces of kPiece elements
  // (bytes for gathers and broadcasts).
  static constexpr int64_t kPiece = int64_t{1} << 30;

  void allReduceSum(const float *in, float *out, int64_t count,
                    const std::string &what) override {
    allReduce(in, out, count, MPI_FLOAT, what);
  }
  void allReduceSum(const double *in, double *out, int64_t count,
                    const std::string &what) override {
    allReduce(in, out, count, MPI_DOUBLE, what);
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
    std::vector<float> piece(static_cast<size_t>(kPiece * size_));
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
    std::vector<char> piece(static_cast<size_t>(kPiece * size_));
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
    for (int r = 0; r < size_; ++r) {
      if (r == rank_)
        continue;
      MPI_Request q;
      if (MPI_Isend(text.c_str(), static_cast<int>(text.size() + 1), MPI_CHAR,
                    r, kFailureTag, comm_, &q) == MPI_SUCCESS)
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
    aborted_ = true;
    MPI_Abort(comm_, code);
  }

private:
  template <typename T>
  void allReduce(const T *in, T *out, int64_t count, MPI_Datatype type,
                 const std::string &what) {
    for (int64_t at = 0; at < count; at += kPiece) {
      int64_t n = std::min(kPiece, count - at);
      MPI_Request r;
      check(MPI_Iallreduce(in == out ? MPI_IN_PLACE : in + at, out + at,
                           static_cast<int>(n), type, MPI_SUM, comm_, &r),
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
      checkNotice();
      double waited = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      if (waited > timeoutSeconds_)
        throw CollectiveError(fmt::format(
            "{}{} did not complete within {:g} s "
            "(execution.collective_timeout_seconds): another rank is stalled "
            "or has died; look at the other ranks' messages, or raise the "
            "timeout if a step legitimately takes longer",
            prefix(), what, timeoutSeconds_));
      if (++polls > 2000)
        std::this_thread::sleep_for(std::chrono::microseconds(
            std::min<int64_t>(1000, (polls - 2000) * 10)));
    }
  }

  void checkNotice() {
    if (noticeRequest_ == MPI_REQUEST_NULL)
      return;
    int arrived = 0;
    MPI_Status status;
    MPI_Test(&noticeRequest_, &arrived, &status);
    if (!arrived)
      return;
    noticeRequest_ = MPI_REQUEST_NULL;
    notice_.back() = '\0';
    throw PeerFailedError(fmt::format(
        "{}stopping because rank {} failed: {}", prefix(), status.MPI_SOURCE,
        notice_.c_str()));
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, localRank_ = 0;
  bool ownsMpi_ = false, aborted_ = false;
  std::string kind_;
  std::string notice_;
  MPI_Request noticeRequest_ = MPI_REQUEST_NULL;
};

} // namespace

std::unique_ptr<Communicator> openMpi() {
  return std::make_unique<MpiCommunicator>();
}

} // namespace ferry::comm
