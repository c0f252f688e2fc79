// The one launch point of ferry's CUDA kernels. Every kernel in
// runtime/cuda/ is launched through launch() (grid, block, dynamic shared
// memory, stream, arguments), which checks the launch's own return value:
// a failed launch throws naming the kernel and the CUDA error, and never
// leaves a stale error for the next launch to be blamed for.
//
// Compiled by nvcc this is cudaLaunchKernelEx, the launch `<<<...>>>` makes.
// Compiled against ferry's CUDA simulator (test/cudasim, FERRY_CUDA_SIM) the
// same call queues the grid on the simulated stream, which runs it on the
// CPU; the kernel's name goes with it into the simulator's diagnostics.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ferry::cuda {

// Host-side launches since the process started: every kernel launch()
// makes, every cuBLAS/cuBLASLt GEMM call, every asynchronous copy and set
// (what `ferry train --profile` reports per program run; CUDA-graph replay
// is what brings it down).
inline uint64_t &launchCount() {
  static uint64_t count = 0;
  return count;
}
inline cudaError_t memsetAsync(void *p, int value, size_t bytes,
                               cudaStream_t s) {
  ++launchCount();
  return cudaMemsetAsync(p, value, bytes, s);
}
inline cudaError_t memcpyAsync(void *dst, const void *src, size_t bytes,
                               cudaMemcpyKind kind, cudaStream_t s) {
  ++launchCount();
  return cudaMemcpyAsync(dst, src, bytes, kind, s);
}

// Empty grids are not launches: CUDA rejects a zero dimension, so callers
// return early on empty sizes, and this says so loudly when one does not.
template <typename... Params, typename... Args>
void launch(const char *what, void (*kernel)(Params...), dim3 grid, dim3 block,
            size_t sharedBytes, cudaStream_t stream, Args... args) {
  if (uint64_t(grid.x) * grid.y * grid.z == 0 ||
      uint64_t(block.x) * block.y * block.z == 0)
    throw std::logic_error(std::string("CUDA kernel ") + what +
                           " launched with an empty grid or block");
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = sharedBytes;
  config.stream = stream;
#ifdef FERRY_CUDA_SIM
  cudaSimNameNextLaunch(what);
#endif
  ++launchCount();
  cudaError_t e =
      cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
  if (e != cudaSuccess) {
    (void)cudaGetLastError(); // the error is this launch's: reported here
    throw std::runtime_error(std::string("CUDA kernel ") + what +
                             " failed to launch: " + cudaGetErrorString(e));
  }
}

// A grid dimension from a 64-bit count, checked against the hardware limit
// of that dimension (x: 2^31 - 1, y and z: 65535).
inline unsigned gridDimension(int64_t count, int64_t limit, const char *what) {
  if (count < 1 || count > limit)
    throw std::runtime_error(std::string("CUDA kernel ") + what +
                             ": a grid dimension of " + std::to_string(count) +
                             " is outside [1, " + std::to_string(limit) + "]");
  return static_cast<unsigned>(count);
}
constexpr int64_t kMaxGridX = 2147483647, kMaxGridYZ = 65535;

} // namespace ferry::cuda
