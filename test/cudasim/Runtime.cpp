// ferry's CUDA simulator: the CUDA runtime API ferry calls (cuda_runtime.h),
// on the CPU. Device memory comes from the host heap, filled with 0xFF bytes
// (NaN as floats, -1 as integers) so that reads of memory nobody wrote show;
// under AddressSanitizer an access outside an allocation is reported.
// Streams are queues of work; nothing runs when it is queued. The device
// runs queued work when the host waits for it (synchronisation, a
// synchronous copy) and, a seeded few steps at a time, whenever the host
// calls the runtime, choosing among the streams whose next work is ready
// (its stream's earlier work done, its event waits satisfied) in a seeded
// order. A missing wait then shows as a wrong result under some seed.
#include "Sim.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <vector>

struct CUmemPoolHandle_st {
  int unused;
};

namespace cudasim {
namespace {

thread_local cudaError_t tLastError = cudaSuccess;
thread_local std::string tNextLaunchName;

struct Device {
  CUstream_st legacy;
  std::vector<CUstream_st *> streams; // in creation order (reproducible)
  std::set<CUevent_st *> events;
  std::map<uintptr_t, Allocation> allocations; // by base address
  CUmemPoolHandle_st pool{};
  int nvtxDepth = 0;
  Device() {
    legacy.legacy = true;
    streams.push_back(&legacy);
  }
};

Device &device() {
  static Device d;
  return d;
}


// Runs one piece of ready work, chosen with the seed; false if none is ready.
bool step() {
  std::vector<CUstream_st *> ready;
  for (CUstream_st *s : device().streams) {
    if (s->queue.empty())
      continue;
    bool ok = true;
    for (const auto &flag : s->queue.front().after)
      ok = ok && *flag;
    if (ok)
      ready.push_back(s);
  }
  if (ready.empty())
    return false;
  CUstream_st *s = ready[rng()() % ready.size()];
  Work work = std::move(s->queue.front());
  s->queue.pop_front();
  work.run();
  *work.done = true;
  if (s->destroyed && s->queue.empty()) { // released once its work is done
    auto &all = device().streams;
    all.erase(std::find(all.begin(), all.end(), s));
    delete s;
  }
  return true;
}

// The host has seen all the stream's work so far finish.
void observe(CUstream_st *s) { s->observed = s->issued; }

bool idle() {
  for (CUstream_st *s : device().streams)
    if (!s->queue.empty())
      return false;
  return true;
}

template <typename Done> void runUntil(Done done, const char *what) {
  while (!done()) {
    if (!step())
      fail(std::string("deadlock: ") + what +
           " waits for work that can never run");
  }
}

// The device moves on a little while the host calls the runtime (one
// piece of work at a quarter of the calls): the host mostly runs ahead, as
// on a GPU, but not always by the same amount.
void progress() {
  if (rng()() % 4 == 0)
    step();
}

uintptr_t address(const void *p) { return reinterpret_cast<uintptr_t>(p); }

#if defined(__SANITIZE_ADDRESS__)
void poison(void *p, size_t bytes, bool on) {
  if (on)
    __asan_poison_memory_region(p, bytes);
  else
    __asan_unpoison_memory_region(p, bytes);
}
#else
void poison(void *, size_t, bool) {}
#endif

// CUDA's allocation routines return addresses aligned to at least 256
// bytes (CUDA C++ Programming Guide, "Device Memory Accesses"); ASan still
// knows the exact size, so a read one past the end is reported.
char *allocate(size_t bytes, Allocation::Kind kind) {
  void *raw = nullptr;
  if (posix_memalign(&raw, 256, bytes ? bytes : 1) != 0)
    return nullptr;
  char *p = static_cast<char *>(raw);
  std::memset(p, 0xff, bytes);
  device().allocations[address(p)] = Allocation{p, bytes, kind};
  return p;
}

void release(void *p, Allocation::Kind kind, const char *what) {
  auto it = device().allocations.find(address(p));
  if (it == device().allocations.end() || it->second.kind != kind)
    fail(std::string(what) + " of a pointer that is not the start of a " +
         (kind == Allocation::Device ? "device" : "pinned host") +
         " allocation");
  poison(p, it->second.bytes, false);
  device().allocations.erase(it);
  std::free(p);
}

void syncAll() {
  runUntil(idle, "device synchronisation");
  for (CUstream_st *s : device().streams)
    observe(s);
}

bool overlap(const void *dst, const void *src, size_t bytes) {
  auto d = static_cast<const char *>(dst), t = static_cast<const char *>(src);
  return d != t && t < d + bytes && d < t + bytes;
}

// Where a copy's side lies: device memory, pinned host or pageable host.
enum class Side { Device, Pinned, Pageable };
Side sideOf(const void *p, size_t bytes, const char *what) {
  if (const Allocation *a = findAllocation(p, bytes))
    return a->kind == Allocation::Device ? Side::Device : Side::Pinned;
  // Partly inside a device allocation: out of bounds.
  auto &all = device().allocations;
  auto it = all.upper_bound(address(p));
  if (it != all.begin()) {
    --it;
    if (address(p) < it->first + it->second.bytes)
      fail(std::string(what) + ": " + std::to_string(bytes) +
           " bytes at an offset of " + std::to_string(address(p) - it->first) +
           " run past the end of a " + std::to_string(it->second.bytes) +
           "-byte allocation");
  }
  return Side::Pageable;
}

// A synchronous copy on the legacy stream, with the host synchronisation
// the CUDA Runtime API documents ("API synchronization behavior"): from
// pageable host memory to the device, the host waits for the stream's
// earlier work, stages the source and returns before the copy reaches the
// device; from pinned memory to the device, and from the device to the
// host, it returns when the copy is done; device to device, at once.
// The callers say where each side lies (symbols are device memory that the
// simulator keeps in host variables).
void legacyCopy(void *dst, const void *src, size_t bytes, const char *what,
                Side from, Side to) {
  if (to == Side::Device && from == Side::Pageable) {
    std::shared_ptr<bool> before = device().legacy.lastDone;
    if (before)
      runUntil([&] { return *before; }, what);
    observe(&device().legacy);
    auto staged = std::make_shared<std::vector<char>>(
        static_cast<const char *>(src), static_cast<const char *>(src) + bytes);
    enqueue(nullptr, what, [=] { std::memcpy(dst, staged->data(), bytes); });
    return;
  }
  enqueue(nullptr, what, [=] { std::memcpy(dst, src, bytes); });
  if (from == Side::Device && to == Side::Device)
    return;
  std::shared_ptr<bool> done = device().legacy.lastDone;
  runUntil([&] { return *done; }, what);
  observe(&device().legacy);
}

// Checks a copy's direction and memory; returns the sides {from, to}.
std::pair<Side, Side> checkCopy(void *dst, const void *src, size_t bytes,
                                cudaMemcpyKind kind, bool async) {
  Side d = sideOf(dst, bytes, "copy destination");
  Side s = sideOf(src, bytes, "copy source");
  auto name = [](Side x) {
    return x == Side::Device   ? "device"
           : x == Side::Pinned ? "pinned host"
                               : "pageable host";
  };
  bool dstDevice = d == Side::Device, srcDevice = s == Side::Device;
  bool wantDst =
      kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  bool wantSrc =
      kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind != cudaMemcpyDefault &&
      (dstDevice != wantDst || srcDevice != wantSrc))
    fail("a copy of kind " + std::to_string(kind) + " from " + name(s) +
         " memory to " + name(d) + " memory (the kind does not match)");
  if (async && (s == Side::Pageable || d == Side::Pageable) &&
      (srcDevice || dstDevice))
    fail(
        std::string("an asynchronous copy between the device and pageable ") +
        "host memory: ferry promises pinned memory (cudaHostAlloc) for every " +
        "asynchronous copy, which can only overlap compute from pinned memory");
  return {s, d};
}

} // namespace

