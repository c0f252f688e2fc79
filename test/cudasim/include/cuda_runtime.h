// ferry's CUDA simulator: the CUDA runtime API that ferry calls, executed on
// the CPU (test/cudasim/Runtime.cpp). Test-only: never linked into `ferry`.
// Signatures and error codes follow NVIDIA's CUDA Runtime API reference;
// every call sets or leaves the thread's last error as it documents (an
// error return is recorded, cudaGetLastError returns and clears it).
#pragma once

#include "cudasim/Device.h"

#include <cstddef>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUmemPoolHandle_st *cudaMemPool_t;
typedef struct CUgraph_st *cudaGraph_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;
typedef struct CUgraphNode_st *cudaGraphNode_t;

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorNotReady = 600,
  cudaErrorLaunchFailure = 719,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureMerge = 902,
  cudaErrorStreamCaptureUnmatched = 903,
  cudaErrorStreamCaptureUnjoined = 904,
  cudaErrorStreamCaptureIsolation = 905,
  cudaErrorStreamCaptureImplicit = 906,
  cudaErrorCapturedEvent = 907,
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaMemPoolAttr {
  cudaMemPoolReuseFollowEventDependencies = 1,
  cudaMemPoolReuseAllowOpportunistic = 2,
  cudaMemPoolReuseAllowInternalDependencies = 3,
  cudaMemPoolAttrReleaseThreshold = 4,
};

enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2,
};

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int major, minor;
  int multiProcessorCount;
};

struct cudaLaunchAttribute;
struct cudaLaunchConfig_t {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute *attrs;
  unsigned int numAttrs;
};

const char *cudaGetErrorString(cudaError_t error);
const char *cudaGetErrorName(cudaError_t error);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int device);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr,
                                    void *value);

cudaError_t cudaMalloc(void **pointer, size_t bytes);
cudaError_t cudaFree(void *pointer);
cudaError_t cudaHostAlloc(void **pointer, size_t bytes, unsigned int flags);
cudaError_t cudaMallocHost(void **pointer, size_t bytes);
cudaError_t cudaFreeHost(void *pointer);
cudaError_t cudaMallocAsync(void **pointer, size_t bytes, cudaStream_t stream);
cudaError_t cudaFreeAsync(void *pointer, cudaStream_t stream);

// The typed overloads cuda_runtime.h offers C++ callers.
template <typename T> cudaError_t cudaMalloc(T **pointer, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void **>(pointer), bytes);
}
template <typename T>
cudaError_t cudaHostAlloc(T **pointer, size_t bytes, unsigned int flags) {
  return cudaHostAlloc(reinterpret_cast<void **>(pointer), bytes, flags);
}
template <typename T>
cudaError_t cudaMallocAsync(T **pointer, size_t bytes, cudaStream_t stream) {
  return cudaMallocAsync(reinterpret_cast<void **>(pointer), bytes, stream);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                       cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t stream = 0);
cudaError_t cudaMemset(void *pointer, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *pointer, int value, size_t bytes,
                            cudaStream_t stream = 0);

cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                unsigned int flags = 0);

cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

// Stream capture and graphs (test/cudasim/Graph.cpp): the work a stream
// (and the streams it forks through events) queues between begin and end
// becomes a graph, which an executable graph replays on a stream. Only
// what ferry captures is simulated: kernels, copies, sets, events between
// captured streams (cudaStreamCaptureModeGlobal semantics: a synchronising
// or allocating call during a capture is an error).
cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                   cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                  cudaStreamCaptureStatus *status);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes,
                              size_t *count);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

// Copies to and from a __device__ variable (synchronous, on the legacy
// default stream, as documented).
cudaError_t cudaSimCopySymbol(void *dst, const void *src, size_t bytes,
                              bool toDevice);
template <typename T>
cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t bytes,
                                 size_t offset = 0,
                                 cudaMemcpyKind = cudaMemcpyDeviceToHost) {
  if (offset + bytes > sizeof(T))
    return cudaSimCopySymbol(nullptr, nullptr, ~size_t(0), false);
  return cudaSimCopySymbol(
      dst, reinterpret_cast<const char *>(&symbol) + offset, bytes, false);
}
template <typename T>
cudaError_t cudaMemcpyToSymbol(const T &symbol, const void *src, size_t bytes,
                               size_t offset = 0,
                               cudaMemcpyKind = cudaMemcpyHostToDevice) {
  if (offset + bytes > sizeof(T))
    return cudaSimCopySymbol(nullptr, nullptr, ~size_t(0), true);
  return cudaSimCopySymbol(
      const_cast<char *>(reinterpret_cast<const char *>(&symbol)) + offset, src,
      bytes, true);
}

// Kernel launches: the grid is checked against the hardware's limits now
// (an invalid configuration is returned, as the runtime does) and queued on
// the stream; it runs when the simulated device reaches it.
cudaError_t cudaSimLaunch(const cudaLaunchConfig_t &config,
                          const std::vector<const void *> &pointers,
                          std::function<void()> body);
template <typename T>
void cudaSimNotePointer(std::vector<const void *> &pointers, const T &value) {
  if constexpr (std::is_pointer_v<T>)
    pointers.push_back(static_cast<const void *>(value));
}
// ferry's launch point names the next launch for the simulator's messages.
void cudaSimNameNextLaunch(const char *name);
// Test hooks: with `on`, every kernel launch on a capturing stream returns
// cudaErrorStreamCaptureUnsupported (a capture that fails part-way); and
// how many captures have ended with a forked stream not joined back
// (cudaErrorStreamCaptureUnjoined).
void cudaSimFailCapturedLaunches(bool on);
int cudaSimUnjoinedCaptureEnds();
// The race checker (test/cudasim/Race.h): whether it checks the kernels
// that ran (they are instrumented, and FERRY_CUDA_SIM_RACECHECK is not 0),
// and turning it off and on again (a test of what the checks would hide).
bool cudaSimRaceChecksEnabled();
void cudaSimSetRaceChecks(bool on);

template <typename... Params, typename... Args>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t *config,
                               void (*kernel)(Params...), Args &&...args) {
  std::tuple<std::decay_t<Params>...> bound(std::forward<Args>(args)...);
  std::vector<const void *> pointers;
  std::apply(
      [&](const auto &...value) { (cudaSimNotePointer(pointers, value), ...); },
      bound);
  return cudaSimLaunch(*config, pointers,
                       [kernel, bound]() { std::apply(kernel, bound); });
}
