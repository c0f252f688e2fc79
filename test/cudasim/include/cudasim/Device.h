// ferry's CUDA simulator, device side: what a .cu file's kernels use
// (qualifiers, thread and block indices, __syncthreads, warp shuffles,
// atomics, device math), so that ferry's CUDA sources compile unchanged
// with the host C++ compiler. Test-only: never linked into `ferry`.
//
// Each simulated thread of a block is a fiber (test/cudasim/Grid.cpp);
// threadIdx and friends hold the running fiber's values. `__shared__` variables
// are `static thread_local`: one copy per OS thread, and the blocks of a grid
// run one after another on one OS thread, so each block has its own use of
// them (as on the GPU, their contents are undefined when a block starts).
// Static shared memory's 48 KiB limit is enforced by ptxas when nvcc builds
// the same sources; dynamic shared memory is checked against its limit at
// launch and otherwise refused (no ferry kernel uses it).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <math.h>
#include <type_traits>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static thread_local
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

// The 128-bit vector type the kernels load and store (CUDA's
// vector_types.h): 16-byte aligned, so a misaligned float4 access is an
// ASan/UBSan error here as it is a fault on the GPU.
struct __attribute__((aligned(16))) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) {
  return float4{x, y, z, w};
}

namespace cudasim {

// A block-wide barrier: every thread of the block must reach the same one.
void syncThreads(const char *file, int line);

// A warp shuffle among the lanes of `mask`: every lane in the mask must
// call it (with the same mask) before any gets its value. Returns the bits
// of the source lane's value.
// kWarpWhole: a barrier of the whole warp that every lane must reach, an
// exited lane included (the warp matrix functions).
enum ShuffleKind { kShflXor, kShflDown, kShflUp, kShflIdx, kWarpWhole };
uint64_t shuffle(unsigned mask, uint64_t bits, ShuffleKind kind, int operand,
                 int width, const char *file, int line);

} // namespace cudasim

// The running simulated thread's indices, as CUDA's built-in variables: the
// block scheduler sets them before it resumes each thread's fiber (fibers
// switch only through it).
extern thread_local uint3 threadIdx, blockIdx;
extern thread_local dim3 blockDim, gridDim;
constexpr int warpSize = 32;

// Callers' locations come from __builtin_FILE/__builtin_LINE (GCC, Clang),
// so the simulator's diagnostics name the kernel's line.
inline void __syncthreads(const char *file = __builtin_FILE(),
                          int line = __builtin_LINE()) {
  ::cudasim::syncThreads(file, line);
}

namespace cudasim {
template <typename T>
T shuffleValue(unsigned mask, T value, ShuffleKind kind, int operand, int width,
               const char *file, int line) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                "warp shuffles move values of at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = shuffle(mask, bits, kind, operand, width, file, line);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}
} // namespace cudasim

template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int laneMask, int width = 32,
                  const char *file = __builtin_FILE(),
                  int line = __builtin_LINE()) {
  return ::cudasim::shuffleValue(mask, value, ::cudasim::kShflXor, laneMask,
                                 width, file, line);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32,
                   const char *file = __builtin_FILE(),
                   int line = __builtin_LINE()) {
  return ::cudasim::shuffleValue(mask, value, ::cudasim::kShflDown,
                                 static_cast<int>(delta), width, file, line);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32,
                 const char *file = __builtin_FILE(),
                 int line = __builtin_LINE()) {
  return ::cudasim::shuffleValue(mask, value, ::cudasim::kShflUp,
                                 static_cast<int>(delta), width, file, line);
}
template <typename T>
T __shfl_sync(unsigned mask, T value, int lane, int width = 32,
              const char *file = __builtin_FILE(),
              int line = __builtin_LINE()) {
  return ::cudasim::shuffleValue(mask, value, ::cudasim::kShflIdx, lane, width,
                                 file, line);
}

// A warp barrier: every lane of `mask` must reach it (the simulator checks
// that they reach the same one, as it checks shuffles) before any goes on.
inline void __syncwarp(unsigned mask = 0xffffffffu,
                       const char *file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  unsigned lane = (threadIdx.x + threadIdx.y * blockDim.x +
                   threadIdx.z * blockDim.x * blockDim.y) %
                  32;
  ::cudasim::shuffle(mask, 0, ::cudasim::kShflIdx, static_cast<int>(lane), 32,
                     file, line);
}

namespace cudasim {
// The warp matrix functions' convergence rule: all 32 lanes of the warp
// reach this call; a lane that has exited is an error (not an absent lane).
inline void wholeWarp(const char *file, int line) {
  unsigned lane = (threadIdx.x + threadIdx.y * blockDim.x +
                   threadIdx.z * blockDim.x * blockDim.y) %
                  32;
  shuffle(0xffffffffu, 0, kWarpWhole, static_cast<int>(lane), 32, file, line);
}
} // namespace cudasim

// Atomics. A grid's threads run on one OS thread and switch only at
// barriers and shuffles, so a read-modify-write is indivisible: exact.
// Not instrumented for the race checker (Race.h): atomics do not race.
#define CUDASIM_ATOMIC __attribute__((no_sanitize_thread, noinline))
template <typename T> CUDASIM_ATOMIC T atomicAdd(T *address, T value) {
  T old = *address;
  *address = old + value;
  return old;
}
template <typename T> CUDASIM_ATOMIC T atomicOr(T *address, T value) {
  T old = *address;
  *address = old | value;
  return old;
}
template <typename T> CUDASIM_ATOMIC T atomicMax(T *address, T value) {
  T old = *address;
  *address = old < value ? value : old;
  return old;
}

// Device math that the host library lacks. NVIDIA documents the device
// functions by their error bounds in ULPs, not by their bits: the host's
// functions stand in, and the tests' tolerances cover those bounds.
inline float normcdff(float x) {
  return 0.5f * erfcf(-x * 0.70710678118654752f);
}
inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
using std::isfinite;
using std::isinf;
using std::isnan;