cudaError_t result(cudaError_t e) {
  if (e != cudaSuccess)
    tLastError = e;
  return e;
}

CUstream_st *streamOf(cudaStream_t s) { return s ? s : &device().legacy; }

bool knownStream(cudaStream_t s) {
  auto &all = device().streams;
  return !s ||
         (std::find(all.begin(), all.end(), s) != all.end() && !s->destroyed);
}

bool knownEvent(cudaEvent_t e) { return e && device().events.count(e); }

std::vector<CUstream_st *> &allStreams() { return device().streams; }

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "ferry cuda-sim: error: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

Random &rng() {
  static Random engine{[] {
    const char *seed = std::getenv("FERRY_CUDA_SIM_SEED");
    return seed ? std::strtoull(seed, nullptr, 10) : 1ull;
  }()};
  return engine;
}

const Allocation *findAllocation(const void *p, size_t bytes) {
  auto &all = device().allocations;
  auto it = all.upper_bound(address(p));
  if (it == all.begin())
    return nullptr;
  --it;
  uintptr_t begin = address(p);
  if (begin >= it->first && begin + bytes <= it->first + it->second.bytes)
    return &it->second;
  return nullptr;
}

void requireDevice(const void *p, size_t bytes, const char *what) {
  const Allocation *a = findAllocation(p, bytes);
  if (!a || a->kind != Allocation::Device)
    fail(std::string(what) + ": " + std::to_string(bytes) +
         " bytes that are not all in one device allocation");
}

