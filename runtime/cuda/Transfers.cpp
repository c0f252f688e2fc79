// The CUDA backend's host-link copies (Transfers.h).
#include "runtime/cuda/Transfers.h"

#include "runtime/Error.h"
#include "runtime/cuda/Launch.h"

#include <fmt/format.h>

#include <utility>

namespace ferry::cuda {
namespace {

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw RuntimeError(
        fmt::format("CUDA {} failed: {}", what, cudaGetErrorString(e)));
}

// Event ids beside the executable's (>= 0): the compute stream's progress
// before a copy, and each copy event's mark on the other copy stream.
constexpr int64_t kComputeReady = -1;
int64_t otherDirection(int64_t id) { return -2 - id; }
constexpr int64_t kJoinLoads = INT64_MIN, kJoinStores = INT64_MIN + 1;

} // namespace

Transfers::Transfers(cudaStream_t compute) : compute_(compute) {
  // Non-blocking: work on the legacy default stream (a library's, or a
  // synchronous copy) never serialises them.
  for (cudaStream_t *stream : {&loads_, &stores_})
    check(cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking),
          "stream creation");
}

Transfers::~Transfers() {
  cudaDeviceSynchronize();
  for (auto &[id, e] : events_)
    cudaEventDestroy(e);
  for (const InFlight &t : inFlight_)
    cudaEventDestroy(t.done);
  for (cudaEvent_t e : pool_)
    cudaEventDestroy(e);
  cudaStreamDestroy(loads_);
  cudaStreamDestroy(stores_);
}

cudaEvent_t Transfers::event(int64_t id) {
  auto it = events_.find(id);
  if (it != events_.end())
    return it->second;
  cudaEvent_t e;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event creation");
  events_[id] = e;
  return e;
}

cudaEvent_t Transfers::pooled() {
  if (!pool_.empty()) {
    cudaEvent_t e = pool_.back();
    pool_.pop_back();
    return e;
  }
  cudaEvent_t e;
  check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event creation");
  return e;
}

void Transfers::record(int64_t id, cudaStream_t stream) {
  check(cudaEventRecord(event(id), stream), "event record");
  if (capturing_)
    captured_.insert(id);
}

// A load waits for every earlier store still in flight that touches the
// host bytes it reads or the device bytes it writes (a double buffer's half
// still being stored), a store for every earlier load that touches its
// bytes. Finished transfers are dropped first, so the list stays short
// (not while capturing: nothing of the capture has run, and CUDA forbids
// the query).
void Transfers::orderAfterOverlapping(char *h, char *d, int64_t bytes,
                                      bool store, cudaStream_t stream) {
  if (!capturing_) {
    size_t kept = 0;
    for (InFlight &t : inFlight_) {
      cudaError_t state = cudaEventQuery(t.done);
      if (state == cudaSuccess) {
        pool_.push_back(t.done);
        continue;
      }
      if (state != cudaErrorNotReady)
        check(state, "event query");
      // "Not ready" is an answer, not a failure, but the runtime records it
      // as the thread's last error: cleared here, as PyTorch does, so that
      // nothing later reads it as its own.
      (void)cudaGetLastError();
      inFlight_[kept++] = t;
    }
    inFlight_.resize(kept);
  }
  for (const InFlight &t : inFlight_)
    if (t.store != store && ((t.hostBegin < h + bytes && h < t.hostEnd) ||
                             (t.deviceBegin < d + bytes && d < t.deviceEnd)))
      check(cudaStreamWaitEvent(stream, t.done, 0), "stream wait");
}

void Transfers::copy(bool load, char *h, char *d, int64_t bytes, int64_t id,
                     KernelProfile *profile, uint16_t kernel) {
  // The copy may not start before the compute that produced (store) or
  // last read (load) its device bytes: its stream waits for the compute
  // stream up to here.
  cudaStream_t stream = load ? loads_ : stores_;
  record(kComputeReady, compute_);
  check(cudaStreamWaitEvent(stream, event(kComputeReady), 0), "stream wait");
  orderAfterOverlapping(h, d, bytes, !load, stream);
  if (profile)
    profile->before(kernel, load ? ProfileStream::Loads : ProfileStream::Stores,
                    stream);
  check(memcpyAsync(load ? d : h, load ? h : d, bytes,
                    load ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                    stream),
        "host-device copy");
  if (profile)
    profile->after(stream);
  record(id, stream);
  // `wait` on this event also covers every transfer issued before it in
  // the other direction, as the CPU's one FIFO queue does.
  record(otherDirection(id), load ? stores_ : loads_);
  cudaEvent_t done = pooled();
  check(cudaEventRecord(done, stream), "event record");
  inFlight_.push_back(InFlight{h, h + bytes, d, d + bytes, !load, done});
}

void Transfers::wait(int64_t id) {
  for (int64_t e : {id, otherDirection(id)}) {
    if (capturing_ && !captured_.count(e))
      continue; // finished before the program began (see Transfers.h)
    check(cudaStreamWaitEvent(compute_, event(e), 0), "stream wait");
  }
}

void Transfers::beginCapture() {
  // Every earlier run ended synchronised: its transfers are done.
  for (const InFlight &t : inFlight_)
    pool_.push_back(t.done);
  inFlight_.clear();
  capturing_ = true;
  captured_.clear();
  // The copy streams fork from the compute stream's capture.
  record(kComputeReady, compute_);
  for (cudaStream_t s : {loads_, stores_})
    check(cudaStreamWaitEvent(s, event(kComputeReady), 0), "stream wait");
}

void Transfers::endCapture() {
  // The copy streams rejoin the compute stream.
  record(kJoinLoads, loads_);
  record(kJoinStores, stores_);
  for (int64_t id : {kJoinLoads, kJoinStores})
    check(cudaStreamWaitEvent(compute_, event(id), 0), "stream wait");
  retireCaptured();
}

void Transfers::joinCapture() {
  if (!capturing_)
    return;
  // After a failure: the capture may be invalidated already, so a call
  // that fails here changes nothing the caller could act on.
  for (auto [id, stream] :
       {std::pair{kJoinLoads, loads_}, std::pair{kJoinStores, stores_}}) {
    cudaEvent_t e = nullptr;
    try {
      e = event(id);
    } catch (const RuntimeError &) {
      continue;
    }
    if (cudaEventRecord(e, stream) == cudaSuccess) {
      captured_.insert(id);
      (void)cudaStreamWaitEvent(compute_, e, 0);
    }
  }
  (void)cudaGetLastError();
}

void Transfers::abandonCapture() {
  if (capturing_)
    retireCaptured();
}

// Events last recorded in a capture cannot be queried or waited on outside
// it: destroyed, to be created again when next needed.
void Transfers::retireCaptured() {
  for (int64_t id : captured_) {
    auto it = events_.find(id);
    if (it != events_.end()) {
      cudaEventDestroy(it->second);
      events_.erase(it);
    }
  }
  for (const InFlight &t : inFlight_)
    cudaEventDestroy(t.done);
  inFlight_.clear();
  captured_.clear();
  capturing_ = false;
}

} // namespace ferry::cuda