void enqueue(cudaStream_t stream, const char *what, std::function<void()> run,
             std::shared_ptr<bool> alsoAfter) {
  std::vector<std::shared_ptr<bool>> after;
  if (alsoAfter)
    after.push_back(std::move(alsoAfter));
  enqueue(stream, what, std::move(run), std::move(after));
}

void enqueue(cudaStream_t stream, const char *what, std::function<void()> run,
             std::vector<std::shared_ptr<bool>> alsoAfter) {
  CUstream_st *s = streamOf(stream);
  if (s->capture) { // recorded into the graph, not run
    if (!alsoAfter.empty())
      fail(std::string(what) + " with a completion flag under stream " +
           "capture is not simulated");
    captureWork(s, what, std::move(run));
    return;
  }
  // ferry's programs run on non-blocking streams, which the legacy stream
  // does not order: work on one after work on the other that the host has
  // not seen finish (whether or not the simulator happened to run it yet)
  // is a race ferry never means: a forgotten stream argument, or a
  // synchronous copy that returns before its bytes arrive.
  if (s->legacy)
    for (CUstream_st *other : device().streams)
      if (!other->blocking && other->observed < other->issued)
        fail(std::string(what) + " on the legacy default stream after work " +
             "on a non-blocking stream that the host has not waited for: " +
             "the two are not ordered (pass the stream, or synchronise "
             "first)");
  if (!s->blocking && device().legacy.observed < device().legacy.issued)
    fail(std::string(what) + " on a non-blocking stream after work on the " +
         "legacy default stream that the host has not waited for: the two " +
         "are not ordered (synchronise after the legacy stream's work)");
  ++s->issued;
  Work work;
  work.what = what;
  work.run = std::move(run);
  work.after = std::move(alsoAfter);
  if (!s->queue.empty())
    work.after.push_back(s->lastDone);
  // The legacy default stream waits for, and is waited for by, every
  // blocking stream (cudaStreamNonBlocking streams opt out).
  for (CUstream_st *other : device().streams) {
    if (other == s || !other->lastDone || *other->lastDone)
      continue;
    if ((s->legacy && other->blocking) || (other->legacy && s->blocking))
      work.after.push_back(other->lastDone);
  }
  s->lastDone = work.done;
  s->queue.push_back(std::move(work));
  progress();
}

} // namespace cudasim

using namespace cudasim;

const char *cudaGetErrorName(cudaError_t e) {
  switch (e) {
  case cudaSuccess:
    return "cudaSuccess";
  case cudaErrorInvalidValue:
    return "cudaErrorInvalidValue";
  case cudaErrorMemoryAllocation:
    return "cudaErrorMemoryAllocation";
  case cudaErrorInvalidConfiguration:
    return "cudaErrorInvalidConfiguration";
  case cudaErrorInvalidResourceHandle:
    return "cudaErrorInvalidResourceHandle";
  case cudaErrorNotReady:
    return "cudaErrorNotReady";
  case cudaErrorNoDevice:
    return "cudaErrorNoDevice";
  case cudaErrorInvalidDevice:
    return "cudaErrorInvalidDevice";
  case cudaErrorStreamCaptureUnsupported:
    return "cudaErrorStreamCaptureUnsupported";
  case cudaErrorStreamCaptureUnjoined:
    return "cudaErrorStreamCaptureUnjoined";
  case cudaErrorStreamCaptureIsolation:
    return "cudaErrorStreamCaptureIsolation";
  case cudaErrorCapturedEvent:
    return "cudaErrorCapturedEvent";
  default:
    return "cudaErrorUnknown";
  }
}

const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
  case cudaSuccess:
    return "no error";
  case cudaErrorInvalidValue:
    return "invalid argument";
  case cudaErrorMemoryAllocation:
    return "out of memory";
  case cudaErrorInvalidConfiguration:
    return "invalid configuration argument";
  case cudaErrorInvalidResourceHandle:
    return "invalid resource handle";
  case cudaErrorNotReady:
    return "device not ready";
  case cudaErrorNoDevice:
    return "no CUDA-capable device is detected";
  case cudaErrorInvalidDevice:
    return "invalid device ordinal";
  case cudaErrorStreamCaptureUnsupported:
    return "operation not permitted when stream is capturing";
  case cudaErrorStreamCaptureUnjoined:
    return "capture sequence contains a fork that was not joined to the "
           "primary stream";
  case cudaErrorStreamCaptureIsolation:
    return "dependency created on uncaptured work in another stream";
  case cudaErrorCapturedEvent:
    return "operation not permitted on an event last recorded in a "
           "capturing stream";
  default:
    return "unknown error";
  }
}

cudaError_t cudaGetLastError() {
  cudaError_t e = tLastError;
  tLastError = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return tLastError; }

cudaError_t cudaGetDeviceCount(int *count) {
  if (!count)
    return result(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d) {
  if (!d)
    return result(cudaErrorInvalidValue);
  *d = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) {
  return d == 0 ? cudaSuccess : result(cudaErrorInvalidDevice);
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int d) {
  if (!prop)
    return result(cudaErrorInvalidValue);
  if (d != 0)
    return result(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "ferry CUDA simulator");
  prop->totalGlobalMem = size_t(80) << 30;
  prop->sharedMemPerBlock = 48 << 10;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 2147483647;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  refuseDuringCapture("cudaDeviceSynchronize");
  syncAll();
  return cudaSuccess;
}
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int d) {
  if (!pool || d != 0)
    return result(cudaErrorInvalidValue);
  *pool = &device().pool;
  return cudaSuccess;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr,
                                    void *value) {
  if (pool != &device().pool || !value)
    return result(cudaErrorInvalidValue);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes) {
  refuseDuringCapture("cudaMalloc");
  if (!p)
    return result(cudaErrorInvalidValue);
  *p = allocate(bytes, Allocation::Device);
  return *p ? cudaSuccess : result(cudaErrorMemoryAllocation);
}
cudaError_t cudaFree(void *p) {
  refuseDuringCapture("cudaFree");
  if (!p)
    return cudaSuccess;
  syncAll(); // cudaFree synchronises the device
  release(p, Allocation::Device, "cudaFree");
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int) {
  refuseDuringCapture("cudaHostAlloc");
  if (!p)
    return result(cudaErrorInvalidValue);
  *p = allocate(bytes, Allocation::Pinned);
  return *p ? cudaSuccess : result(cudaErrorMemoryAllocation);
}
cudaError_t cudaMallocHost(void **p, size_t bytes) {
  return cudaHostAlloc(p, bytes, 0);
}
cudaError_t cudaFreeHost(void *p) {
  refuseDuringCapture("cudaFreeHost");
  if (!p)
    return cudaSuccess;
  syncAll();
  release(p, Allocation::Pinned, "cudaFreeHost");
  return cudaSuccess;
}
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s) {
  refuseDuringCapture("cudaMallocAsync");
  if (!p || !knownStream(s))
    return result(cudaErrorInvalidValue);
  // The memory exists at once, but only work ordered after this call on
  // the stream may touch it: poisoned for ASan until the stream gets here.
  // Its contents are undefined (0xFF here).
  char *memory = allocate(bytes, Allocation::Device);
  if (!memory)
    return result(cudaErrorMemoryAllocation);
  poison(memory, bytes, true);
  enqueue(s, "cudaMallocAsync",
          [memory, bytes] { poison(memory, bytes, false); });
  *p = memory;
  return cudaSuccess;
}
cudaError_t cudaFreeAsync(void *p, cudaStream_t s) {
  refuseDuringCapture("cudaFreeAsync");
  if (!knownStream(s))
    return result(cudaErrorInvalidResourceHandle);
  if (!findAllocation(p, 1))
    fail("cudaFreeAsync of a pointer that is not a device allocation");
  // Freed (and poisoned for ASan) when the stream reaches it: work not
  // ordered before it that touches the memory is a use after free.
  enqueue(s, "cudaFreeAsync",
          [p] { release(p, Allocation::Device, "cudaFreeAsync"); });
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                       cudaMemcpyKind kind) {
  refuseDuringCapture("cudaMemcpy");
  if (bytes == 0)
    return cudaSuccess;
  auto [from, to] = checkCopy(dst, src, bytes, kind, false);
  if (overlap(dst, src, bytes))
    fail("cudaMemcpy between overlapping ranges (undefined)");
  legacyCopy(dst, src, bytes, "cudaMemcpy", from, to);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t s) {
  if (!knownStream(s))
    return result(cudaErrorInvalidResourceHandle);
  if (bytes == 0)
    return cudaSuccess;
  checkCopy(dst, src, bytes, kind, true);
  if (overlap(dst, src, bytes))
    fail("cudaMemcpyAsync between overlapping ranges (undefined)");
  enqueue(s, "cudaMemcpyAsync", [=] { std::memcpy(dst, src, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int value, size_t bytes) {
  refuseDuringCapture("cudaMemset");
  return cudaMemsetAsync(p, value, bytes, nullptr);
}
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s) {
  if (!knownStream(s))
    return result(cudaErrorInvalidResourceHandle);
  if (bytes == 0)
    return cudaSuccess;
  requireDevice(p, bytes, "cudaMemset");
  enqueue(s, "cudaMemset", [=] { std::memset(p, value, bytes); });
  return cudaSuccess;
}
cudaError_t cudaSimCopySymbol(void *dst, const void *src, size_t bytes,
                              bool toDevice) {
  refuseDuringCapture("a copy to or from a __device__ variable");
  if (bytes == ~size_t(0))
    return result(cudaErrorInvalidValue);
  if (toDevice)
    legacyCopy(dst, src, bytes, "cudaMemcpyToSymbol", Side::Pageable,
               Side::Device);
  else
    legacyCopy(dst, src, bytes, "cudaMemcpyFromSymbol", Side::Device,
               Side::Pageable);
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s) {
  return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
  if (!s)
    return result(cudaErrorInvalidValue);
  auto *stream = new CUstream_st;
  stream->blocking = !(flags & cudaStreamNonBlocking);
  device().streams.push_back(stream);
  *s = stream;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  refuseDuringCapture("cudaStreamDestroy");
  if (!s || !knownStream(s))
    return result(cudaErrorInvalidResourceHandle);
  // Returns at once; work already queued still completes and the stream
  // is released after it (as documented).
  if (!s->queue.empty()) {
    s->destroyed = true;
    return cudaSuccess;
  }
  auto &all = device().streams;
  all.erase(std::find(all.begin(), all.end(), s));
  delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  refuseDuringCapture("cudaStreamSynchronize");
  if (!knownStream(s))
    return result(cudaErrorInvalidResourceHandle);
  CUstream_st *stream = streamOf(s);
  // The legacy stream's work also waits for the blocking streams' (not
  // the non-blocking ones').
  std::vector<std::shared_ptr<bool>> waits;
  for (CUstream_st *other : device().streams)
    if ((other == stream || (stream->legacy && other->blocking)) &&
        other->lastDone)
      waits.push_back(other->lastDone);
  runUntil(
      [&] {
        for (const auto &flag : waits)
          if (!*flag)
            return false;
        return true;
      },
      "cudaStreamSynchronize");
  for (CUstream_st *other : device().streams)
    if (other == stream || (stream->legacy && other->blocking))
      observe(other);
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
  refuseDuringCapture("cudaStreamQuery");
  if (!knownStream(s))
    return result(cudaErrorInvalidResourceHandle);
  progress();
  return streamOf(s)->queue.empty() ? cudaSuccess : result(cudaErrorNotReady);
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  if (!knownStream(s) || !e || !device().events.count(e))
    return result(cudaErrorInvalidResourceHandle);
  cudaError_t status = cudaSuccess;
  if (captureWait(streamOf(s), e, status))
    return status;
  // Waits for the event's most recent record at the time of this call; an
  // event never recorded is no wait at all.
  enqueue(
      s, "cudaStreamWaitEvent", [] {}, e->recorded);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e) {
  return cudaEventCreateWithFlags(e, cudaEventDefault);
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) {
  if (!e)
    return result(cudaErrorInvalidValue);
  *e = new CUevent_st;
  (*e)->timing = (flags & cudaEventDisableTiming) == 0;
  device().events.insert(*e);
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  if (!e || !device().events.erase(e))
    return result(cudaErrorInvalidResourceHandle);
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (!e || !device().events.count(e) || !knownStream(s))
    return result(cudaErrorInvalidResourceHandle);
  if (streamOf(s)->capture) { // what the capture holds so far, no timestamp
    captureRecord(e, streamOf(s));
    return cudaSuccess;
  }
  e->capture = nullptr;
  e->nodes.clear();
  // The timestamp: the host's clock when the simulated device reaches the
  // record, so intervals measure the simulated work between two records.
  auto time = std::make_shared<double>(0.0);
  enqueue(s, "cudaEventRecord", [time] {
    *time = std::chrono::duration<double>(
                std::chrono::steady_clock::now().time_since_epoch())
                .count();
  });
  e->recorded = streamOf(s)->lastDone;
  e->time = time;
  return cudaSuccess;
}
// As documented: both events recorded and complete, neither created with
// cudaEventDisableTiming (else an invalid handle), "not ready" while either
// is pending.
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
                                 cudaEvent_t end) {
  if (!ms)
    return result(cudaErrorInvalidValue);
  for (cudaEvent_t e : {start, end})
    if (!e || !device().events.count(e) || !e->timing || !e->recorded)
      return result(cudaErrorInvalidResourceHandle);
    else if (e->capture)
      return result(cudaErrorCapturedEvent);
  progress();
  if (!*start->recorded || !*end->recorded)
    return result(cudaErrorNotReady);
  *ms = static_cast<float>(1e3 * (*end->time - *start->time));
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  refuseDuringCapture("cudaEventQuery");
  if (!e || !device().events.count(e))
    return result(cudaErrorInvalidResourceHandle);
  if (e->capture) // its last record was a capture's, not work that runs
    return result(cudaErrorCapturedEvent);
  progress();
  // "Not ready" is returned as an error, and recorded as the thread's last
  // error like every other (PyTorch clears it after each query for this).
  return !e->recorded || *e->recorded ? cudaSuccess : result(cudaErrorNotReady);
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  refuseDuringCapture("cudaEventSynchronize");
  if (!e || !device().events.count(e))
    return result(cudaErrorInvalidResourceHandle);
  if (e->capture)
    return result(cudaErrorCapturedEvent);
  std::shared_ptr<bool> recorded = e->recorded;
  if (recorded)
    runUntil([&] { return *recorded; }, "cudaEventSynchronize");
  return cudaSuccess;
}

void cudaSimNameNextLaunch(const char *name) { tNextLaunchName = name; }

namespace {
bool gFailCapturedLaunches = false;
}
void cudaSimFailCapturedLaunches(bool on) { gFailCapturedLaunches = on; }

cudaError_t cudaSimLaunch(const cudaLaunchConfig_t &config,
                          const std::vector<const void *> &pointers,
                          std::function<void()> body) {
  std::string name = tNextLaunchName.empty() ? "(unnamed)" : tNextLaunchName;
  tNextLaunchName.clear();
  // Pointer arguments must point into memory the device can reach: a
  // device allocation or pinned host memory (mapped under unified
  // addressing), up to one past its end; null is a kernel's "absent".
  for (size_t i = 0; i < pointers.size(); ++i) {
    const void *p = pointers[i];
    if (!p)
      continue;
    auto &all = device().allocations;
    auto it = all.upper_bound(address(p));
    bool inside = false;
    if (it != all.begin()) {
      --it;
      inside = address(p) <= it->first + it->second.bytes;
    }
    if (!inside)
      fail("kernel " + name + ": pointer argument " + std::to_string(i) +
           " is not in device memory or pinned host memory (a host "
           "pointer, or memory already freed)");
  }
  const dim3 &g = config.gridDim, &b = config.blockDim;
  // The hardware's limits (compute capability 9.0): an invalid
  // configuration is returned, not run.
  uint64_t threads = uint64_t(b.x) * b.y * b.z;
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 2147483647u || g.y > 65535 ||
      g.z > 65535 || b.x == 0 || b.y == 0 || b.z == 0 || b.x > 1024 ||
      b.y > 1024 || b.z > 64 || threads > 1024)
    return result(cudaErrorInvalidConfiguration);
  if (config.dynamicSmemBytes > (48u << 10))
    return result(cudaErrorInvalidValue); // no opt-in attribute is set
  if (!knownStream(config.stream))
    return result(cudaErrorInvalidResourceHandle);
  if (gFailCapturedLaunches && streamOf(config.stream)->capture)
    return result(cudaErrorStreamCaptureUnsupported);
  if (config.dynamicSmemBytes > 0) // extern __shared__ has no stand-in
    fail("kernel " + name + ": dynamic shared memory is not simulated (no " +
         "ferry kernel uses it; add it to test/cudasim first)");
  dim3 grid = g, block = b;
  enqueue(config.stream, "kernel",
          [grid, block, name, body = std::move(body)] {
            runGrid(grid, block, body, name);
          });
  return cudaSuccess;
}

int nvtxRangePushA(const char *) { return device().nvtxDepth++; }
int nvtxRangePop() {
  if (device().nvtxDepth == 0)
    fail("nvtxRangePop without a matching nvtxRangePushA");
  return --device().nvtxDepth;
}
